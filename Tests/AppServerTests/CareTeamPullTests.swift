import AppServer
import CareModel
@preconcurrency import Crypto
import FHIR
import Foundation
import Hummingbird
import HummingbirdTesting
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// The 37 Synthea patients of the shared corpus, imported by `caregate import`: in Synthea the
/// practitioners appear only as the participants of the patient's Encounters. Each patient's pull, decoded
/// with CareKit 4.0's own shapes (TestSupport/CareKitMirrors.swift), holds the practitioners of their
/// recent Encounters (two years back from their latest, the shipped window) as careProvider contacts, one
/// per practitioner, with the encounter reason and their last visit, and `/carekit/v1/contacts` lists the
/// same; no other patient's pull holds them (SyntheaIsolationTests checks every entity for that).
final class CareTeamPullTests: XCTestCase {
    /// What the raw records say each patient's encounter practitioners are (Practitioner ids), and which
    /// of those practitioners have a phone or email.
    private func expectedTeams(in corpus: URL) throws -> (teams: [String: Set<String>], reachable: Set<String>) {
        var teams: [String: Set<String>] = [:]
        var reachable: Set<String> = []
        let files = try FileManager.default.contentsOfDirectory(at: corpus, includingPropertiesForKeys: nil).filter { $0.pathExtension == "json" }
        for file in files {
            let bundle = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
            let entries = (bundle["entry"] as? [[String: Any]]) ?? []
            var idOf: [String: String] = [:]
            var patientID: String?
            var visits: [(practitioners: [String], seen: Date)] = []
            for entry in entries {
                guard let resource = entry["resource"] as? [String: Any], let type = resource["resourceType"] as? String,
                      let id = resource["id"] as? String else { continue }
                if let fullUrl = entry["fullUrl"] as? String { idOf[fullUrl] = id }
                switch type {
                case "Patient": patientID = id
                case "Practitioner":
                    let telecom = (resource["telecom"] as? [[String: Any]]) ?? []
                    if telecom.contains(where: { ["phone", "email"].contains($0["system"] as? String ?? "") }) { reachable.insert(id) }
                case "Encounter":
                    let period = resource["period"] as? [String: String]
                    guard let text = period?["end"] ?? period?["start"], let seen = FHIRDateText.date(text, in: TimeZone(identifier: "UTC")!) else { continue }
                    let participants = ((resource["participant"] as? [[String: Any]]) ?? []).compactMap { ($0["individual"] as? [String: Any])?["reference"] as? String }
                    visits.append((participants, seen))
                default: break
                }
            }
            guard let patientID, let latest = visits.map(\.seen).max() else { continue }
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let start = try XCTUnwrap(calendar.date(byAdding: .year, value: -2, to: latest))
            teams["Patient/\(patientID)"] = Set(visits.filter { $0.seen >= start }.flatMap(\.practitioners).compactMap { idOf[$0] })
        }
        return (teams, reachable)
    }

