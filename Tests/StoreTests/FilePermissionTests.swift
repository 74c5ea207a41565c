import FileSafety
import Foundation
import GRDB
@testable import Store
import TestSupport
import XCTest

/// Every file CareGate makes beside a store is its owner's only (0600, folders 0700) whatever the umask,
/// and a store others may read is reported (issue 41, item 6).
final class FilePermissionTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeScratchFolder("file-permissions")
    }

    /// Runs `body` with the process's umask set to `mask` (process-wide: restored after, and these tests
    /// make no thread that outlives them).
    private func withUmask<T>(_ mask: mode_t, _ body: () throws -> T) rethrows -> T {
        let previous = umask(mask)
        defer { umask(previous) }
        return try body()
    }

    private func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try XCTUnwrap((attributes[.posixPermissions] as? NSNumber)?.intValue, path)
    }

    /// The store, its WAL and shared-memory files, its lock file (the server's marker among its locks) and the audit
    /// trail (with its own WAL): every one 0600 under umask 022, which left them 0644 before.
    func testEveryFileBesideANewStoreIsOwnerOnlyUnderUmask022() throws {
        let path = folder.appendingPathComponent("care.sqlite").path
        try withUmask(0o022) {
            let (store, _, _, task) = try StoreFixtures.storeWithTask(path: path)
            var batch = StoreBatch()
            batch.add(StoreFixtures.outcome(task, occurrence: 0))
            try store.withWriterLease("test") { try store.apply(batch) }
            try store.withAppendLease("test append") {}
            let marker = try ServingMarker(storePath: path)
            try store.recordAudit(AuditEntry(date: StoreFixtures.day0, subject: "p1", patientID: "p1", action: "GET /carekit/v1/tasks", status: 200, detail: nil))
            withExtendedLifetime(marker) {}
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            // Every lock is one file (`-lock`) on Linux; elsewhere each lock has a file of its own.
            let locks = Set(StoreLock.allCases.map { URL(fileURLWithPath: $0.path(storePath: path)).lastPathComponent.dropFirst("care.sqlite".count) })
            for suffix in ["", "-wal", "-shm", "-audit.sqlite", "-audit.sqlite-wal", "-audit.sqlite-shm"] + locks.map(String.init) {
                XCTAssertTrue(names.contains("care.sqlite" + suffix), "care.sqlite\(suffix) was not made: \(names)")
            }
            for name in names {
                XCTAssertEqual(try mode(folder.appendingPathComponent(name).path), 0o600, name)
            }
            XCTAssertNil(StoreFileModes.warning(storePath: path))
        }
    }

    /// What the store relies on, checked on this machine's SQLite: it keeps the mode of a database file
    /// it finds and gives the WAL and shared-memory files that same mode, whatever the umask.
    func testSQLiteGivesItsWALAndSharedMemoryFilesTheDatabaseFilesMode() throws {
        for fileMode in [0o600, 0o640] {
            let path = folder.appendingPathComponent("plain-\(String(fileMode, radix: 8)).sqlite").path
            try withUmask(0o022) {
                XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
                XCTAssertEqual(chmod(path, mode_t(fileMode)), 0)
                let pool = try DatabasePool(path: path)
                try pool.write { db in try db.execute(sql: "CREATE TABLE t (x); INSERT INTO t VALUES (1)") }
                for suffix in ["", "-wal", "-shm"] {
                    XCTAssertEqual(try mode(path + suffix), fileMode, "\(suffix) beside a \(String(fileMode, radix: 8)) database")
                }
                try pool.close()
            }
        }
    }

    /// A store made by an older CareGate (0644) is reported with the chmod that fixes it; nothing changes
    /// its mode behind the owner's back.
    func testAStoreOthersMayReadIsReportedWithTheChmodToRun() throws {
        let path = folder.appendingPathComponent("older's store.sqlite").path
        let store = try SQLiteStore(path: path)
        try store.withWriterLease("test") {}
        XCTAssertNil(StoreFileModes.warning(storePath: path))
        XCTAssertEqual(chmod(path, 0o644), 0)
        XCTAssertEqual(chmod(path + "-lock", 0o640), 0)
        let warning = try XCTUnwrap(StoreFileModes.warning(storePath: path))
        XCTAssertTrue(warning.contains("\(path) (mode 644)"), warning)
        XCTAssertTrue(warning.contains("\(path)-lock (mode 640)"), warning)
        // Quoted for the shell, the quote in the name too.
        let quoted = path.replacingOccurrences(of: "'", with: #"'\''"#)
        XCTAssertTrue(warning.contains("chmod 600 '\(quoted)' '\(quoted)-lock'"), warning)
        XCTAssertEqual(StoreFileModes.openToOthers(storePath: path).map(\.path), [path, path + "-lock"])
        _ = try SQLiteStore(path: path)
        XCTAssertEqual(try mode(path), 0o644, "reported, not changed")
    }

    /// The helper gives exact modes even under a umask that would narrow them (0277 would leave a lock
    /// file its maker cannot open again), replaces a wider file on write, and refuses symbolic links.
    func testPrivateFilesHaveExactModesAndRefuseSymbolicLinks() throws {
        try withUmask(0o277) {
            let lock = folder.appendingPathComponent("a-lock").path
            let descriptor = try PrivateFiles.open(lock)
            close(descriptor)
            XCTAssertEqual(try mode(lock), 0o600)
            close(try PrivateFiles.open(lock))
            let sub = folder.appendingPathComponent("exports").path
            XCTAssertTrue(try PrivateFiles.makeFolder(sub))
            XCTAssertFalse(try PrivateFiles.makeFolder(sub), "a folder already there is kept")
            XCTAssertEqual(try mode(sub), 0o700)
        }
        let report = folder.appendingPathComponent("report.json").path
        XCTAssertTrue(FileManager.default.createFile(atPath: report, contents: Data("old".utf8), attributes: [.posixPermissions: 0o644]))
        try withUmask(0o022) { try PrivateFiles.write(Data("new".utf8), to: report) }
        XCTAssertEqual(try mode(report), 0o600)
        XCTAssertEqual(try String(contentsOfFile: report, encoding: .utf8), "new")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".tmp") }, [])
        // A pipe (as /dev/stdout may be) is written in place, not replaced by a file.
        let pipe = folder.appendingPathComponent("pipe").path
        XCTAssertEqual(mkfifo(pipe, 0o600), 0)
        let reader = Glibc.open(pipe, O_RDONLY | O_NONBLOCK)
        XCTAssertGreaterThanOrEqual(reader, 0)
        try PrivateFiles.write(Data("through".utf8), to: pipe)
        var bytes = [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(Glibc.read(reader, &bytes, bytes.count), 7)
        close(reader)
        XCTAssertEqual(String(decoding: bytes.prefix(7), as: UTF8.self), "through")

        // A link planted where a lock file goes (pointing at a file the attacker wants truncated) is refused.
        let victim = folder.appendingPathComponent("victim").path
        XCTAssertTrue(FileManager.default.createFile(atPath: victim, contents: Data("keep".utf8)))
        let planted = folder.appendingPathComponent("care.sqlite-lock").path
        XCTAssertEqual(symlink(victim, planted), 0)
        XCTAssertThrowsError(try PrivateFiles.open(planted)) { error in
            XCTAssertEqual((error as? PrivateFileError)?.code, ELOOP)
            XCTAssertTrue("\(error)".contains("symbolic link"), "\(error)")
        }
        XCTAssertThrowsError(try PrivateFiles.create(planted)) { error in XCTAssertEqual((error as? PrivateFileError)?.code, EEXIST) }
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "keep")
    }
}
