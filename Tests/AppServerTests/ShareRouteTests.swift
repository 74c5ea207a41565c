@testable import AppServer
import CareModel
import FHIRCore
import Foundation
import Hummingbird
import HummingbirdTesting
import Pipeline
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// `POST /carekit/v1/shares`: a report or PDF the patient shares with a member of their care team is
/// queued once as a valid Communication (with its Provenance) to the practitioner the contact came from;
/// every hostile or misdirected share is refused with a typed error and nothing is stored.
final class ShareRouteTests: XCTestCase {
    private static let pdf = Data("%PDF-1.4\n% a PDF the app made\n%%EOF\n".utf8)

    /// The fixture's two patients, each with a care provider from a FHIR Practitioner; patient 1 with a
    /// friend from a RelatedPerson too; a server that prints reports as a fixed PDF.
    private struct Server {
        let fixture: AppServerFixture
        var app: AppServer
        var contacts: [String: UUID] = [:]

        init(_ tested: TestStore, printing: Bool = true) throws {
            fixture = try AppServerFixture(tested)
            var batch = StoreBatch()
            for (patient, contactID, category, source) in [
                ("pat-1", "Practitioner/prac-1", ContactCategory.careProvider, "Practitioner"),
                ("pat-1", "RelatedPerson/friend-1", .friendsAndFamily, "RelatedPerson"),
                ("pat-2", "PractitionerRole/role-2", .careProvider, "PractitionerRole"),
                // A care provider the app made: no FHIR resource to write to.
                ("pat-1", "Contact/nurse-1", .careProvider, nil as String?),
            ] {
                let plan = try XCTUnwrap(try fixture.store.currentCarePlans(patientID: "Patient/\(patient)").first)
                let fhirID = String(contactID.split(separator: "/")[1])
                let contact = Contact(
                    id: contactID, name: PersonName(namePrefix: "Dr.", givenName: "Given", familyName: fhirID), category: category,
                    carePlanUUID: plan.uuid, carePlanID: plan.id,
                    metadata: EntityMetadata(
                        effectiveDate: AppServerFixture.day0, timezone: AppServerFixture.utc,
                        provenance: source.map { Provenance(sourceSystem: "http://fhir.example.org", fhirType: $0, fhirID: fhirID) }))
                batch.add(contact)
                contacts[contactID] = contact.uuid
            }
            // A care-team contact as Patient.yaml's `members:` makes it: made from the Patient, linked to
            // them, naming the practitioner in userInfo.
            var member = Contact(
                id: "Patient/pat-1#careteam-Practitioner-prac-9", name: PersonName(givenName: "Member", familyName: "Nine"), category: .careProvider,
                metadata: EntityMetadata(
                    effectiveDate: AppServerFixture.day0, userInfo: [ShareRoutes.careTeamMemberKey: "Practitioner/prac-9"], timezone: AppServerFixture.utc,
                    provenance: Provenance(sourceSystem: "http://fhir.example.org", fhirType: "Patient", fhirID: "pat-1")))
            var linkage = member.metadata.linkage
            linkage.patientID = "Patient/pat-1"
            member.metadata.linkage = linkage
            batch.add(member)
            contacts[member.id] = member.uuid
            try fixture.store.apply(batch)
            app = AppServer(store: fixture.store, key: fixture.key)
            if printing { app.sharing = ShareSettings(generator: "CareGate test", printPDF: { _ in ShareRouteTests.pdf }) }
        }

        func headers(_ patient: String = "Patient/pat-1") throws -> HTTPFields {
            [.authorization: "Bearer \(try fixture.token(patient))", .contentType: "application/json"]
        }

        func test(_ body: @Sendable @escaping (any TestClientProtocol) async throws -> Void) async throws {
            try await Application(router: app.router()).test(.router, body)
        }

        /// The share entries queued in the outbox.
        func shares() throws -> [OutboxEntry] {
            try fixture.store.dueOutboxEntries(at: .distantFuture, limit: .max).filter { PayloadOutbox.kind(of: $0) == .share }
        }
    }

