import FHIRCore
import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `OrderedParallelMap` with `.yielding` workers: the same results in the same order, on threads of the
/// run's own that run behind the caller and end with the run; the caller's own priority untouched.
final class YieldingWorkersTests: XCTestCase {
    func testYieldingWorkersGiveTheSameResultsInOrder() {
        var normal: [Int] = []
        var yielding: [Int] = []
        OrderedParallelMap.run((0..<300).makeIterator(), workers: 2, window: 6, transform: { $0 * 3 }) { normal.append($0) }
        OrderedParallelMap.run((0..<300).makeIterator(), workers: 2, window: 6, priority: .yielding, transform: { $0 * 3 }) {
            yielding.append($0)
        }
        XCTAssertEqual(yielding, (0..<300).map { $0 * 3 })
        XCTAssertEqual(yielding, normal)
    }

    func testAThrowingConsumerStopsAYieldingRun() {
        struct Stop: Error {}
        var consumed = 0
        XCTAssertThrowsError(try OrderedParallelMap.run((0..<100).makeIterator(), workers: 2, priority: .yielding, transform: { $0 }) { value in
            consumed += 1
            if value == 10 { throw Stop() }
        })
        XCTAssertEqual(consumed, 11)
    }

    #if os(Linux)
    func testYieldingWorkersRunBehindTheCallerOnThreadsThatEndWithTheRun() throws {
        let caller = try XCTUnwrap(Self.threadID())
        let callerNice = Self.nice(of: caller)
        let seen = Seen()
        OrderedParallelMap.run((0..<64).makeIterator(), workers: 2, window: 4, priority: .yielding, transform: { value -> Int in
            if let thread = Self.threadID() { seen.add(thread, nice: Self.nice(of: thread)) }
            return value
        }) { _ in }

        let workers = seen.all
        XCTAssertFalse(workers.isEmpty)
        XCTAssertFalse(workers.keys.contains(caller), "the work ran on the workers, not the caller")
        for (thread, nice) in workers {
            XCTAssertEqual(nice, min(19, callerNice + 5), "worker \(thread) runs five nice steps behind the caller")
        }
        XCTAssertEqual(Self.nice(of: caller), callerNice, "the caller keeps its priority")
        // The run joins its threads; the kernel may list a joined thread a moment longer.
        let deadline = Date().addingTimeInterval(5)
        while workers.keys.contains(where: Self.isAlive), Date() < deadline { usleep(10_000) }
        XCTAssertEqual(workers.keys.filter(Self.isAlive), [], "no worker thread outlives the run")
    }

    /// The calling thread's kernel id.
    private static func threadID() -> Int32? {
        var buffer = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: "/").last.flatMap { Int32($0) }
    }

    private static func nice(of thread: Int32) -> Int32 {
        getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(thread))
    }

    private static func isAlive(_ thread: Int32) -> Bool {
        FileManager.default.fileExists(atPath: "/proc/self/task/\(thread)")
    }
    #endif
}

/// Thread ids and nice values seen by worker threads.
private final class Seen: @unchecked Sendable {
    private let lock = NSLock()
    private var threads: [Int32: Int32] = [:]

    func add(_ thread: Int32, nice: Int32) { lock.withLock { threads[thread] = nice } }
    var all: [Int32: Int32] { lock.withLock { threads } }
}
