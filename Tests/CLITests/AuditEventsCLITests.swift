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

        let exported = try CLIRunner.run(["audit", "--store", path, "--format", "fhir"])
        XCTAssertEqual(exported.status, 0, exported.stderr)
        let file = folder.appendingPathComponent("audit-events.json")
        try Data(exported.stdout.utf8).write(to: file)
        let validated = try CLIRunner.run(["validate", file.path])
        XCTAssertEqual(validated.status, 0, validated.stdout + validated.stderr)

        let bundle = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(exported.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(bundle["type"] as? String, "collection")
        let events = (bundle["entry"] as? [[String: Any]] ?? []).compactMap { $0["resource"] as? [String: Any] }
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
        XCTAssertEqual(try ids(again.stdout), try ids(exported.stdout))
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

/// BALP's required elements, checked on an AuditEvent's JSON (`caregate validate` checks R4 core only):
/// those of the base patterns (Query, Read, Create, Update, Delete) and of their Patient profiles.
enum BALPRequirements {
    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    static func profile(_ event: [String: Any]) -> String? {
        ((event["meta"] as? [String: Any])?["profile"] as? [String])?.first
    }

    static func subtype(_ event: [String: Any]) -> String? {
        (event["subtype"] as? [[String: Any]])?.first?["code"] as? String
    }

    static func require(_ condition: Bool, _ what: String, _ event: [String: Any]) throws {
        guard condition else { throw Missing(description: "\(what) in \(event["id"] ?? "?")") }
    }

    /// Fails with what is missing.
    static func check(_ event: [String: Any]) throws {
        let type = event["type"] as? [String: Any]
        try require(type?["system"] as? String == "http://terminology.hl7.org/CodeSystem/audit-event-type" && type?["code"] as? String == "rest", "type rest", event)
        let subtypes = event["subtype"] as? [[String: Any]] ?? []
        try require(subtypes.count == 1 && subtypes[0]["system"] as? String == "http://hl7.org/fhir/restful-interaction", "one restful-interaction subtype", event)
        let expectedAction = ["search-type": "E", "read": "R", "create": "C", "update": "U", "delete": "D"][subtype(event) ?? ""]
        try require(expectedAction != nil && event["action"] as? String == expectedAction, "the action of the subtype", event)
        try require(event["recorded"] is String, "recorded", event)
        try require(["0", "4", "8", "12"].contains(event["outcome"] as? String ?? ""), "outcome", event)
        let agents = event["agent"] as? [[String: Any]] ?? []
        let agentCode: ([String: Any]) -> String? = { (($0["type"] as? [String: Any])?["coding"] as? [[String: Any]])?.first?["code"] as? String }
        try require(agents.filter { agentCode($0) == "110153" }.count == 1, "one client agent (DCM 110153)", event)
        try require(agents.filter { agentCode($0) == "110152" }.count == 1, "one server agent (DCM 110152)", event)
        for agent in agents { try require(agent["requestor"] is Bool, "agent.requestor", event) }
        let users = agents.filter { $0["requestor"] as? Bool == true }
        try require(users.count == 1, "one user agent (requestor true)", event)
        let userWho = users.first?["who"] as? [String: Any]
        try require((userWho?["identifier"] as? [String: Any])?["value"] is String && userWho?["display"] == nil, "the user as an identifier, no name", event)
        try require(((event["source"] as? [String: Any])?["observer"] as? [String: Any]) != nil, "source.observer", event)

        let entities = event["entity"] as? [[String: Any]] ?? []
        let slice: ([String: Any]) -> (String?, String?) = {
            (($0["type"] as? [String: Any])?["code"] as? String, ($0["role"] as? [String: Any])?["code"] as? String)
        }
        let patients = entities.filter { slice($0) == ("1", "1") }
        try require(patients.count == 1, "one patient entity (type 1, role 1)", event)
        try require((((patients.first?["what"] as? [String: Any])?["reference"]) as? String)?.hasPrefix("Patient/") == true, "patient entity what Patient/", event)
        if subtype(event) == "search-type" {
            let queries = entities.filter { slice($0) == ("2", "24") }
            try require(queries.count == 1, "one query entity (type 2, role 24)", event)
            let query = queries.first?["query"] as? String ?? ""
            try require(Data(base64Encoded: query) != nil && !query.isEmpty, "query entity's query in base64", event)
        } else {
            let data = entities.filter { slice($0) == ("2", "4") }
            try require(data.count == 1 && data.first?["what"] is [String: Any], "one data entity (type 2, role 4) with what", event)
        }
    }
}
