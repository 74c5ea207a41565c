@testable import AppServer
import Foundation
import Store
import StoreTestSupport
import XCTest

/// The refusal counts a server holds when it stops reach the trail: `caregate serve` calls
/// ``AuditTrailWriter/finish()`` once it has stopped answering, before its store closes, rather than
/// leaving the last second's counts to a timer or to the writer going away.
final class AuditTrailWriterTests: XCTestCase {
    func testFinishWritesTheCountsStillWaitingForTheirGap() throws {
        try forEachStore(sqliteFile: true) { tested in
            let trail = AuditTrailWriter(store: tested.store)
            let minute = Date(timeIntervalSince1970: 1_800_000_000)
            // The first count is written at once; the ones after it wait for the next gap (a second).
            trail.countRefusal(action: "GET /carekit/v1/tasks", status: 401, reason: "unauthorized", at: minute)
            XCTAssertEqual(try AuditFloodTests.refusalsCounted(1, in: tested.store).reduce(0) { $0 + $1.count }, 1)
            trail.countRefusal(action: "GET /carekit/v1/tasks", status: 401, reason: "unauthorized", at: minute)
            trail.countRefusal(action: "POST /carekit/v1/revisions", status: 401, reason: "the token has expired", at: minute)

            try trail.finish()
            // No waiting: finish returns once they are in the trail.
            let counts = try tested.store.auditRefusals(limit: 10)
            XCTAssertEqual(counts.first { $0.action == "GET /carekit/v1/tasks" }?.count, 2, "\(tested.kind)")
            XCTAssertEqual(counts.first { $0.action == "POST /carekit/v1/revisions" }?.count, 1, "\(tested.kind)")

            // Nothing is left to write, so a second finish (or the gap's timer) adds nothing.
            try trail.finish()
            XCTAssertEqual(try tested.store.auditRefusals(limit: 10).reduce(0) { $0 + $1.count }, 3, "\(tested.kind)")
        }
    }
}
