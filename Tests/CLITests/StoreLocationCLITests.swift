import Foundation
import TestSupport
import XCTest

/// How a user names the store on the command line: `--store`, `CAREGATE_STORE`, `store:` in the sync
/// configuration; and a `postgres://` store that cannot be reached, its password never shown.
final class StoreLocationCLITests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeScratchFolder("store-location-cli")
    }

    private func run(_ arguments: [String], environment: [String: String] = [:]) throws -> CLIRunner.Result {
        try CLIRunner.start(arguments, in: folder, environment: environment).wait()
    }

    /// A PostgreSQL store on 127.0.0.1 where nothing listens, given up on after its one-second
    /// `connect_timeout`: no traffic leaves the machine.
    private func unreachablePostgres() throws -> (url: String, redacted: String) {
        let port = try FreePort.next()
        return ("postgres://alice:hunter2@127.0.0.1:\(port)/care?connect_timeout=1", "postgres://alice:***@127.0.0.1:\(port)/care")
    }

    private func assertUnreachablePostgres(_ result: CLIRunner.Result, redacted: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 2, result.stderr, file: file, line: line)
        XCTAssertTrue(result.stderr.contains("cannot open the store: \(redacted)"), result.stderr, file: file, line: line)
        XCTAssertFalse((result.stderr + result.stdout).contains("hunter2"), result.stderr, file: file, line: line)
    }

    func testAPostgresStoreThatCannotBeReachedIsAConfigurationErrorWithoutItsPassword() throws {
        let (url, redacted) = try unreachablePostgres()
        for arguments in [["store", "stats", "--store", url], ["outbox", "--store", url]] {
            assertUnreachablePostgres(try run(arguments), redacted: redacted)
        }
        assertUnreachablePostgres(try run(["store", "stats"], environment: ["CAREGATE_STORE": url]), redacted: redacted)
    }

    func testCAREGATE_STORENamesTheStoreWhenStoreIsNotGiven() throws {
        let named = folder.appendingPathComponent("named.sqlite").path
        let generated = try run(["store", "generate", "--patients", "1", "--tasks", "1", "--days", "1"], environment: ["CAREGATE_STORE": named])
        XCTAssertEqual(generated.status, 0, generated.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: named))
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder.appendingPathComponent("caregate.sqlite").path))
        let stats = try run(["store", "stats"], environment: ["CAREGATE_STORE": named])
        XCTAssertEqual(stats.status, 0, stats.stderr)
        XCTAssertTrue(stats.stdout.contains("store \(named)"), stats.stdout)
        // --store wins over the environment.
        let other = folder.appendingPathComponent("other.sqlite").path
        let missing = try run(["store", "stats", "--store", other], environment: ["CAREGATE_STORE": named])
        XCTAssertNotEqual(missing.status, 0)
        XCTAssertTrue(missing.stderr.contains("other.sqlite"), missing.stderr)
    }

    func testNamesThatCannotBeStoresAreConfigurationErrors() throws {
        let scheme = try run(["store", "stats", "--store", "mysql://u:pw@h/db"])
        XCTAssertEqual(scheme.status, 2, scheme.stderr)
        XCTAssertTrue(scheme.stderr.contains("'mysql://' is not a store CareGate can open"), scheme.stderr)
        let port = try run(["store", "stats", "--store", "postgres://alice:hunter2@db:99999/care"])
        XCTAssertEqual(port.status, 2, port.stderr)
        XCTAssertTrue(port.stderr.contains("the port must be a number from 1 to 65535"), port.stderr)
        XCTAssertFalse(port.stderr.contains("hunter2"), port.stderr)
        let unknown = try run(["store", "stats"], environment: ["CAREGATE_STORE": "postgres://u@h/db?sslmode=require&pool=9"])
        XCTAssertEqual(unknown.status, 2, unknown.stderr)
        XCTAssertTrue(unknown.stderr.contains("parameters CareGate does not know: 'pool'"), unknown.stderr)
        let empty = try run(["store", "stats"], environment: ["CAREGATE_STORE": ""])
        XCTAssertEqual(empty.status, 2, empty.stderr)
        XCTAssertTrue(empty.stderr.contains("CAREGATE_STORE is empty"), empty.stderr)
    }

    /// `store:` in sync.yaml names the job's store (relative to the file's folder), a PostgreSQL one too.
    func testTheSyncConfigurationsStore() throws {
        let provider = folder.appendingPathComponent("provider")
        try FileManager.default.createDirectory(at: provider, withIntermediateDirectories: true)
        let configuration = try folder.writeFile("sync.yaml", "server: provider\npush-to: out\nstore: jobs/job.sqlite\n")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("jobs"), withIntermediateDirectories: true)
        let elsewhere = try makeScratchFolder("store-location-cwd")
        let synced = try CLIRunner.start(["sync", "--config", configuration, "--once"], in: elsewhere, environment: ["CAREGATE_STORE": folder.appendingPathComponent("env.sqlite").path]).wait()
        XCTAssertEqual(synced.status, 0, synced.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder.appendingPathComponent("jobs/job.sqlite").path), "store: wins over CAREGATE_STORE")
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder.appendingPathComponent("env.sqlite").path))

        let (url, redacted) = try unreachablePostgres()
        let postgres = try folder.writeFile("postgres.yaml", "server: provider\npush-to: out\nstore: \(url)\n")
        assertUnreachablePostgres(try run(["sync", "--config", postgres, "--once"]), redacted: redacted)
        // --store wins over `store:`.
        let overridden = try run(["sync", "--config", postgres, "--once", "--store", folder.appendingPathComponent("flag.sqlite").path])
        XCTAssertEqual(overridden.status, 0, overridden.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder.appendingPathComponent("flag.sqlite").path))

        let broken = try folder.writeFile("broken.yaml", "server: provider\npush-to: out\nstore: postgres://alice:hunter2@db/care?sslmode=maybe\n")
        let refused = try run(["sync", "--config", broken, "--once"])
        XCTAssertEqual(refused.status, 2, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("broken.yaml:3:8: `store:` the store URL postgres://alice:***@db/care?sslmode=maybe cannot be used"), refused.stderr)
        XCTAssertFalse(refused.stderr.contains("hunter2"), refused.stderr)
    }
}
