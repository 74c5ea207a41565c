import Foundation
import XCTest

/// The audit trail of a store exported as FHIR (`caregate audit --format fhir`), checked the way every
/// audit test checks it: the command succeeds, and `caregate validate` passes its Bundle.
public struct ExportedAuditEvents {
    /// The command's output: the collection Bundle's JSON.
    public let text: String
    public let bundle: [String: Any]
    /// The Bundle's AuditEvents, in its order.
    public let events: [[String: Any]]
}

extension XCTestCase {
    /// `caregate audit --store STORE --format fhir`, its Bundle written to `folder` and validated with
    /// `caregate validate`; fails the test when either command does.
    public func exportedAuditEvents(store: String, folder: URL, file: StaticString = #filePath, line: UInt = #line) throws -> ExportedAuditEvents {
        let exported = try CLIRunner.run(["audit", "--store", store, "--format", "fhir"])
        XCTAssertEqual(exported.status, 0, exported.stderr, file: file, line: line)
        let path = folder.appendingPathComponent("audit-events.json")
        try Data(exported.stdout.utf8).write(to: path)
        let validated = try CLIRunner.run(["validate", path.path])
        XCTAssertEqual(validated.status, 0, validated.stdout + validated.stderr, file: file, line: line)
        let bundle = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(exported.stdout.utf8)) as? [String: Any], file: file, line: line)
        let events = (bundle["entry"] as? [[String: Any]] ?? []).compactMap { $0["resource"] as? [String: Any] }
        return ExportedAuditEvents(text: exported.stdout, bundle: bundle, events: events)
    }
}
