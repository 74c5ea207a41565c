import Foundation
import Store
import Sync
import TestSupport
import XCTest

/// Issue 47's acceptance run: four `caregate sync` workers started together on one PostgreSQL store
/// against a real FHIR server (sekmet-fhir) loaded with Synthea records, one of them killed with SIGKILL
/// at random moments and started again. The store ends as one worker alone leaves a SQLite store (the
/// dump, version uuids normalised), and the outcomes recorded go to the server once each.
final class PostgresSyncWorkersTests: XCTestCase {
    private func assertSameLines(_ actual: [String], _ expected: [String], _ message: String, line: UInt = #line) {
        let missing = Set(expected).subtracting(actual), extra = Set(actual).subtracting(expected)
        XCTAssertTrue(missing.isEmpty && extra.isEmpty && actual.count == expected.count,
                      "\(message): \(missing.count) missing, e.g. \(missing.sorted().prefix(3)); \(extra.count) extra, e.g. \(extra.sorted().prefix(3)); \(actual.count) vs \(expected.count) lines",
                      line: line)
    }

    /// Four workers at once on `store`; worker 0 is killed at random moments `kills` times, each time
    /// started again; every worker that was not killed ends with status 0.
    private func runFourWorkers(config: String, store: String, kills: Int, maximum: Double) throws {
        var generator = SystemRandomNumberGenerator()
        var workers = try (0..<4).map { _ in try CLIRunner.start(["sync", "--once", "--config", config, "--store", store]) }
        for _ in 0..<kills {
            Thread.sleep(forTimeInterval: Double.random(in: 0.05...maximum, using: &generator))
            workers[0].kill()
            _ = try? workers[0].wait()
            workers[0] = try CLIRunner.start(["sync", "--once", "--config", config, "--store", store])
        }
        for (index, worker) in workers.enumerated() {
            let result = try worker.wait()
            XCTAssertEqual(result.status, 0, "worker \(index): \(result.stdout)\(result.stderr)")
        }
    }

    func testFourWorkersOneKilledAtRandomEndAsOneWorkerAlone() throws {
        let files = Array(try Corpus.files(in: "synthea-r4", suffix: ".json").sorted { $0.path < $1.path }.prefix(3))
        let database = try PostgresServerProcess.start()
        defer { database.stop() }
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        try loadKeepingIDs(files.map(\.path), into: server.base)
        let folder = try makeScratchFolder("postgres-sync-workers")
        let config = try writeConfig(server.base, in: folder, pageSize: 50)
        let alone = folder.appendingPathComponent("alone.sqlite").path
        let shared = database.url

        let single = try CLIRunner.run(["sync", "--once", "--config", config, "--store", alone])
        XCTAssertEqual(single.status, 0, single.stdout + single.stderr)

        try runFourWorkers(config: config, store: shared, kills: 3, maximum: 2.5)
        let last = try CLIRunner.run(["sync", "--once", "--config", config, "--store", shared])
        XCTAssertEqual(last.status, 0, last.stdout + last.stderr)
        assertSameLines(try NormalizedDump.ofStore(shared, allVersions: true), try NormalizedDump.ofStore(alone, allVersions: true), "four workers, one killed, left what one worker leaves")

        // Outcomes recorded on the shared store go back once each, whoever pushes them.
        let tasks = try plannedTasks(alone, count: 3)
        try record(on: tasks, store: shared)
        try runFourWorkers(config: config, store: shared, kills: 2, maximum: 1.5)
        let pushed = try CLIRunner.run(["sync", "--once", "--config", config, "--store", shared])
        XCTAssertEqual(pushed.status, 0, pushed.stdout + pushed.stderr)
        XCTAssertEqual(try observationCount(server.base), 3, "each outcome once on the server")
        let outbox = try CLIRunner.run(["outbox", "list", "--store", shared])
        XCTAssertEqual(outbox.status, 0, outbox.stderr)
        let entries = outbox.stdout.split(separator: "\n")
        XCTAssertEqual(entries.count, 3, outbox.stdout)
        XCTAssertTrue(entries.allSatisfy { $0.contains("  acknowledged  ") }, "every entry acknowledged: \(outbox.stdout)")
        let stats = try CLIRunner.run(["store", "stats", "--store", shared])
        XCTAssertEqual(stats.status, 0, "the store's integrity check passes: \(stats.stdout)\(stats.stderr)")
    }
}
