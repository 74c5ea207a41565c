import Foundation
import PostgresNIO
import PostgresStore
import Store
import Synchronization
import TestSupport
import XCTest

/// The app API's clock on PostgreSQL (``PostgresServerClock``) on a real server: clocks commit in their
/// order, so a reader never sees clock 2 while 1 is in flight (the race a sequence loses).
final class PostgresServerClockTests: XCTestCase {
    private var server: PostgresServerProcess!
    private var database: PostgresStore.PostgresDatabase!

    override func setUpWithError() throws {
        server = try PostgresServerProcess.start()
        guard case .postgres(let location) = try StoreLocation.parse(server.url) else { throw XCTSkip("not PostgreSQL") }
        database = try PostgresStore.PostgresDatabase(location: location, environment: [:], timeout: .seconds(200))
        XCTAssertEqual(try PostgresMigrations(PostgresCoordinationMigrations.all).apply(to: database), ["0100-sync-clock"])
    }

    override func tearDown() {
        database?.close()
        server?.stop()
    }

    /// Sessions waiting for a lock on the clock's row (what `pg_stat_activity` says, not a guess by time).
    private func ticksWaitingForTheRow() throws -> Int {
        Int(try server.psql("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE sync_clock%'")
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// A writing transaction on a pooled connection, on a thread of its own: it ticks, reports its clock
    /// (`ticked`), and ends when `finish` is opened (committing or rolling back).
    private func writer(commit: Bool, ticked: @escaping @Sendable (Int64) -> Void, finish: DispatchSemaphore) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        let database = database!
        Thread.detachNewThread {
            _ = try? database.run { client in
                try await client.withConnection { connection in
                    try await connection.query("BEGIN", logger: Logger(label: "test"))
                    let clock = try await PostgresServerClock.tick(on: connection)
                    ticked(clock)
                    // Waited for off the concurrency threads: the test's thread opens it.
                    await withCheckedContinuation { continuation in
                        DispatchQueue.global().async {
                            finish.wait()
                            continuation.resume()
                        }
                    }
                    try await connection.query(commit ? "COMMIT" : "ROLLBACK", logger: Logger(label: "test"))
                    return clock
                }
            }
            done.signal()
        }
        return done
    }

    private func committedClock() throws -> Int { try PostgresServerClock.serverClock(in: database).clock }

    private func eventually(_ what: String, _ condition: () throws -> Bool, file: StaticString = #filePath, line: UInt = #line) throws {
        let end = Date().addingTimeInterval(60)
        while try !condition() {
            guard Date() < end else { return XCTFail("never: \(what)", file: file, line: line) }
            usleep(10_000)
        }
    }

    func testAClockCommitsInItsOrderAndAReaderSeesOnlyCommittedClocks() throws {
        let start = try PostgresServerClock.serverClock(in: database)
        XCTAssertEqual(start.clock, 0)
        let clocks = Mutex<[String: Int64]>([:])
        let finishA = DispatchSemaphore(value: 0)
        let finishB = DispatchSemaphore(value: 0)

        let doneA = writer(commit: true, ticked: { clock in clocks.withLock { $0["A"] = clock } }, finish: finishA)
        try eventually("A ticks") { clocks.withLock { $0["A"] } != nil }
        XCTAssertEqual(clocks.withLock { $0["A"] }, 1)

        let doneB = writer(commit: true, ticked: { clock in clocks.withLock { $0["B"] = clock } }, finish: finishB)
        try eventually("B's tick waits for A's row lock") { try ticksWaitingForTheRow() == 1 }
        XCTAssertNil(clocks.withLock { $0["B"] }, "B has no clock while A is in flight")
        XCTAssertEqual(try committedClock(), 0, "a reader sees only the committed clock while 1 is in flight")

        finishA.signal()
        XCTAssertEqual(doneA.wait(timeout: .now() + 60), .success)
        try eventually("B ticks once A commits") { clocks.withLock { $0["B"] } != nil }
        XCTAssertEqual(clocks.withLock { $0["B"] }, 2, "B gets the next clock, after A's")
        XCTAssertEqual(try committedClock(), 1, "clock 2 is not seen while it is in flight")

        finishB.signal()
        XCTAssertEqual(doneB.wait(timeout: .now() + 60), .success)
        let end = try PostgresServerClock.serverClock(in: database)
        XCTAssertEqual(end.clock, 2)
        XCTAssertEqual(end.processUUID, start.processUUID, "one process uuid for the store")
    }

    func testARolledBackClockIsGivenToTheNextWriter() throws {
        let clocks = Mutex<[String: Int64]>([:])
        let finishA = DispatchSemaphore(value: 0)
        let finishB = DispatchSemaphore(value: 0)
        let doneA = writer(commit: false, ticked: { clock in clocks.withLock { $0["A"] = clock } }, finish: finishA)
        try eventually("A ticks") { clocks.withLock { $0["A"] } != nil }
        let doneB = writer(commit: true, ticked: { clock in clocks.withLock { $0["B"] = clock } }, finish: finishB)
        try eventually("B waits") { try ticksWaitingForTheRow() == 1 }
        finishA.signal()
        XCTAssertEqual(doneA.wait(timeout: .now() + 60), .success)
        try eventually("B ticks once A rolls back") { clocks.withLock { $0["B"] } != nil }
        finishB.signal()
        XCTAssertEqual(doneB.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(clocks.withLock { [$0["A"], $0["B"]] }, [1, 1], "no gap: the rolled-back clock is allocated again")
        XCTAssertEqual(try committedClock(), 1)
    }
}
