import Foundation
import TestSupport
import XCTest

/// The provider's side on a PostgreSQL store (a real server the test starts) as on SQLite: `caregate sync`
/// from a folder with `store:` in its configuration, `outcomes add`, `export` to a folder, and the sync
/// job's push, each saying the same on both stores.
final class PostgresSyncCLITests: XCTestCase {
    func testSyncOutcomesAndExportSayTheSameOnPostgreSQLAsOnSQLite() throws {
        let folder = try makeScratchFolder("postgres-sync")
        let server = try PostgresServerProcess.start()
        defer { server.stop() }
        let provider = folder.appendingPathComponent("provider")
        try FileManager.default.copyItem(at: Corpus.projectRoot.appendingPathComponent("Fixtures/provider"), to: provider)
        let postgres = try story(
            store: "postgres://\(server.user)@\(server.host):\(server.port)/\(server.database)?sslmode=disable&connect_timeout=5", label: "postgres",
            in: folder, environment: ["PGPASSWORD": server.password], hiding: server.password)
        let sqlite = try story(store: folder.appendingPathComponent("care.sqlite").path, label: "sqlite", in: folder, environment: [:], hiding: server.password)
        XCTAssertTrue(sqlite.contains { $0.contains("exported 1 Observation(s) for 1 outbox entry") }, sqlite.joined(separator: "\n"))
        XCTAssertTrue(sqlite.contains { $0.contains("pushed: 1 outcome(s): 1 acknowledged") }, sqlite.joined(separator: "\n"))
        let common = min(postgres.count, sqlite.count)
        if let first = (0..<common).first(where: { postgres[$0] != sqlite[$0] }) ?? (postgres.count == sqlite.count ? nil : common) {
            XCTFail("PostgreSQL (\(postgres.count) lines) and SQLite (\(sqlite.count) lines) differ first at line \(first + 1):\n"
                + "PostgreSQL: \(first < postgres.count ? postgres[first] : "(none)")\nSQLite:     \(first < sqlite.count ? sqlite[first] : "(none)")")
        }
    }

    /// What the commands say of `store` (standard output and error), their timings, paths and uuids left out: a first sync (the
    /// configuration's `store:` names it), an outcome added and exported to a folder, another added and
    /// pushed by a second sync, the outbox and the runs' history.
    private func story(store: String, label: String, in folder: URL, environment: [String: String], hiding password: String) throws -> [String] {
        let configuration = try folder.writeFile("\(label).yaml", "server: provider\npush-to: out-\(label)\nstore: \(store)\ntime-zone: UTC\n")
        let exports = folder.appendingPathComponent("exports-\(label)")
        try FileManager.default.createDirectory(at: exports, withIntermediateDirectories: true)
        let task = "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic"
        let steps: [[String]] = [
            ["sync", "--config", configuration, "--once"],
            ["outcomes", "add", "--store", store, "--task", task, "--occurrence", "0", "--value", "128", "--unit", "mm[Hg]"],
            ["export", "--store", store, "--to", exports.path + "/"],
            ["outcomes", "add", "--store", store, "--task", task, "--occurrence", "1", "--value", "131", "--unit", "mm[Hg]"],
            ["sync", "--config", configuration, "--once"],
            ["outbox", "--store", store],
            ["store", "sync-runs", "--store", store],
        ]
        let uuid = try NSRegularExpression(pattern: "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
        let varying = try NSRegularExpression(pattern: "[0-9]+\\.[0-9]+|run=[0-9a-f]+|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]+Z| to /.*$|with /[^:]*:")
        var said: [String] = []
        for arguments in steps {
            let result = try CLIRunner.start(arguments, in: folder, environment: environment).wait()
            XCTAssertEqual(result.status, 0, "\(arguments.prefix(2)): \(result.stderr)")
            XCTAssertFalse((result.stdout + result.stderr).contains(password), "\(arguments.prefix(2)) showed the password")
            for line in (result.stdout + result.stderr).split(separator: "\n") {
                var text = String(line)
                for pattern in [uuid, varying] {
                    text = pattern.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: "<>")
                }
                said.append("\(arguments.prefix(2).joined(separator: " ")): \(text)")
            }
        }
        return said
    }
}
