import Foundation
import TestSupport
import XCTest

/// What the commands write is their user's only, whatever the umask (issue 41, items 4 and 6): the store
/// and every file beside it, exports, reports, the sync's report and push folder 0600 / 0700 under umask
/// 022; a store others may read is reported by the commands that open it for writing; a key file another
/// user owns is refused by `caregate patients token` as by `serve`.
final class FilePermissionCLITests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeScratchFolder("file-permission-cli")
    }

    /// Runs `body` with umask 022 in this process, which the commands it starts inherit (restored after).
    private func withUmask022<T>(_ body: () throws -> T) rethrows -> T {
        let previous = umask(0o022)
        defer { umask(previous) }
        return try body()
    }

    @discardableResult
    private func succeed(_ arguments: [String]) throws -> CLIRunner.Result {
        let result = try CLIRunner.run(arguments)
        XCTAssertEqual(result.status, 0, "caregate \(arguments.joined(separator: " ")): \(result.stderr)")
        return result
    }

    /// Every file and folder under `root` (itself excluded) with its mode, by path relative to `root`.
    private func modes(under root: URL) throws -> [String: Int] {
        var found: [String: Int] = [:]
        let enumerator = try XCTUnwrap(FileManager.default.enumerator(atPath: root.path))
        while let name = enumerator.nextObject() as? String {
            let attributes = try FileManager.default.attributesOfItem(atPath: root.appendingPathComponent(name).path)
            found[name] = (attributes[.posixPermissions] as? NSNumber)?.intValue
        }
        return found
    }

    func testCommandsWriteOwnerOnlyFilesUnderUmask022() throws {
        let store = folder.appendingPathComponent("s.sqlite").path
        let out = folder.appendingPathComponent("out")
        XCTAssertEqual(mkdir(out.path, 0o700), 0)
        let provider = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
        // The test's own file (the only one here CareGate does not write).
        let config = try folder.writeFile("sync.yaml", "server: \(provider)\npush-to: pushed\ntime-zone: America/Chicago\n")
        try withUmask022 {
            try succeed(["sync", "--config", config, "--store", store, "--once", "--report", folder.appendingPathComponent("run.json").path])
            try succeed([
                "outcomes", "add", "--store", store, "--task", "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic", "--occurrence", "10",
                "--value", "120", "--value", "80", "--unit", "mm[Hg]", "--kind", "http://loinc.org|8480-6", "--kind", "http://loinc.org|8462-4",
            ])
            try succeed(["export", "--store", store, "--to", out.path])
            try succeed(["patients", "report", "--store", store, "--patient", "Patient/pat-1", "--from", "2025-01-01", "--to", "2025-01-31",
                         "--format", "html", "--output", folder.appendingPathComponent("report.html").path])
            try succeed(["convert", provider + "/CarePlan-cp-1.json", "--to", "carekit", "--output", folder.appendingPathComponent("converted.json").path])
            try succeed(["patients", "token", "--store", store, "--key", folder.appendingPathComponent("server.key").path, "--patient", "Patient/pat-1"])
        }
        let found = try modes(under: folder)
        for name in ["s.sqlite", "s.sqlite-lock", "out", "pushed", "run.json", "report.html", "converted.json", "server.key"] {
            XCTAssertNotNil(found[name], "\(name) was made: \(found.keys.sorted())")
        }
        XCTAssertTrue(found.keys.contains { $0.hasPrefix("out/export-") }, "an export file: \(found.keys.sorted())")
        for (name, mode) in found.sorted(by: { $0.key < $1.key }) where name != "sync.yaml" {
            var isFolder: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path, isDirectory: &isFolder)
            XCTAssertEqual(mode, isFolder.boolValue ? 0o700 : 0o600, "\(name): \(String(mode, radix: 8))")
        }
    }

    func testAStoreOthersMayReadIsReportedByTheCommandsThatWriteIt() throws {
        let store = folder.appendingPathComponent("s.sqlite").path
        try succeed(["import", "Fixtures/provider", "--time-zone", "America/Chicago", "--store", store])
        let out = folder.appendingPathComponent("out")
        XCTAssertEqual(mkdir(out.path, 0o700), 0)
        XCTAssertFalse(try succeed(["export", "--store", store, "--to", out.path]).stderr.contains("warning: other users"))
        XCTAssertEqual(chmod(store, 0o644), 0)
        let export = try succeed(["export", "--store", store, "--to", out.path])
        XCTAssertTrue(export.stderr.contains("warning: other users of this machine may read the store's files: \(store) (mode 644)"), export.stderr)
        XCTAssertTrue(export.stderr.contains("chmod 600 '\(store)'"), export.stderr)
        // A command that only reads the store says nothing (it writes nothing others could read).
        XCTAssertFalse(try succeed(["outbox", "--store", store]).stderr.contains("warning: other users"))
        let again = try succeed(["import", "Fixtures/provider", "--time-zone", "America/Chicago", "--store", store])
        XCTAssertTrue(again.stderr.contains("chmod 600 '\(store)'"), again.stderr)
    }

    func testPatientsTokenRefusesAKeyAnotherUserOwnsOrOneInAFolderOthersMayWrite() throws {
        let store = folder.appendingPathComponent("s.sqlite").path
        try succeed(["import", "Fixtures/provider", "--time-zone", "America/Chicago", "--store", store])
        let open = folder.appendingPathComponent("open")
        XCTAssertEqual(mkdir(open.path, 0o700), 0)
        XCTAssertEqual(chmod(open.path, 0o777), 0)
        let key = open.appendingPathComponent("server.key").path
        let refused = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "Patient/pat-1"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("the key file \(key) is in a folder others control, \(open.path)"), refused.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: key), "no key is made there")

        guard geteuid() == 0 else {
            print("notice: FilePermissionCLITests: a key of another owner needs root to make (chown); that part skipped")
            return
        }
        let planted = folder.appendingPathComponent("planted.key").path
        try succeed(["patients", "token", "--store", store, "--key", planted, "--patient", "Patient/pat-1"])
        XCTAssertEqual(chown(planted, 65_534, 65_534), 0)
        let theirs = try CLIRunner.run(["patients", "token", "--store", store, "--key", planted, "--patient", "Patient/pat-1"])
        XCTAssertNotEqual(theirs.status, 0)
        XCTAssertTrue(theirs.stderr.contains("the key file \(planted) belongs to nobody (uid 65534)"), theirs.stderr)
        XCTAssertEqual(theirs.stdout, "", "no token")

        // The tester's case: `serve` run as root on a key `nobody` planted stops before it listens.
        let serve = try CLIRunner.start(["serve", "--store", store, "--key", planted, "--host", "127.0.0.1", "--port", "0"])
        for _ in 0..<300 where serve.isRunning { usleep(100_000) }
        if serve.isRunning {
            serve.terminate()
            XCTFail("serve accepted a key another user owns")
        }
        let served = try serve.wait()
        XCTAssertNotEqual(served.status, 0)
        XCTAssertTrue(served.stderr.contains("belongs to nobody (uid 65534)"), served.stderr)
    }
}
