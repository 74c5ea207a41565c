import CareModel
import FHIR
import Foundation
import Pipeline
import XCTest

/// Outbox entries that carry their own resources: what they hold is validated when queued, counted
/// entry by entry when sent, and names its patient for a consent hold.
final class PayloadOutboxTests: XCTestCase {
    private func communication(subject: String) -> [Element] {
        let resource = Element.resource("Communication", children: [
            Element(name: "id", value: "share-1"),
            Element(name: "status", value: "completed"),
            Element(name: "subject", children: [Element(name: "reference", value: subject)]),
        ])
        return [Element(name: "entry", children: [
            Element(name: "fullUrl", value: "urn:uuid:2f0a6e0e-4a53-4c2e-9d86-6d0d2b7e1a11"),
            Element(name: "resource", resourceType: "Communication", children: resource.children),
            Element(name: "request", children: [Element(name: "method", value: "PUT"), Element(name: "url", value: "Communication/share-1")]),
        ])]
    }

    func testAnEntryNamesItsKindAndPatientAndCountsItsBundleEntries() throws {
        let entry = try PayloadOutbox.entry(.share, id: "Communication/share-1", uuid: UUID(), entries: communication(subject: "Patient/p-7"), now: Date())
        XCTAssertEqual(PayloadOutbox.kind(of: entry), .share)
        XCTAssertTrue(PayloadOutbox.carriesPayload(entry))
        XCTAssertEqual(PayloadOutbox.patientReference(of: entry), "Patient/p-7")
        XCTAssertEqual(PayloadOutbox.entryCount(try XCTUnwrap(entry.payload)), 1)
    }

    func testResourcesThatAreNotValidFHIRAreNotQueued() {
        var entries = communication(subject: "Patient/p-7")
        // A Communication without its required status.
        entries[0].children[1].children.removeAll { $0.name == "status" }
        XCTAssertThrowsError(try PayloadOutbox.entry(.share, id: "Communication/share-1", uuid: UUID(), entries: entries, now: Date())) { error in
            XCTAssertTrue("\(error)".contains("not valid FHIR"), "\(error)")
        }
    }

    func testAnAuditEventNamesItsPatientByItsEntity() throws {
        let event = Element.resource("AuditEvent", children: [
            Element(name: "id", value: "ae-1"),
            Element(name: "type", children: [
                Element(name: "system", value: "http://terminology.hl7.org/CodeSystem/audit-event-type"), Element(name: "code", value: "rest"),
            ]),
            Element(name: "recorded", value: "2026-11-29T12:00:00Z"),
            Element(name: "agent", children: [Element(name: "requestor", value: "true")]),
            Element(name: "source", children: [Element(name: "observer", children: [Element(name: "display", value: "CareGate")])]),
            Element(name: "entity", children: [Element(name: "what", children: [Element(name: "reference", value: "Patient/p-9")])]),
        ])
        let entries = [Element(name: "entry", children: [
            Element(name: "resource", resourceType: "AuditEvent", children: event.children),
            Element(name: "request", children: [Element(name: "method", value: "PUT"), Element(name: "url", value: "AuditEvent/ae-1")]),
        ])]
        let entry = try PayloadOutbox.entry(.audit, id: "AuditEvent/ae-1", uuid: UUID(), entries: entries, now: Date())
        XCTAssertEqual(PayloadOutbox.kind(of: entry), .audit)
        XCTAssertEqual(PayloadOutbox.patientReference(of: entry), "Patient/p-9", "held with the patient's other data until consent")
    }
}
