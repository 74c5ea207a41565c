@testable import Store
import Foundation
import XCTest

/// The pool that runs pushes: never more threads at work than its limit, however many wait, and each
/// piece of work run once.
final class BlockingWorkerPoolTests: XCTestCase {
    func testNoMoreWorkRunsAtOnceThanTheLimitAndAllOfItRuns() {
        let pool = BlockingWorkerPool(name: "test.pool", limit: 3)
        let gauge = Gauge()
        let group = DispatchGroup()
        for _ in 0..<60 {
            group.enter()
            pool.submit {
                gauge.enter()
                usleep(2_000)  // work that blocks, as a push waiting for the store's writer does
                gauge.leave()
                group.leave()
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        XCTAssertEqual(gauge.finished, 60)
        XCTAssertLessThanOrEqual(gauge.most, 3)
    }
}

/// How many pieces of work run at once, at most, and how many ended.
private final class Gauge: @unchecked Sendable {
    private let lock = NSLock()
    private var running = 0
    private(set) var most = 0
    private(set) var finished = 0

    func enter() { lock.withLock { running += 1; most = max(most, running) } }
    func leave() { lock.withLock { running -= 1; finished += 1 } }
}