    func testEachSyntheaPatientsPullHoldsThePractitionersOfTheirRecentEncounters() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            let corpus = try Corpus.folder("synthea-r4")
            let (teams, reachable) = try expectedTeams(in: corpus)
            XCTAssertEqual(teams.count, 37, "every Synthea patient has Encounters")
            let folder = try makeScratchFolder("care-team-pull")
            let path = try XCTUnwrap(tested.location)
            let imported = try CLIRunner.run(["import", "--store", path, "--time-zone", "UTC", corpus.path])
            XCTAssertEqual(imported.status, 0, imported.stderr)
            let store = try tested.reopen()
            let key = ServerKey(privateKey: P256.Signing.PrivateKey())
            let server = AppServer(store: store, key: key)
            let counts = CountBox()
            try await Application(router: server.router()).test(.router) { client in
                for (patient, expected) in teams.sorted(by: { $0.key < $1.key }) {
                    let headers: HTTPFields = [.authorization: "Bearer " + (try PatientToken.issue(patientID: patient, key: key, lifetime: 600))]
                    let vector = String(decoding: try CareKitJSON.makeEncoder().encode(KnowledgeVector()), as: UTF8.self)
                    var components = URLComponents()
                    components.queryItems = [URLQueryItem(name: "knowledgeVector", value: vector), URLQueryItem(name: "limit", value: "500")]
                    var uri: String? = "/carekit/v1/revisions?" + (components.percentEncodedQuery ?? "")
                    var contacts: [CareKit4Decoded<CareKit4ContactMirror>] = []
                    var pages = 0
                    while let next = uri, pages < 1_000 {
                        let response = try await client.execute(uri: next, method: .get, headers: headers, body: nil)
                        XCTAssertEqual(response.status, .ok, patient)
                        pages += 1
                        // Decoded as CareKit 4.0 decodes OCKRevisionRecord.
                        let records = try CareKitJSON.makeDecoder().decode([CareKit4RevisionRecordMirror].self, from: Data(buffer: response.body))
                        for case .contact(let contact) in records.flatMap(\.entities) { contacts.append(contact) }
                        uri = nextPageURI(response.headers)
                    }
                    var members: [String: CareKit4Decoded<CareKit4ContactMirror>] = [:]
                    for contact in contacts {
                        XCTAssertEqual(contact.own.category, .careProvider, contact.own.id)
                        XCTAssertNil(contact.own.carePlanUUID, "a care team is the patient's, on no plan")
                        XCTAssertTrue(contact.own.id.hasPrefix(patient + "#careteam-"), "\(patient)'s pull holds \(contact.own.id)")
                        let member = try XCTUnwrap(contact.versioned.userInfo?["careTeam.member"], contact.own.id)
                        XCTAssertNil(members[member], "one contact per practitioner: \(member) twice in \(patient)'s pull")
                        members[member] = contact
                    }
                    for practitioner in expected {
                        let contact = try XCTUnwrap(members["Practitioner/\(practitioner)"], "\(patient) misses Practitioner/\(practitioner): \(members.keys.sorted())")
                        let info = contact.versioned.userInfo ?? [:]
                        XCTAssertTrue(info["careTeam.reasons"]?.split(separator: "\n").contains("encounter") ?? false, "\(info)")
                        XCTAssertNotNil(info["careTeam.lastSeen"])
                        XCTAssertFalse(contact.own.name.familyName?.isEmpty ?? true)
                        if reachable.contains(practitioner) {
                            XCTAssertFalse((contact.own.phoneNumbers ?? []).isEmpty && (contact.own.emailAddresses ?? []).isEmpty, "\(practitioner) has a phone or email")
                        }
                    }
                    // The contacts view lists the same contacts.
                    let view = try await client.execute(uri: "/carekit/v1/contacts", method: .get, headers: headers, body: nil)
                    XCTAssertEqual(view.status, .ok)
                    let listed = try CareKitJSON.makeDecoder().decode([CareKit4Decoded<CareKit4ContactMirror>].self, from: Data(buffer: view.body))
                    XCTAssertEqual(Set(listed.map(\.own.id)), Set(contacts.map(\.own.id)), patient)
                    counts.add(patient: patient, contacts: members.count, encounterPractitioners: expected.count)
                }
            }
            print("notice: \(counts.summary)")
        }
    }
}

private final class CountBox: @unchecked Sendable {
    private var byPatient: [String: (contacts: Int, encounter: Int)] = [:]

    func add(patient: String, contacts: Int, encounterPractitioners: Int) { byPatient[patient] = (contacts, encounterPractitioners) }

    var summary: String {
        let histogram = Dictionary(grouping: byPatient.values, by: \.contacts).mapValues(\.count).sorted { $0.key < $1.key }
        return "\(byPatient.count) Synthea patients, \(byPatient.values.map(\.contacts).reduce(0, +)) care-team contacts "
            + "(\(byPatient.values.map(\.encounter).reduce(0, +)) from recent encounters); patients by contact count: "
            + histogram.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
    }
}
