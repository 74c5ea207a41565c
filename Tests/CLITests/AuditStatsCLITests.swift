import Foundation
import Store
import TestSupport
import XCTest

/// `caregate audit --stats` and `--refusals` (issue 41, item 8): the trail's size and the counted refusals.
final class AuditStatsCLITests: XCTestCase {
    func testStatsAndRefusals() throws {
        let folder = try makeScratchFolder("audit-stats")
        let path = folder.appendingPathComponent("s.sqlite").path
        let store = try SQLiteStore(path: path)
        let now = Date()
        try store.recordAudit([
            AuditEntry(date: now.addingTimeInterval(-3_600), subject: "p", patientID: "p", action: "GET /carekit/v1/tasks", status: 200, detail: "1 tasks"),
            AuditEntry(date: now, subject: "p", patientID: "p", action: "POST /carekit/v1/revisions", status: AuditEntry.unansweredStatus, detail: AuditEntry.unansweredDetail),
        ])
        try store.recordRefusals([
            AuditRefusalCount(minute: AuditRefusalCount.minute(of: now), action: "GET /carekit/v1/tasks", status: 401, reason: "an Authorization: Bearer token is required", count: 4_000),
        ])

        let json = try CLIRunner.run(["audit", "--store", path, "--stats", "--format", "json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let stats = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], json.stdout)
        XCTAssertEqual(stats["entries"] as? Int, 2)
        XCTAssertEqual(stats["unanswered"] as? Int, 1)
        XCTAssertEqual(stats["refusalRows"] as? Int, 1)
        XCTAssertEqual(stats["refusedRequests"] as? Int, 4_000)
        XCTAssertGreaterThan(stats["bytes"] as? Int ?? 0, 0)
        XCTAssertNotNil(stats["oldest"] as? String)
        XCTAssertEqual(stats["path"] as? String, path + "-audit.sqlite")

        let text = try CLIRunner.run(["audit", "--store", path, "--stats"])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("entries: 2 (unanswered writes: 1)"), text.stdout)
        XCTAssertTrue(text.stdout.contains("refusals counted: 4000 request(s) in 1 row(s)"), text.stdout)
        XCTAssertTrue(text.stdout.contains("bytes on disk: "), text.stdout)

        let refusals = try CLIRunner.run(["audit", "--store", path, "--refusals"])
        XCTAssertEqual(refusals.status, 0, refusals.stderr)
        XCTAssertTrue(refusals.stdout.contains("401\tGET /carekit/v1/tasks\tan Authorization: Bearer token is required\t4000"), refusals.stdout)
        XCTAssertEqual(try CLIRunner.run(["audit", "--store", path, "--stats", "--refusals"]).status, 2)
    }
}
