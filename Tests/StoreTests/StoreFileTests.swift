import SyntheticData
import Foundation
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// Opening store files: WAL, schema migrations, and clear refusals of what is not a store.
final class StoreFileTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeScratchFolder("store-file")
    }

    /// Filled, then opened again (a SQLite file as an existing store only, in WAL mode; a PostgreSQL database
    /// through a pool of its own): what was written is all there.
    func testStoreIsCreatedInWALModeAndReopened() throws {
        try forEachStore(sqliteFile: true) { tested in
            try SyntheticCareData(patients: 2, tasksPerPatient: 2, days: 3).fill(tested.store)
            let reopened: AnyTestStore
            if tested.sqlite != nil, let path = tested.location {
                XCTAssertTrue(FileManager.default.fileExists(atPath: path + "-wal"), "the store runs in WAL mode")
                reopened = try SQLiteStore(path: path, mode: .existingOnly)
            } else {
                reopened = try tested.reopen()
            }
            let stats = try reopened.statistics()
            XCTAssertEqual(stats.entities[.patient]?.current, 2, "\(tested.kind)")
            XCTAssertEqual(stats.entities[.task]?.current, 4)
            XCTAssertEqual(stats.entities[.outcome]?.current, 12)
            XCTAssertEqual(stats.outcomeValues, 12)
            XCTAssertEqual(try reopened.integrityCheck(), [])
        }
    }

    func testMissingStoreIsRefusedWhenOnlyReading() {
        let path = folder.appendingPathComponent("missing.sqlite").path
        XCTAssertThrowsStoreError(try SQLiteStore(path: path, mode: .existingOnly), .storeNotFound(path: path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
    }

    func testFileThatIsNotADatabaseIsRefused() throws {
        let path = folder.appendingPathComponent("notes.sqlite").path
        try Data(String(repeating: "not a database\n", count: 100).utf8).write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsStoreError(try SQLiteStore(path: path, mode: .existingOnly)) {
            if case .notAStore(path, _) = $0 { return true } else { return false }
        }
    }

    func testOtherSQLiteDatabaseIsRefused() throws {
        let path = folder.appendingPathComponent("other.sqlite").path
        let (status, _) = try ScriptRunner.runProgram(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table t(x)'); c.commit()", path])
        try XCTSkipUnless(status == 0, "python3 with sqlite3 is needed to make a foreign database")
        XCTAssertThrowsStoreError(try SQLiteStore(path: path)) {
            if case .notAStore(path, let reason) = $0 { return reason.contains("without CareGate's tables") } else { return false }
        }
    }
}

/// A new store appears whole or not at all: it is built under a name of its own and linked into place.
final class StoreCreationTests: XCTestCase {
    func testStoresCreatedAtOnceFromSeveralThreadsAreOneSoundStore() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("store-create-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("s.sqlite").path
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do {
                _ = try SQLiteStore(path: path)
            } catch {
                failures.mutate { $0.append("\(error)") }
            }
        }
        XCTAssertEqual(failures.value, [])
        XCTAssertEqual(try SQLiteStore(path: path, mode: .readOnly).integrityCheck(), [])
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".creating-") }
        XCTAssertEqual(left, [], "no building file left behind")
    }
}

/// A value several threads change under a lock.
private final class Locked<Value>: @unchecked Sendable {
    private var stored: Value
    private let lock = NSLock()
    init(_ value: Value) { stored = value }
    var value: Value { lock.lock(); defer { lock.unlock() }; return stored }
    func mutate(_ body: (inout Value) -> Void) { lock.lock(); body(&stored); lock.unlock() }
}
