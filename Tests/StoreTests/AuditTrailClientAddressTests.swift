import Foundation
import GRDB
import Store
import TestSupport
import XCTest

/// The trail's client address column (migration "v3 client network address"): a trail an older server
/// made gains it with its entries kept (and no address for them); a store opened for reading only still
/// writes the command line's entries beside it, without changing the store.
final class AuditTrailClientAddressTests: XCTestCase {
    func testAnOlderTrailGainsTheColumnAndKeepsItsEntriesWithoutAnAddress() throws {
        let folder = try makeScratchFolder("audit-trail-v3")
        let path = folder.appendingPathComponent("care.sqlite").path
        _ = try SQLiteStore(path: path)
        // A trail as a server before v3 made it.
        let old = try DatabaseQueue(path: path + "-audit.sqlite")
        try old.write { db in
            try db.execute(sql: """
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1 audit trail'), ('v2 refusal counts and retention');
                CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, date DOUBLE NOT NULL, subject TEXT, patientID TEXT,
                    action TEXT NOT NULL, status INTEGER NOT NULL, detail TEXT);
                CREATE TABLE audit_refusals (minute INTEGER NOT NULL, action TEXT NOT NULL, status INTEGER NOT NULL, reason TEXT NOT NULL,
                    count INTEGER NOT NULL, PRIMARY KEY (minute, action, status, reason)) WITHOUT ROWID;
                INSERT INTO audit (date, subject, patientID, action, status, detail) VALUES (100, 'p', 'p', 'GET /carekit/v1/tasks', 200, 'old');
                """)
        }
        try old.close()
        let store = try SQLiteStore(path: path)
        try store.recordAudit(AuditEntry(
            date: Date(timeIntervalSince1970: 200), subject: "p", patientID: "p", action: "GET /carekit/v1/tasks", status: 200, detail: "new",
            clientAddress: "192.0.2.7"))
        let entries = try store.auditEntries(patientID: "p", limit: 10)
        XCTAssertEqual(entries.map(\.detail), ["new", "old"])
        XCTAssertEqual(entries.map(\.clientAddress), ["192.0.2.7", nil])
    }

    func testAStoreOpenedForReadingWritesTheCommandLinesEntryBesideIt() throws {
        let folder = try makeScratchFolder("audit-trail-beside")
        let path = folder.appendingPathComponent("care.sqlite").path
        _ = try SQLiteStore(path: path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let reader = try SQLiteStore(path: path, mode: .readOnly)
        let entry = AuditEntry(date: Date(), subject: "cli:alice", patientID: "Patient/p", action: "caregate patients events", status: 0, detail: "d")
        XCTAssertThrowsError(try reader.recordAudit(entry), "the store's own writer stays read-only")
        XCTAssertEqual(try reader.recordAuditBesideStore([entry]).count, 1)
        XCTAssertEqual(try SQLiteStore(path: path, mode: .readOnly).auditEntries(patientID: "Patient/p", limit: 5).map(\.action), ["caregate patients events"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), before, "the store's file is unchanged")
        let statistics = try SQLiteStore(path: path, mode: .readOnly).auditStatistics()
        XCTAssertEqual(statistics.unanswered, 0, "a command's status 0 is no unanswered write")
        XCTAssertFalse(entry.isUnanswered)
    }
}
