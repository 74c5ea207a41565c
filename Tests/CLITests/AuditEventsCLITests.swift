import Foundation
import Store
import TestSupport
import XCTest

/// `caregate audit --format fhir|ndjson` (issue 48, item 5): the audit trail as FHIR R4 AuditEvents after
/// IHE BALP, valid R4 (`caregate validate`) and carrying each BALP pattern's required elements.
final class AuditEventsCLITests: XCTestCase {
    /// An app pull (a query), a read of the patient, a push (a create), a refused and an unanswered write.
    func testExportedAuditEventsValidateAndFollowBALP() throws {
        let folder = try makeScratchFolder("audit-events")
        let path = folder.appendingPathComponent("s.sqlite").path
        let store = try SQLiteStore(path: path)
        let now = Date()
        try store.recordAudit([
            AuditEntry(date: now.addingTimeInterval(-50), subject: "subj-1", patientID: "pat-1", action: "GET /carekit/v1/revisions", status: 200, detail: "3 revisions"),
            AuditEntry(date: now.addingTimeInterval(-40), subject: "subj-1", patientID: "pat-1", action: "GET /carekit/v1/patient", status: 200, detail: nil),
            AuditEntry(date: now.addingTimeInterval(-30), subject: "subj-1", patientID: "pat-1", action: "POST /carekit/v1/revisions", status: 201, detail: "2 outcomes"),
            AuditEntry(date: now.addingTimeInterval(-20), subject: "subj-1", patientID: "pat-1", action: "POST /carekit/v1/observations", status: 400, detail: "bad_request"),
            AuditEntry(date: now, subject: "subj-1", patientID: "pat-1", action: "POST /carekit/v1/revisions", status: AuditEntry.unansweredStatus, detail: AuditEntry.unansweredDetail),
        ])

        let exported = try exportedAuditEvents(store: path, folder: folder)
        XCTAssertEqual(exported.bundle["type"] as? String, "collection")
        let events = exported.events
        XCTAssertEqual(events.count, 5)
        let byAction = Dictionary(grouping: events) { event in
            ((event["entity"] as? [[String: Any]]) ?? []).compactMap { $0["description"] as? String }.first ?? ""
        }
        for event in events { try BALPRequirements.check(event) }

        // The pull: PatientQuery with the request line as its query.
        let pull = try XCTUnwrap(byAction["GET /carekit/v1/revisions"]?.first)
        XCTAssertEqual(BALPRequirements.profile(pull), "https://profiles.ihe.net/ITI/BALP/StructureDefinition/IHE.BasicAudit.PatientQuery")
        XCTAssertEqual(pull["action"] as? String, "E")
        XCTAssertEqual(BALPRequirements.subtype(pull), "search-type")
        // The read of the patient: PatientRead.
        let read = try XCTUnwrap(byAction["GET /carekit/v1/patient"]?.first)
        XCTAssertEqual(BALPRequirements.profile(read), "https://profiles.ihe.net/ITI/BALP/StructureDefinition/IHE.BasicAudit.PatientRead")
        XCTAssertEqual(read["action"] as? String, "R")
        // The push: PatientCreate, successful; the unanswered one a serious failure without the claim.
        let pushes = try XCTUnwrap(byAction["POST /carekit/v1/revisions"])
        XCTAssertEqual(Set(pushes.compactMap { $0["outcome"] as? String }), ["0", "8"])
        for push in pushes {
            XCTAssertEqual(push["action"] as? String, "C")
            XCTAssertEqual(BALPRequirements.subtype(push), "create")
            let successful = push["outcome"] as? String == "0"
            XCTAssertEqual(BALPRequirements.profile(push), successful ? "https://profiles.ihe.net/ITI/BALP/StructureDefinition/IHE.BasicAudit.PatientCreate" : nil)
        }
        let refused = try XCTUnwrap(byAction["POST /carekit/v1/observations"]?.first)
        XCTAssertEqual(refused["outcome"] as? String, "4")
        XCTAssertEqual(refused["outcomeDesc"] as? String, "bad_request")

        // Deterministic ids: a second export gives the same; NDJSON holds the same events.
        let again = try CLIRunner.run(["audit", "--store", path, "--format", "fhir"])
        let ids: (String) throws -> [String] = { text in
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            return (object["entry"] as? [[String: Any]] ?? []).compactMap { ($0["resource"] as? [String: Any])?["id"] as? String }
        }
        XCTAssertEqual(try ids(again.stdout), try ids(exported.text))
        let ndjson = try CLIRunner.run(["audit", "--store", path, "--format", "ndjson"])
        XCTAssertEqual(ndjson.status, 0, ndjson.stderr)
        let lines = ndjson.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 5)
        let ndjsonFile = folder.appendingPathComponent("audit-events.ndjson")
        try Data(ndjson.stdout.utf8).write(to: ndjsonFile)
        let validatedLines = try CLIRunner.run(["validate", ndjsonFile.path])
        XCTAssertEqual(validatedLines.status, 0, validatedLines.stdout + validatedLines.stderr)

        XCTAssertEqual(try CLIRunner.run(["audit", "--store", path, "--stats", "--format", "fhir"]).status, 2)
    }
}
