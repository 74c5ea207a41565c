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
}

/// Errors gathered from several threads.
private final class LockedFailures: @unchecked Sendable {
    private let lock = NSLock()
    private var failures: [String] = []

    func append(_ failure: String) { lock.withLock { failures.append(failure) } }
    var all: [String] { lock.withLock { failures } }
}
