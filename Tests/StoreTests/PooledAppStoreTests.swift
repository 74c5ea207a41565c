@testable import Store
import CareModel
import Foundation
import StoreTestSupport
import TestSupport
import XCTest

/// ``PooledAppStore``, the async front of a synchronous store that `caregate serve` calls: reads never
/// queue behind writes, reads and writes run on threads it bounds, and its reader slots never hand out a
/// reader connection that a writer's thread may be using.
final class PooledAppStoreTests: XCTestCase {
    private func fileStore(readers: Int) throws -> SQLiteStore {
        let folder = try makeScratchFolder("pooled-app-store")
        return try SQLiteStore(path: folder.appendingPathComponent("store.sqlite").path, options: .init(readers: readers))
    }

    func testReadersBeyondTheWritersAreReadThreadsAndAStoreWithNoneToSpareReadsOnOneThread() throws {
        XCTAssertEqual(try fileStore(readers: 7).readerCount, 7)
        let front = PooledAppStore(try fileStore(readers: 7), writeThreads: 3)
        XCTAssertEqual(front.readThreads, 4)
        XCTAssertEqual(front.writeThreads, 3)
        let memory = try SQLiteStore.inMemory()
        XCTAssertEqual(memory.readerCount, 1)
        XCTAssertEqual(PooledAppStore(memory, writeThreads: 4).readThreads, 1)
    }

    /// A store whose every call waits on a database server (PostgreSQL) has no reader slots: its reads go to
    /// as many threads as the calls it serves at once, and are answered there.
    func testAStoreOnADatabaseServerReadsOnAsManyThreadsAsItServesCalls() async throws {
        guard let tested = try makeStore(.postgresql) else { return }
        let server = try XCTUnwrap(tested.store as? any ConcurrentBlockingStore, "a PostgreSQL store waits on its server")
        let front = PooledAppStore(tested.store, writeThreads: 3)
        XCTAssertEqual(front.readThreads, server.concurrentCalls)
        XCTAssertEqual(front.writeThreads, 3)
        var batch = StoreBatch()
        batch.add(StoreFixtures.patient("p1"))
        try tested.store.apply(batch)
        let answers = try await front.read { try $0.patientExists("p1") }
        XCTAssertTrue(answers)
    }

    /// Every writer blocked (as pushes waiting for the writer lease are): reads are still answered, on
    /// the caller's thread or the read pool, and the writes all run once let go, never more at once than
    /// the writer threads.
    func testReadsAreAnsweredWhileEveryWriterThreadIsBlocked() async throws {
        try await forEachStore { tested in
            // On SQLite, a file store with readers to spare (reads on the callers' threads) and the store in
            // memory with none (every read to the pool); PostgreSQL's reads all go to the pool.
            let stores: [any AppSyncStore] = tested.kind == .sqlite ? [try fileStore(readers: 4), tested.store] : [tested.store]
            for store in stores {
                var batch = StoreBatch()
                batch.add(StoreFixtures.patient("p1"))
                try store.apply(batch)
                let front = PooledAppStore(store, writeThreads: 2)
                let gate = Gate()
                let writes = Task {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for _ in 0..<20 { group.addTask { try await front.write { _ in gate.pass() } } }
                        try await group.waitForAll()
                    }
                }
                while gate.waiting < 2 { try await Task.sleep(nanoseconds: 1_000_000) }
                XCTAssertEqual(front.writesUnderway, 20)
                try await withThrowingTaskGroup(of: Bool.self) { group in
                    for _ in 0..<50 { group.addTask { try await front.patientExists("p1") } }
                    for try await exists in group { XCTAssertTrue(exists) }
                }
                XCTAssertLessThanOrEqual(gate.most, 2, "more writes ran at once than the writer threads")
                gate.open()
                try await writes.value
                XCTAssertEqual(gate.passed, 20)
                XCTAssertEqual(front.writesUnderway, 0)
            }
        }
    }

    func testASlotIsNotTakenWhileAThreadWaitsForOne() throws {
        let slots = ReaderSlots(count: 1)
        XCTAssertTrue(slots.tryAcquire())
        XCTAssertFalse(slots.tryAcquire(), "no slot is free")
        let taken = DispatchSemaphore(value: 0)
        Thread {
            slots.acquire()
            taken.signal()
        }.start()
        // The waiter is first in line: the slot given back goes to it, not to a try.
        while !slots.hasWaiter { usleep(1_000) }
        slots.release()
        XCTAssertFalse(slots.tryAcquire(), "a try took the slot a waiting thread was owed")
        XCTAssertEqual(taken.wait(timeout: .now() + 60), .success)
    }

    func testIdleThreadsOfAPoolEnd() throws {
        let pool = BlockingWorkerPool(name: "test.idle", limit: 3, idleSeconds: 0.05)
        let done = DispatchGroup()
        for _ in 0..<6 {
            done.enter()
            pool.submit { usleep(1_000); done.leave() }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        let deadline = Date().addingTimeInterval(60)
        while pool.threadCount > 0, Date() < deadline { usleep(10_000) }
        XCTAssertEqual(pool.threadCount, 0, "idle threads stayed")
    }
}

/// Blocks whoever passes until opened, counting how many wait at once at most and how many passed.
private final class Gate: @unchecked Sendable {
    /// Guards every variable below.
    private let condition = NSCondition()
    private var isOpen = false
    private var inside = 0
    private var peak = 0
    private var through = 0

    var waiting: Int { condition.withLock { inside } }
    var most: Int { condition.withLock { peak } }
    var passed: Int { condition.withLock { through } }

    func pass() {
        condition.lock()
        inside += 1
        peak = max(peak, inside)
        while !isOpen { condition.wait() }
        inside -= 1
        through += 1
        condition.unlock()
    }

    func open() {
        condition.withLock { isOpen = true }
        condition.broadcast()
    }
}
