import AppServer
import CareModel
@preconcurrency import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// The 37 Synthea patients of the shared corpus in one store (imported by `caregate import`): each
/// patient's first pull, every page, holds that patient's entities only, by the store's own linkage
/// (care plan -> patient, task and contact -> care plan, outcome -> task), and all of them; together the
/// pulls hold everything the store links to a patient.
final class SyntheaIsolationTests: XCTestCase {
    func testEachSyntheaPatientsFirstPullHoldsExactlyTheirOwnEntities() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            let corpus = try Corpus.folder("synthea-r4")
            let folder = try makeScratchFolder("synthea-isolation")
            let path = try XCTUnwrap(tested.location)
            let imported = try CLIRunner.run(["import", "--store", path, "--time-zone", "UTC", corpus.path])
            XCTAssertEqual(imported.status, 0, imported.stderr)
            let store = try tested.reopen()

            // The store's linkage, version by version: the patient each version belongs to, by the version it
            // links to (CareKit's uuids) or else by the stable id (CareGate's patientID and carePlanID).
            var linkage: [UUID: String] = [:]
            var planOwner: [String: String] = [:]
            var versions: [EntityKind: Set<UUID>] = [:]
            for kind in [EntityKind.patient, .carePlan, .contact, .task, .outcome] {
                try store.forEachVersion(kind) { entity in
                    versions[kind, default: []].insert(entity.metadata.uuid)
                    switch entity {
                    case .patient(let patient):
                        linkage[patient.uuid] = patient.id
                    case .carePlan(let plan):
                        linkage[plan.uuid] = plan.patientUUID.flatMap { linkage[$0] } ?? plan.patientID
                        planOwner[plan.id] = linkage[plan.uuid]
                    case .contact(let contact):
                        // A contact of no care plan: the one patient its linkage names (a RelatedPerson's), if any.
                        linkage[contact.uuid] = contact.carePlanUUID.flatMap { linkage[$0] } ?? contact.carePlanID.flatMap { planOwner[$0] }
                            ?? contact.metadata.linkage.patientID
                    case .task(let task):
                        // A task of no care plan (a medication order, an Observation log): the patient its FHIR
                        // linkage names.
                        linkage[task.uuid] = task.carePlanUUID.flatMap { linkage[$0] } ?? task.carePlanID.flatMap { planOwner[$0] }
                            ?? task.metadata.linkage.patientID
                    case .outcome(let outcome):
                        linkage[outcome.uuid] = linkage[outcome.taskUUID]
                    }
                }
            }
            let owner = linkage.compactMapValues { $0 }, everything = versions
            let patients = Set(owner.values)
            XCTAssertEqual(patients.count, 37)
            XCTAssertGreaterThan(everything[.outcome]?.count ?? 0, 1_000)

            let key = ServerKey(privateKey: P256.Signing.PrivateKey())
            let server = AppServer(store: store, key: key)
            let pulledBox = PulledBox()
            try await Application(router: server.router()).test(.router) { client in
                for patient in patients.sorted() {
                    let headers: HTTPFields = [.authorization: "Bearer " + (try PatientToken.issue(patientID: patient, key: key, lifetime: 600))]
                    let json = String(decoding: try CareKitJSON.makeEncoder().encode(KnowledgeVector()), as: UTF8.self)
                    var components = URLComponents()
                    components.queryItems = [URLQueryItem(name: "knowledgeVector", value: json), URLQueryItem(name: "limit", value: "250")]
                    var uri: String? = "/carekit/v1/revisions?" + (components.percentEncodedQuery ?? "")
                    var pulled: [EntityKind: Set<UUID>] = [:]
                    var pages = 0
                    while let next = uri, pages < 10_000 {
                        let response = try await client.execute(uri: next, method: .get, headers: headers, body: nil)
                        XCTAssertEqual(response.status, .ok, patient)
                        pages += 1
                        let records = try CareKitJSON.makeDecoder().decode([CareKitRevisionRecord].self, from: Data(buffer: response.body))
                        for entity in records.flatMap(\.entities).map(\.entity) {
                            let uuid = entity.metadata.uuid
                            XCTAssertEqual(owner[uuid], patient, "\(patient)'s pull holds a \(entity.kind) of \(owner[uuid] ?? "no patient")")
                            pulled[entity.kind, default: []].insert(uuid)
                        }
                        uri = nextPageURI(response.headers)
                    }
                    // Nothing of the patient's own is missing.
                    for (kind, uuids) in everything {
                        XCTAssertEqual(pulled[kind] ?? [], uuids.filter { owner[$0] == patient }, "\(patient): \(kind)")
                    }
                    pulledBox.add(pulled, pages: pages)
                }
            }
            // Together the pulls hold every version the store links to a patient. What it links to none is in
            // no patient's log (Store/SQLite/RevisionLog.swift): contacts of no care plan and no patient.
            // Synthea's practitioners are each patient's care-team contacts (Docs/care-team.md), so there are
            // none; should a mapping make one, it is counted and printed. Every task and outcome is in its
            // patient's pull.
            var unlinked: [EntityKind: Int] = [:]
            for (kind, uuids) in everything {
                let missing = uuids.subtracting(pulledBox.union[kind] ?? [])
                for uuid in missing {
                    XCTAssertNil(owner[uuid], "\(kind) \(uuid) of \(owner[uuid] ?? "") is in no pull")
                    XCTAssertEqual(kind, .contact, "a \(kind) linked to no patient")
                }
                unlinked[kind] = missing.count
            }
            XCTAssertEqual(Set(owner.keys), pulledBox.union.values.reduce(Set<UUID>()) { $0.union($1) }, "the pulls hold exactly what the store links to a patient")
            print("notice: versions the store links to no patient, so in no pull: \(unlinked.filter { $0.value > 0 }.map { "\($0.value) \($0.key)" }.sorted().joined(separator: ", "))")
            print("37 Synthea patients: \(pulledBox.pages) pages pulled, \(owner.count) of \(everything.values.map(\.count).reduce(0, +)) entity versions each in its patient's pull only")
        }
    }
}

private final class PulledBox: @unchecked Sendable {
    var union: [EntityKind: Set<UUID>] = [:]
    var pages = 0

    func add(_ pulled: [EntityKind: Set<UUID>], pages: Int) {
        union.merge(pulled) { $0.union($1) }
        self.pages += pages
    }
}
