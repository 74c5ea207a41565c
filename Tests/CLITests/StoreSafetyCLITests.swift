import Foundation
import TestSupport
import XCTest

/// Store commands never harm a file that is not theirs, and read stores they cannot write.
final class StoreSafetyCLITests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeScratchFolder("store-safety")
    }

    private func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    func testReadCommandsCreateNothing() throws {
        let missing = folder.appendingPathComponent("missing.sqlite").path
        for command in [["store", "stats"], ["store", "dump"], ["store", "events", "--patient", "p", "--from", "2025-01-01"]] {
            let result = try CLIRunner.run(command + ["--store", missing])
            XCTAssertEqual(result.status, 1, "\(command): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("no store at"), result.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: missing), "\(command) created the store")
        }
    }

    /// A process killed while it makes a new store leaves either no store or a whole one: never a
    /// half-made file that the next run refuses as "not a CareGate store".
    func testKillingTheFirstImportLeavesNoHalfMadeStore() throws {
        let store = folder.appendingPathComponent("s.sqlite").path
        for attempt in 0..<8 {
            try? FileManager.default.removeItem(atPath: store)
            let run = try CLIRunner.start(["import", "Fixtures/provider", "--store", store, "--time-zone", "America/Chicago"])
            // Killed the moment the store's file appears (or a little later), when making it is under way.
            let deadline = Date().addingTimeInterval(20)
            while !FileManager.default.fileExists(atPath: store), run.isRunning, Date() < deadline { usleep(200) }
            usleep(useconds_t(attempt * 1_000))
            run.kill()
            _ = try? run.wait()
            let next = try CLIRunner.run(["import", "Fixtures/provider", "--store", store, "--time-zone", "America/Chicago"])
            XCTAssertEqual(next.status, 0, "after a kill \(attempt) ms after the file appeared: \(next.stderr)")
        }
    }

    func testAnEmptyFileIsNeitherReadNorTurnedIntoAStore() throws {
        let empty = try folder.writeFile("empty.sqlite", "")
        for command in [["store", "stats"], ["store", "generate", "--patients", "1", "--days", "1"], ["import", "Fixtures/provider"]] {
            let result = try CLIRunner.run(command + ["--store", empty])
            XCTAssertEqual(result.status, 1, "\(command): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("is not a CareGate store: the file is empty"), result.stderr)
            XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: empty)[.size] as? Int, 0, "\(command) wrote into it")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["empty.sqlite"])
    }

    func testAnotherProgramsSQLiteFileIsLeftByteForByte() throws {
        let foreign = folder.appendingPathComponent("other.db").path
        try ScriptRunner.python("import sqlite3; c = sqlite3.connect('\(foreign)'); c.execute('CREATE TABLE t (x)'); c.commit()")
        let withID = folder.appendingPathComponent("app.db").path
        try ScriptRunner.python("import sqlite3; c = sqlite3.connect('\(withID)'); c.execute('PRAGMA application_id = 1234'); c.execute('CREATE TABLE t (x)'); c.commit()")
        for path in [foreign, withID] {
            let before = try bytes(path)
            for command in [["store", "stats"], ["store", "dump"], ["store", "generate", "--patients", "1", "--days", "1"], ["import", "Fixtures/provider"]] {
                let result = try CLIRunner.run(command + ["--store", path])
                XCTAssertEqual(result.status, 1, "\(command): \(result.stderr)")
                XCTAssertTrue(result.stderr.contains("is not a CareGate store"), result.stderr)
                XCTAssertEqual(try bytes(path), before, "\(command) changed \(path)")
            }
        }
        XCTAssertTrue(try CLIRunner.run(["store", "stats", "--store", withID]).stderr.contains("another program (SQLite application id 0x000004D2)"))
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)), ["other.db", "app.db"], "no -wal or -shm left")
    }

    func testAStoreReadOnlyOnDiskCanStillBeRead() throws {
        let store = folder.appendingPathComponent("ro/care.sqlite")
        try FileManager.default.createDirectory(at: store.deletingLastPathComponent(), withIntermediateDirectories: true)
        let made = try CLIRunner.run(["store", "generate", "--store", store.path, "--patients", "2", "--tasks", "3", "--days", "4"])
        XCTAssertEqual(made.status, 0, made.stderr)
        // Read-only file and folder, as a backup or a mounted snapshot is; the test may run as root, who
        // writes anywhere, so the commands run as an unprivileged user then.
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: store.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: store.deletingLastPathComponent().path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: store.deletingLastPathComponent().path) }
        for command in [["store", "stats"], ["store", "dump"], ["store", "events", "--patient", "patient-1", "--from", "2025-01-02", "--time-zone", "UTC"]] {
            let result = try CLIRunner.runAsUnprivilegedUser(command + ["--store", store.path])
            XCTAssertEqual(result.status, 0, "\(command): \(result.stderr)")
            XCTAssertFalse(result.stdout.isEmpty)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: store.deletingLastPathComponent().path), ["care.sqlite"])
    }

    func testGenerateIntoAMissingFolderSaysSo() throws {
        let result = try CLIRunner.run(["store", "generate", "--store", "no/such/folder/care.sqlite"], in: folder)
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stderr, "error: cannot create a store at no/such/folder/care.sqlite: the folder no/such/folder does not exist\n")
    }
}
