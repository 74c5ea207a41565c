import CareModel
import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// Write jobs of two stores (two pools and two lock sessions, as two processes have) on one PostgreSQL
/// database end as some serial order of them: a job that reads the current version and writes the next
/// under the writer lease never loses another's version.
final class EntityWriteLeaseTests: XCTestCase {
    private lazy var both = BothStores(for: self)

    override func tearDown() {
        both.stop()
    }

    private typealias F = WriteFixtures

    func testReadModifyWriteJobsOfTwoStoresUnderTheLeaseLoseNoVersion() throws {
        let name = "db_\(UUID().uuidString.prefix(8).lowercased())"
        let first = try both.postgres(database: name)
        let second = try both.postgres(database: name, create: false)
        defer {
            first.close()
            second.close()
        }
        var setup = StoreBatch(date: F.day(0))
        setup.add(F.patient("counter"))
        try first.apply(setup)

        let jobsPerStore = 15
        let failures = LockedFailures()
        let group = DispatchGroup()
        for store in [first, second] {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                for _ in 0..<jobsPerStore {
                    do {
                        try store.withWriterLease("count") {
                            // Read, then write the next version from what was read: only a serial order keeps every increment.
                            guard case .patient(var tip)? = try store.history(.patient, id: "counter").last else { throw StoreError.idNotFound(kind: .patient, id: "counter") }
                            let count = Int(tip.name.givenName ?? "") ?? 0
                            tip.name.givenName = String(count + 1)
                            var batch = StoreBatch(date: F.day(1))
                            batch.update(tip)
                            try store.apply(batch)
                        }
                    } catch {
                        failures.append("\(error)")
                    }
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 300), .success, "the jobs ended")
        XCTAssertEqual(failures.all, [])
        let history = try first.history(.patient, id: "counter").compactMap { if case .patient(let p) = $0 { p } else { nil } }
        XCTAssertEqual(history.count, 1 + 2 * jobsPerStore, "one version per job")
        XCTAssertEqual(history.last?.name.givenName, String(2 * jobsPerStore), "no increment lost")
        XCTAssertEqual(history.dropFirst().map(\.previousVersionUUIDs), history.dropLast().map { [$0.uuid] }, "one chain, no fork")
        XCTAssertEqual(try PostgresServerClock.serverClock(in: second.database).clock, 1 + 2 * jobsPerStore, "one tick per job")
    }

    /// Without the lease too, batches of two stores run one at a time (as SQLite's single writer): updates
    /// of one entity from both make one chain, never two versions after one tip.
    func testBatchesOfTwoStoresWithoutTheLeaseNeverFork() throws {
        let name = "db_\(UUID().uuidString.prefix(8).lowercased())"
        let first = try both.postgres(database: name)
        let second = try both.postgres(database: name, create: false)
        defer {
            first.close()
            second.close()
        }
        var setup = StoreBatch(date: F.day(0))
        setup.add(F.patient("shared"))
        try first.apply(setup)
        let updatesPerStore = 15
        let failures = LockedFailures()
        let group = DispatchGroup()
        for (index, store) in [first, second].enumerated() {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                for number in 0..<updatesPerStore {
                    var patient = F.patient("shared")
                    patient.name.givenName = "store \(index) update \(number)"
                    var batch = StoreBatch(date: F.day(1))
                    batch.update(patient)
                    do { try store.apply(batch) } catch { failures.append("\(error)") }
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 300), .success, "the updates ended")
        XCTAssertEqual(failures.all, [])
        let history = try second.history(.patient, id: "shared")
        XCTAssertEqual(history.count, 1 + 2 * updatesPerStore)
        XCTAssertEqual(history.dropFirst().map(\.metadata.previousVersionUUIDs), history.dropLast().map { [$0.metadata.uuid] }, "one chain, no fork")
        XCTAssertEqual(history.filter { $0.metadata.nextVersionUUIDs.isEmpty }.count, 1, "one tip")
    }

    /// A job whose lease session is lost (a network cut, a server restart) while it runs writes nothing
    /// more: its next batch is refused inside its transaction, though no safe point came in between, and
    /// the worker that took the lease meanwhile keeps writing.
    func testABatchOfAJobWhoseLeaseSessionWasLostIsRefused() throws {
        let name = "db_\(UUID().uuidString.prefix(8).lowercased())"
        let holder = try both.postgres(database: name)
        let other = try both.postgres(database: name, create: false)
        defer {
            holder.close()
            other.close()
        }
        var setup = StoreBatch(date: F.day(0))
        setup.add(F.patient("p"))
        try holder.apply(setup)
        let server = try XCTUnwrap(both.server)
        try holder.withWriterLease("caregate import") {
            var first = StoreBatch(date: F.day(1))
            first.add(F.patient("before the cut"))
            try holder.apply(first)
            // The server ends the holder's lock sessions (the lease's and the gate's): the lease is free.
            XCTAssertEqual(try server.psql(
                "SELECT count(pg_terminate_backend(pid)) FROM (SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' AND granted) AS holders",
                database: name).trimmingCharacters(in: .whitespacesAndNewlines), "1")
            try other.withWriterLease("caregate sync") {
                var taken = StoreBatch(date: F.day(1))
                taken.add(F.patient("by the new holder"))
                try other.apply(taken)
            }
            var late = StoreBatch(date: F.day(1))
            late.add(F.patient("after the cut"))
            XCTAssertThrowsError(try holder.apply(late), "a batch planned under a lost lease") { error in
                XCTAssertTrue("\(error)".contains("the connection that held the store's writer lease was lost"), "\(error)")
            }
        }
        XCTAssertEqual(Set(try other.patients().map(\.id)), ["p", "before the cut", "by the new holder"], "nothing of the late batch")
        var next = StoreBatch(date: F.day(2))
        next.add(F.patient("next job"))
        XCTAssertEqual(try holder.withWriterLease("caregate import") { try holder.apply(next).added }, 1, "a new session serves the next job")
    }
}

/// Errors gathered from several threads.
private final class LockedFailures: @unchecked Sendable {
    private let lock = NSLock()
    private var failures: [String] = []

    func append(_ failure: String) { lock.withLock { failures.append(failure) } }
    var all: [String] { lock.withLock { failures } }
}