    private static func body(_ object: [String: Any]) throws -> ByteBuffer {
        ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object))
    }

    /// The resources of a payload entry, by type.
    private static func resources(_ entry: OutboxEntry) throws -> [String: [String: Any]] {
        var wrapped = Data("[".utf8)
        wrapped.append(try XCTUnwrap(entry.payload))
        wrapped.append(Data("]".utf8))
        let entries = try XCTUnwrap(try JSONSerialization.jsonObject(with: wrapped) as? [[String: Any]])
        var found: [String: [String: Any]] = [:]
        for item in entries {
            let resource = try XCTUnwrap(item["resource"] as? [String: Any])
            found[try XCTUnwrap(resource["resourceType"] as? String)] = resource
        }
        return found
    }

    func testAReportShareIsQueuedOnceAsAValidCommunicationToThePractitioner() async throws {
        try await forEachStore { tested in
            let server = try Server(tested)
            let headers = try server.headers()
            let share = try Self.body([
                "contact": try XCTUnwrap(server.contacts["Practitioner/prac-1"]).uuidString,
                "report": ["from": "2025-03-01", "to": "2025-03-07"], "message": "My first week, as we said.",
            ])
            let ids = Collected()
            try await server.test { client in
                try await client.execute(uri: "/carekit/v1/shares", method: .post, headers: headers, body: share) { response in
                    XCTAssertEqual(response.status, .created, response.text)
                    let answer = try XCTUnwrap(response.json as? [String: Any])
                    XCTAssertEqual(answer["recipient"] as? String, "Practitioner/prac-1")
                    XCTAssertEqual(answer["state"] as? String, "pending")
                    XCTAssertEqual(answer["writtenBack"] as? Bool, false)
                    ids.append(answer["id"] as? String)
                }
                // The same share again (a retry after a lost answer): found, not queued again.
                try await client.execute(uri: "/carekit/v1/shares", method: .post, headers: headers, body: share) { response in
                    XCTAssertEqual(response.status, .ok, response.text)
                    ids.append((response.json as? [String: Any])?["id"] as? String)
                }
            }
            XCTAssertEqual(ids.values.count, 2)
            XCTAssertEqual(Set(ids.values).count, 1, "the same id both times")
            let entries = try server.shares()
            XCTAssertEqual(entries.count, 1)
            let entry = try XCTUnwrap(entries.first)
            XCTAssertEqual(entry.entityID, "Communication/\(ids.values[0] ?? "")")
            let resources = try Self.resources(entry)
            let communication = try XCTUnwrap(resources["Communication"])
            XCTAssertEqual(communication["status"] as? String, "completed")
            XCTAssertEqual((communication["recipient"] as? [[String: Any]])?.first?["reference"] as? String, "Practitioner/prac-1")
            XCTAssertEqual((communication["subject"] as? [String: Any])?["reference"] as? String, "Patient/pat-1")
            XCTAssertEqual((communication["sender"] as? [String: Any])?["reference"] as? String, "Patient/pat-1")
            XCTAssertNotNil(communication["sent"] as? String)
            let category = (communication["category"] as? [[String: Any]])?.first?["coding"] as? [[String: Any]]
            XCTAssertEqual(category?.first?["system"] as? String, "http://terminology.hl7.org/CodeSystem/communication-category")
            XCTAssertEqual(category?.first?["code"] as? String, "notification")
            let payload = try XCTUnwrap(communication["payload"] as? [[String: Any]])
            XCTAssertEqual(payload.first?["contentString"] as? String, "My first week, as we said.")
            let attachment = try XCTUnwrap(payload.last?["contentAttachment"] as? [String: Any])
            XCTAssertEqual(attachment["contentType"] as? String, "application/pdf")
            XCTAssertEqual(attachment["data"] as? String, Self.pdf.base64EncodedString())
            XCTAssertEqual(attachment["size"] as? Int, Self.pdf.count)
            XCTAssertNotNil(attachment["hash"] as? String)
            XCTAssertEqual(attachment["title"] as? String, "Care-team report 2025-03-01 to 2025-03-07")
            let identifier = (communication["identifier"] as? [[String: Any]])?.first
            XCTAssertEqual(identifier?["system"] as? String, ShareCommunication.identifierSystem)
            XCTAssertEqual(identifier?["value"] as? String, ids.values[0])
            let provenance = try XCTUnwrap(resources["Provenance"])
            XCTAssertEqual(((provenance["agent"] as? [[String: Any]])?.first?["who"] as? [String: Any])?["reference"] as? String, "Patient/pat-1")
            // What the outbox sends is valid FHIR as `caregate validate` checks it (PayloadOutbox checked it when queued; again here).
            XCTAssertNoThrow(try PayloadOutbox.entry(.share, id: entry.entityID, uuid: entry.entityUUID, entries: Self.elements(entry), now: Date()))
        }
    }

    func testACareTeamMemberOfThePatientsRecordIsSharedWithThePractitionerItNames() async throws {
        try await forEachStore { tested in
            let server = try Server(tested)
            let headers = try server.headers()
            let share = try Self.body([
                "contact": try XCTUnwrap(server.contacts["Patient/pat-1#careteam-Practitioner-prac-9"]).uuidString, "document": Self.pdf.base64EncodedString(),
            ])
            try await server.test { client in
                try await client.execute(uri: "/carekit/v1/shares", method: .post, headers: headers, body: share) { response in
                    XCTAssertEqual(response.status, .created, response.text)
                    XCTAssertEqual((response.json as? [String: Any])?["recipient"] as? String, "Practitioner/prac-9")
                }
            }
            let communication = try XCTUnwrap(try Self.resources(try XCTUnwrap(try server.shares().first))["Communication"])
            XCTAssertEqual((communication["recipient"] as? [[String: Any]])?.first?["reference"] as? String, "Practitioner/prac-9")
            XCTAssertEqual((communication["recipient"] as? [[String: Any]])?.first?["display"] as? String, "Member Nine")
        }
    }

    func testTheSameShareSubmittedByFourRequestsAtOnceIsQueuedOnce() async throws {
        try await forEachStore { tested in
            let server = try Server(tested)
            let headers = try server.headers()
            let share = try Self.body(["contact": try XCTUnwrap(server.contacts["Practitioner/prac-1"]).uuidString, "document": Self.pdf.base64EncodedString()])
            let statuses = Collected()
            try await server.test { client in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 {
                        group.addTask {
                            try await client.execute(uri: "/carekit/v1/shares", method: .post, headers: headers, body: share) { response in
                                statuses.append(String(response.status.code))
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            XCTAssertEqual(statuses.values.compactMap { $0 }.sorted(), ["200", "200", "200", "201"])
            XCTAssertEqual(try server.shares().count, 1)
        }
    }

    /// The largest PDF a share takes is held a bounded number of times while it is read, checked,
    /// validated as FHIR and queued (its base64 body, the bytes, the Communication, the payload).
    func testAShareOfTheLargestPDFHoldsABoundedAmountOfMemory() async throws {
        try await forEachStore { tested in
            let server = try Server(tested)
            let headers = try server.headers()
            var pdf = Self.pdf
            pdf.append(Data(repeating: UInt8(ascii: "x"), count: ShareRequest.maximumDocumentBytes - pdf.count))
            let share = try Self.body(["contact": try XCTUnwrap(server.contacts["Practitioner/prac-1"]).uuidString, "document": pdf.base64EncodedString()])
            pdf = Data()
            guard PeakMemory.resetPeak(), let before = PeakMemory.residentBytes else { throw XCTSkip("no /proc/self/clear_refs here") }
            try await server.test { client in
                try await client.execute(uri: "/carekit/v1/shares", method: .post, headers: headers, body: share) { response in
                    XCTAssertEqual(response.status, .created, response.text)
                }
            }
            let peak = try XCTUnwrap(PeakMemory.peakBytes) - before
            print("a \(ShareRequest.maximumDocumentBytes)-byte PDF share: peak resident memory +\(peak >> 20) MiB")
            XCTAssertLessThan(peak, 120 << 20, "the share of a 4 MiB PDF held \(peak >> 20) MiB")
            XCTAssertEqual(try server.shares().count, 1)
        }
    }

    func testADocumentShareCarriesTheAppsPDFAndAnotherMessageIsAnotherShare() async throws {
        try await forEachStore { tested in
            let server = try Server(tested)
            let headers = try server.headers()
            let contact = try XCTUnwrap(server.contacts["Practitioner/prac-1"]).uuidString
            try await server.test { client in
                for message in ["Here is my diary.", "And again, with another word."] {
                    let share = try Self.body(["contact": contact, "document": Self.pdf.base64EncodedString(), "message": message])
                    try await client.execute(uri: "/carekit/v1/shares", method: .post, headers: headers, body: share) { response in
                        XCTAssertEqual(response.status, .created, response.text)
                    }
                }
            }
            let entries = try server.shares()
            XCTAssertEqual(entries.count, 2)
            for entry in entries {
                let attachment = ((try Self.resources(entry)["Communication"]?["payload"] as? [[String: Any]])?.last?["contentAttachment"]) as? [String: Any]
                XCTAssertEqual(attachment?["data"] as? String, Self.pdf.base64EncodedString())
            }
        }
    }

    func testWithoutAPrinterAReportIsSharedAsHTML() async throws {
        try await forEachStore { tested in
            let server = try Server(tested, printing: false)
            let headers = try server.headers()
            let share = try Self.body(["contact": try XCTUnwrap(server.contacts["Practitioner/prac-1"]).uuidString, "report": ["from": "2025-03-01", "to": "2025-03-01"]])
            try await server.test { client in
                try await client.execute(uri: "/carekit/v1/shares", method: .post, headers: headers, body: share) { response in
                    XCTAssertEqual(response.status, .created, response.text)
                }
            }
            let communication = try XCTUnwrap(try Self.resources(try XCTUnwrap(try server.shares().first))["Communication"])
            let payload = try XCTUnwrap(communication["payload"] as? [[String: Any]])
            XCTAssertEqual(payload.count, 1, "no message, no contentString")
            XCTAssertEqual((payload.first?["contentAttachment"] as? [String: Any])?["contentType"] as? String, "text/html; charset=utf-8")
        }
    }

    func testHostileAndMisdirectedSharesAreRefusedWithTypedErrorsAndNothingIsStored() async throws {
        try await forEachStore { tested in
            let server = try Server(tested)
            let headers = try server.headers()
            let doctor = try XCTUnwrap(server.contacts["Practitioner/prac-1"]).uuidString
            let friend = try XCTUnwrap(server.contacts["RelatedPerson/friend-1"]).uuidString
            let otherPatients = try XCTUnwrap(server.contacts["PractitionerRole/role-2"]).uuidString
            let noSource = try XCTUnwrap(server.contacts["Contact/nurse-1"]).uuidString
            let uncategorized = try XCTUnwrap(try server.fixture.store.contacts(.current).first { $0.id == "Contact/doc-pat-1" }).uuid.uuidString
            let week: [String: Any] = ["from": "2025-03-01", "to": "2025-03-07"]
            let secret = "SECRET-MESSAGE-TEXT"
            let cases: [(String, ByteBuffer, HTTPResponse.Status, String)] = [
                ("another patient's contact", try Self.body(["contact": otherPatients, "report": week]), .notFound, "not-found"),
                ("no such contact", try Self.body(["contact": UUID().uuidString, "report": week]), .notFound, "not-found"),
                ("a friend", try Self.body(["contact": friend, "report": week, "message": secret]), .unprocessableContent, "not-care-team"),
                ("a contact of no category", try Self.body(["contact": uncategorized, "report": week]), .unprocessableContent, "not-care-team"),
                ("a contact from no practitioner", try Self.body(["contact": noSource, "report": week]), .unprocessableContent, "no-recipient"),
                ("not a date", try Self.body(["contact": doctor, "report": ["from": "2025-02-30", "to": "2025-03-07"]]), .unprocessableContent, "bad-period"),
                ("to before from", try Self.body(["contact": doctor, "report": ["from": "2025-03-07", "to": "2025-03-01"]]), .unprocessableContent, "bad-period"),
                ("too long a period", try Self.body(["contact": doctor, "report": ["from": "2023-01-01", "to": "2025-03-07"]]), .unprocessableContent, "bad-period"),
                ("past the horizon", try Self.body(["contact": doctor, "report": ["from": "9999-12-01", "to": "9999-12-31"]]), .unprocessableContent, "bad-period"),
                ("not a PDF", try Self.body(["contact": doctor, "document": Data("<html>\(secret)</html>".utf8).base64EncodedString()]), .unprocessableContent, "not-a-pdf"),
                ("a PDF too large", try Self.body(["contact": doctor, "document": (Self.pdf + Data(count: ShareRequest.maximumDocumentBytes)).base64EncodedString()]),
                 .contentTooLarge, "document-too-large"),
                ("not base64", try Self.body(["contact": doctor, "document": "%PDF-not base64!"]), .badRequest, "bad-request"),
                ("a message too long", try Self.body(["contact": doctor, "report": week, "message": String(repeating: "é", count: 4_001)]),
                 .unprocessableContent, "message-too-long"),
                ("a control character", try Self.body(["contact": doctor, "report": week, "message": "\(secret)\u{7}"]), .unprocessableContent, "bad-message"),
                ("a message not text", try Self.body(["contact": doctor, "report": week, "message": 42]), .badRequest, "bad-request"),
                ("both report and document", try Self.body(["contact": doctor, "report": week, "document": Self.pdf.base64EncodedString()]), .badRequest, "bad-request"),
                ("neither", try Self.body(["contact": doctor, "message": "hello"]), .badRequest, "bad-request"),
                ("an unknown key", try Self.body(["contact": doctor, "report": week, "subject": "Patient/pat-2"]), .badRequest, "bad-request"),
                ("a report with an extra key", try Self.body(["contact": doctor, "report": ["from": "2025-03-01", "to": "2025-03-02", "x": 1]]), .badRequest, "bad-request"),
                ("contact not a uuid", try Self.body(["contact": "Practitioner/prac-1", "report": week]), .badRequest, "bad-request"),
                ("not JSON", ByteBuffer(string: "contact=\(doctor)"), .badRequest, "bad-request"),
                ("an array", ByteBuffer(string: "[]"), .badRequest, "bad-request"),
                ("too large a body", ByteBuffer(repeating: UInt8(ascii: " "), count: AppServerLimits.maximumPushBytes + 1), .contentTooLarge, "too-large"),
            ]
            let unauthorized = try Self.body(["contact": doctor, "report": week])
            try await server.test { client in
                for (name, body, status, code) in cases {
                    try await client.execute(uri: "/carekit/v1/shares", method: .post, headers: headers, body: body) { response in
                        XCTAssertEqual(response.status, status, "\(name): \(response.text)")
                        XCTAssertEqual((response.json as? [String: Any])?["error"] as? String, code, name)
                        XCTAssertFalse(response.text.contains(secret), "\(name): the message is echoed")
                        XCTAssertFalse(response.text.contains("role-2"), "\(name): another patient's contact is revealed")
                    }
                }
                // Without a token: 401, nothing read.
                try await client.execute(uri: "/carekit/v1/shares", method: .post, body: unauthorized) { response in
                    XCTAssertEqual(response.status, .unauthorized)
                }
            }
            XCTAssertEqual(try server.shares().count, 0, "nothing was stored")
        }
    }

    /// The transaction entries a payload holds, as elements.
    private static func elements(_ entry: OutboxEntry) throws -> [Element] {
        var bundle = Data(#"{"resourceType":"Bundle","type":"transaction","entry":["#.utf8)
        bundle.append(try XCTUnwrap(entry.payload))
        bundle.append(Data("]}".utf8))
        return try FHIRJSON.read(bundle).children(named: "entry")
    }
}

/// Texts an async test closure collects (ids, statuses).
private final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String?] = []
    var values: [String?] { lock.withLock { stored } }
    func append(_ id: String?) { lock.withLock { stored.append(id) } }
}
