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

/// A RelatedPerson is someone of one patient (`RelatedPerson.patient`, 1..1) and belongs to no care plan:
/// the default mapping names that patient in its contact's linkage, so the contact reaches that patient's
/// devices (the pull and `/carekit/v1/contacts`), and no other patient's.
final class RelatedPersonContactTests: XCTestCase {
    func testARelatedPersonReachesItsPatientsDevicesOnly() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            let folder = try makeScratchFolder("related-person")
            let input = folder.appendingPathComponent("input.json")
            try Data(#"""
                {"resourceType": "Bundle", "type": "collection", "entry": [
                  {"fullUrl": "urn:uuid:p-a", "resource": {"resourceType": "Patient", "id": "pat-a", "name": [{"family": "A"}]}},
                  {"fullUrl": "urn:uuid:p-b", "resource": {"resourceType": "Patient", "id": "pat-b", "name": [{"family": "B"}]}},
                  {"resource": {"resourceType": "RelatedPerson", "id": "rp-1", "patient": {"reference": "Patient/pat-a"},
                    "relationship": [{"text": "daughter"}], "name": [{"given": ["Rita"], "family": "A"}],
                    "telecom": [{"system": "phone", "value": "+1 555 0100"}]}}
                ]}
                """#.utf8).write(to: input)
            let path = try XCTUnwrap(tested.location)
            let imported = try CLIRunner.run(["import", "--store", path, "--time-zone", "UTC", input.path])
            XCTAssertEqual(imported.status, 0, imported.stderr)
            let store = try tested.reopen()
            let contact = try XCTUnwrap(try store.contacts(.current).first)
            XCTAssertNil(contact.carePlanID)
            XCTAssertEqual(contact.metadata.linkage.patientID, "Patient/pat-a")

            // The CareKit dump files it as the pull does: in pat-a's object, not with what belongs to no patient.
            let dump = try CLIRunner.run(["store", "dump", "--store", path, "--format", "carekit-json"])
            XCTAssertEqual(dump.status, 0, dump.stderr)
            let objects = dump.stdout.split(separator: "\n").map { line in (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:] }
            let holder = objects.first { (($0["contacts"] as? [[String: Any]]) ?? []).contains { $0["id"] as? String == contact.id } }
            XCTAssertEqual(((holder?["patients"] as? [[String: Any]])?.first?["id"]) as? String, "Patient/pat-a")

            let key = ServerKey(privateKey: P256.Signing.PrivateKey())
            let server = AppServer(store: store, key: key)
            try await Application(router: server.router()).test(.router) { client in
                for (patient, sees) in [("Patient/pat-a", true), ("Patient/pat-b", false)] {
                    let headers: HTTPFields = [.authorization: "Bearer " + (try PatientToken.issue(patientID: patient, key: key, lifetime: 600))]
                    let vector = String(decoding: try CareKitJSON.makeEncoder().encode(KnowledgeVector()), as: UTF8.self)
                    var components = URLComponents()
                    components.queryItems = [URLQueryItem(name: "knowledgeVector", value: vector)]
                    let pull = try await client.execute(uri: "/carekit/v1/revisions?" + (components.percentEncodedQuery ?? ""), method: .get, headers: headers, body: nil)
                    XCTAssertEqual(pull.status, .ok)
                    let records = try CareKitJSON.makeDecoder().decode([CareKitRevisionRecord].self, from: Data(buffer: pull.body))
                    let pulledContacts = records.flatMap(\.entities).map(\.entity).filter { $0.kind == .contact }.map(\.metadata.uuid)
                    XCTAssertEqual(pulledContacts, sees ? [contact.uuid] : [], patient)

                    let view = try await client.execute(uri: "/carekit/v1/contacts", method: .get, headers: headers, body: nil)
                    XCTAssertEqual(view.status, .ok)
                    XCTAssertEqual(String(buffer: view.body).contains("Rita"), sees, patient)
                }
            }
        }
    }

    /// Whose contact it is is decided by the id's bytes, as the store decides it: of two patients whose ids
    /// are canonically equivalent text ("café" as one code point, or as "e" and a combining accent), each
    /// app sees its own patient's contact only, though Swift's `==` calls the two ids equal.
    func testAContactOfAnEquivalentIDReachesItsOwnPatientOnly() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            let store = tested.store
            let (composed, decomposed) = ("Patient/caf\u{E9}", "Patient/cafe\u{301}")
            let start = Date(timeIntervalSince1970: 1_767_225_600)
            var batch = StoreBatch()
            for (id, family) in [(composed, "Composed"), (decomposed, "Decomposed")] {
                batch.add(Patient(id: id, name: PersonName(givenName: "Ada", familyName: family), metadata: EntityMetadata(effectiveDate: start)))
                var contact = Contact(id: "rp-\(family)", name: PersonName(givenName: "Rita", familyName: family), metadata: EntityMetadata(effectiveDate: start))
                contact.metadata.linkage.patientID = id
                batch.add(contact)
            }
            try store.apply(batch)

            let (key, kind) = (ServerKey(privateKey: P256.Signing.PrivateKey()), tested.kind)
            try await Application(router: AppServer(store: store, key: key).router()).test(.router) { client in
                for (patient, own, other) in [(composed, "Composed", "Decomposed"), (decomposed, "Decomposed", "Composed")] {
                    let headers: HTTPFields = [.authorization: "Bearer " + (try PatientToken.issue(patientID: patient, key: key, lifetime: 600))]
                    let view = try await client.execute(uri: "/carekit/v1/contacts", method: .get, headers: headers, body: nil)
                    XCTAssertEqual(view.status, .ok, "\(kind)")
                    let body = String(buffer: view.body)
                    XCTAssertTrue(body.contains("rp-\(own)"), "\(kind): \(own) sees its contact")
                    XCTAssertFalse(body.contains("rp-\(other)"), "\(kind): \(own) sees \(other)'s contact")
                }
            }

            // The command line lists, and the CareKit dump files, each contact under its own patient too.
            let path = try XCTUnwrap(tested.location)
            for (patient, own, other) in [(composed, "Composed", "Decomposed"), (decomposed, "Decomposed", "Composed")] {
                let listed = try CLIRunner.run(["patients", "contacts", "--store", path, "--patient", patient, "--format", "json"])
                XCTAssertEqual(listed.status, 0, listed.stderr)
                XCTAssertTrue(listed.stdout.contains("rp-\(own)"), "\(kind): \(listed.stdout)")
                XCTAssertFalse(listed.stdout.contains("rp-\(other)"), "\(kind): \(listed.stdout)")
            }
            let dump = try CLIRunner.run(["store", "dump", "--store", path, "--format", "carekit-json"])
            XCTAssertEqual(dump.status, 0, dump.stderr)
            let objects = dump.stdout.split(separator: "\n").map { line in (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:] }
            for (patient, own) in [(composed, "rp-Composed"), (decomposed, "rp-Decomposed")] {
                let holder = objects.first { ((($0["patients"] as? [[String: Any]])?.first?["id"]) as? String)?.utf8.elementsEqual(patient.utf8) == true }
                let contacts = ((holder?["contacts"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
                XCTAssertEqual(contacts, [own], "\(kind): the dump files \(Array(patient.unicodeScalars))'s contacts")
            }
        }
    }
}
