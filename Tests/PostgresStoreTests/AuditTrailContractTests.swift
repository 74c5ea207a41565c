import Foundation
import PostgresStore
import Store
import Synchronization
import TestSupport
import XCTest

/// The audit trail behaves the same in SQLite's trail file and in a PostgreSQL store's tables: entries
/// and their completion, a patient's entries, refusal counts, retention, statistics; and on PostgreSQL,
/// several servers writing at once lose nothing.
final class AuditTrailContractTests: XCTestCase {
    private lazy var both = BothStores(for: self)

    override func tearDown() {
        both.stop()
    }

    private func stores() throws -> [(name: String, store: any AuditTrailStore)] {
        [("SQLite", try both.sqlite("audit-contract")), ("PostgreSQL", try both.postgres())]
    }

    func testEntriesAreRecordedCompletedAndReadAlike() throws {
        let now = Date(timeIntervalSince1970: 1_790_000_000.125)
        for (name, store) in try stores() {
            XCTAssertEqual(try store.auditEntries(patientID: nil, limit: 10), [], name)
            let ids = try store.recordAudit([
                AuditEntry(date: now, subject: "s1", patientID: "Patient/a", action: "GET /carekit/v1/revisions", status: 200, detail: "2 revisions", clientAddress: "127.0.0.1"),
                AuditEntry(date: now, subject: "s1", patientID: "Patient/a", action: "POST /carekit/v1/revisions", status: AuditEntry.unansweredStatus, detail: AuditEntry.unansweredDetail),
                AuditEntry(date: now, subject: "cli:root", patientID: "Patient/b", action: "caregate patients events", status: 0, detail: "3 events"),
            ])
            XCTAssertEqual(ids.count, 3, name)
            XCTAssertEqual(ids, ids.sorted(), "\(name): ids grow in order")
            var statistics = try store.auditStatistics()
            XCTAssertEqual([statistics.entries, statistics.unanswered], [3, 1], "\(name): the command line's status 0 is not an unanswered write")
            XCTAssertEqual(statistics.oldest, now, name)

            // The write is answered: its entry is completed in place.
            let later = now.addingTimeInterval(1.5)
            XCTAssertEqual(try store.recordAudit([
                AuditEntry(id: ids[1], date: later, subject: "s1", patientID: "Patient/a", action: "POST /carekit/v1/revisions", status: 200, detail: "1 outcomes"),
            ]), [ids[1]], name)
            let ofA = try store.auditEntries(patientID: "Patient/a", limit: 10)
            XCTAssertEqual(ofA.map(\.id), [ids[1], ids[0]], "\(name): newest first, of the patient only")
            XCTAssertEqual(ofA.first?.status, 200, name)
            XCTAssertEqual(ofA.first?.date, later, name)
            XCTAssertEqual(ofA.last?.clientAddress, "127.0.0.1", name)
            XCTAssertEqual(try store.auditEntries(patientID: nil, limit: 2).map(\.id), [ids[2], ids[1]], name)
            statistics = try store.auditStatistics()
            XCTAssertEqual(statistics.unanswered, 0, name)
            XCTAssertGreaterThan(statistics.bytes, 0, name)
        }
    }

    func testRefusalsAddUpAndTheRetentionPrunesAlike() throws {
        // Now: preparing the trail prunes against the clock.
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let old = now.addingTimeInterval(-3 * 86_400)
        for (name, store) in try stores() {
            let minute = AuditRefusalCount.minute(of: now)
            try store.recordRefusals([AuditRefusalCount(minute: minute, action: "GET /carekit/v1/tasks", status: 401, reason: "no token", count: 2)])
            try store.recordRefusals([
                AuditRefusalCount(minute: minute, action: "GET /carekit/v1/tasks", status: 401, reason: "no token", count: 3),
                AuditRefusalCount(minute: AuditRefusalCount.minute(of: old), action: "GET /carekit/v1/tasks", status: 401, reason: "no token", count: 1),
            ])
            let counts = try store.auditRefusals(limit: 10)
            XCTAssertEqual(counts.map(\.count), [5, 1], "\(name): the same key adds up; newest minute first")
            try store.recordAudit([
                AuditEntry(date: old, subject: "s", patientID: "Patient/a", action: "GET /carekit/v1/tasks", status: 200, detail: nil),
                AuditEntry(date: now, subject: "s", patientID: "Patient/a", action: "GET /carekit/v1/tasks", status: 200, detail: nil),
            ])
            try store.prepareAuditTrail(retentionDays: 2)
            XCTAssertEqual(try store.auditStatistics().entries, 1, "\(name): preparing the trail pruned the entry of 3 days ago")
            try store.recordAudit([AuditEntry(date: old, subject: "s", patientID: "Patient/a", action: "GET /carekit/v1/tasks", status: 200, detail: nil)])
            try store.recordRefusals([AuditRefusalCount(minute: AuditRefusalCount.minute(of: old), action: "GET /", status: 401, reason: "r", count: 1)])
            XCTAssertEqual(try store.pruneAuditTrail(now: now), 2, "\(name): the old entry and the old count")
            XCTAssertEqual(try store.auditEntries(patientID: nil, limit: 10).map(\.date), [now], name)
            XCTAssertEqual(try store.auditRefusals(limit: 10).map(\.count), [5], name)
            XCTAssertEqual(try store.pruneAuditTrail(now: now), 0, "\(name): pruning again changes nothing")
        }
    }

    /// Four servers' pools on one PostgreSQL trail at once: every entry kept once under its own id, and
    /// refusal counts of one key from all of them summed.
    func testServersWritingOnePostgresTrailAtOnceLoseNothing() throws {
        let name = "audit_concurrent"
        let stores = try [both.postgres(database: name)] + (1..<4).map { _ in try both.postgres(database: name, create: false) }
        let minute = AuditRefusalCount.minute(of: Date())
        let ids = Mutex<[Int64]>([])
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 40) { index in
            let store = stores[index % stores.count]
            do {
                let written = try store.recordAudit((0..<5).map { entry in
                    AuditEntry(date: Date(), subject: "s\(index)", patientID: "Patient/p\(index % 3)", action: "GET /carekit/v1/tasks", status: 200, detail: "\(entry)")
                })
                ids.withLock { $0 += written }
                try store.recordRefusals([
                    AuditRefusalCount(minute: minute, action: "GET /carekit/v1/events", status: 401, reason: "expired", count: 1),
                    AuditRefusalCount(minute: minute, action: "GET /carekit/v1/tasks", status: 401, reason: "no token", count: 2),
                ])
            } catch {
                failures.add(1, ordering: .relaxed)
            }
        }
        XCTAssertEqual(failures.load(ordering: .relaxed), 0)
        XCTAssertEqual(Set(ids.withLock { $0 }).count, 200)
        XCTAssertEqual(try stores[0].auditStatistics().entries, 200)
        XCTAssertEqual(try stores[0].auditRefusals(limit: 10).map(\.count).sorted(), [40, 80])
    }
}
