import Foundation
import GRDB
import PostgresStore
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// The app API's audit trail in a file of its own beside the store (`<store>-audit.sqlite`): its commits
/// never wait for the store's writer, and the entries an older CareGate kept in the store are listed with
/// the new ones. On PostgreSQL the trail is a table of the store's database; one test checks that its commits
/// do not wait for the writer lease there either.
final class AuditTrailFileTests: XCTestCase {
    private var folder: URL!
    private var path: String!

    override func setUpWithError() throws {
        folder = try makeScratchFolder("audit-trail")
        path = folder.appendingPathComponent("care.sqlite").path
    }

    private func entry(_ n: Int, patient: String = "a") -> AuditEntry {
        AuditEntry(date: StoreFixtures.day(n), subject: patient, patientID: patient, action: "GET /carekit/v1/tasks", status: 200, detail: "\(n)")
    }

    func testTrailIsAFileBesideTheStoreThatOnlyItsOwnerReads() throws {
        let store = try SQLiteStore(path: path)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-audit.sqlite"), "a store nobody served has no trail file")
        try store.recordAudit(entry(0))
        let attributes = try FileManager.default.attributesOfItem(atPath: path + "-audit.sqlite")
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        XCTAssertEqual(try store.auditEntries(patientID: nil, limit: 10).map(\.detail), ["0"])
        // Nothing went into the store's own table.
        let inStore = try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM audit") }
        XCTAssertEqual(inStore, 0)
    }

    func testAnEntryIsCommittedWhileAnotherProcessHoldsTheStoresWriteLock() throws {
        let store = try SQLiteStore(path: path, options: SQLiteStore.Options(busyTimeout: 0.2))
        try store.prepareAuditTrail()
        // Another connection (as `caregate sync` in its process) in the middle of a write transaction.
        let sync = try DatabaseQueue(path: path)
        try sync.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            defer { try? db.execute(sql: "ROLLBACK") }
            try store.recordAudit(entry(1))
        }
        XCTAssertEqual(try store.auditEntries(patientID: "a", limit: 10).map(\.detail), ["1"])
    }

    /// On PostgreSQL the trail is a table of the store's database, and its commits do not wait for the
    /// writer lease either: an entry is committed while another process (a store object of its own
    /// sessions) holds it.
    func testAnEntryIsCommittedWhileAnotherProcessHoldsThePostgreSQLWriterLease() throws {
        guard let tested = try makeStore(.postgresql) else { return }
        let sync = try XCTUnwrap(tested.reopen() as? PostgreSQLStore)
        try sync.lease.withWriterLease("caregate sync") {
            try tested.store.recordAudit(entry(1))
        }
        XCTAssertEqual(try tested.store.auditEntries(patientID: "a", limit: 10).map(\.detail), ["1"])
    }

    func testEntriesAnOlderStoreKeptAreListedWithTheNewOnesNewestFirst() throws {
        // An older CareGate's trail, in the store's own table.
        _ = try SQLiteStore(path: path)
        try DatabaseQueue(path: path).write { db in
            for (n, patient) in [(0, "a"), (1, "b")] {
                try db.execute(
                    sql: "INSERT INTO audit (date, subject, patientID, action, status, detail) VALUES (?, ?, ?, 'GET /carekit/v1/tasks', 200, ?)",
                    arguments: [StoreFixtures.day(n).timeIntervalSince1970, patient, patient, "\(n)"])
            }
        }
        // Read-only before any server of this version ran: the older entries, and no file made.
        let reader = try SQLiteStore(path: path, mode: .readOnly)
        XCTAssertEqual(try reader.auditEntries(patientID: nil, limit: 10).map(\.detail), ["1", "0"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-audit.sqlite"))

        let store = try SQLiteStore(path: path, mode: .existingOnly)
        try store.recordAudit([entry(2), entry(3, patient: "b")])
        let all = try store.auditEntries(patientID: nil, limit: 10)
        XCTAssertEqual(all.map(\.detail), ["3", "2", "1", "0"])
        XCTAssertEqual(all.compactMap(\.id), [4, 3, 2, 1], "the file's ids continue after the store's")
        XCTAssertEqual(try store.auditEntries(patientID: "b", limit: 10).map(\.detail), ["3", "1"])
        XCTAssertEqual(try store.auditEntries(patientID: nil, limit: 3).map(\.detail), ["3", "2", "1"])
        XCTAssertEqual(try SQLiteStore(path: path, mode: .readOnly).auditEntries(patientID: "a", limit: 10).map(\.detail), ["2", "0"])
    }

    func testReadOnlyStoreCannotWriteTheTrail() throws {
        _ = try SQLiteStore(path: path)
        let reader = try SQLiteStore(path: path, mode: .readOnly)
        XCTAssertThrowsError(try reader.recordAudit(entry(0)))
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-audit.sqlite"))
    }
}
