import Foundation
import GRDB
import Store
import TestSupport
import XCTest

/// `caregate sync` records each run in the store (`caregate store sync-runs` lists them), a record that
/// cannot be written leaves the run's exit status alone, and `caregate import --coverage` keeps its coverage.
final class OperationsHistoryCLITests: XCTestCase {
    private let provider = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path

    private func syncConfig(_ folder: URL) throws -> String {
        try folder.writeFile("sync.yaml", "server: \(provider)\npush-to: \(folder.appendingPathComponent("out").path)\ntime-zone: America/Chicago\n")
    }

    func testEachSyncRunIsRecordedWithItsRunIdAndListedNewestFirst() throws {
        let folder = try makeScratchFolder("sync-runs")
        let store = folder.appendingPathComponent("s.sqlite").path
        let config = try syncConfig(folder)
        for _ in 0..<2 {
            let run = try CLIRunner.run(["sync", "--once", "--config", config, "--store", store, "--log-format", "json"])
            XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        }
        let dry = try CLIRunner.run(["sync", "--once", "--dry-run", "--config", config, "--store", store])
        XCTAssertEqual(dry.status, 0, dry.stderr)

        let listed = try CLIRunner.run(["store", "sync-runs", "--store", store, "--format", "json"])
        XCTAssertEqual(listed.status, 0, listed.stderr)
        let runs = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(runs.count, 2, "a dry run records nothing")
        XCTAssertEqual(runs.map { $0["id"] as? Int }, [2, 1], "newest first")
        XCTAssertEqual(runs.first?["result"] as? String, "ok")
        XCTAssertEqual((runs.last?["counts"] as? [String: Any])?["pulled"] as? Int, 8, "\(runs)")
        XCTAssertNil(runs.first?["report"], "a list carries no report")

        let text = try CLIRunner.run(["store", "sync-runs", "--store", store, "--limit", "1"])
        XCTAssertEqual(text.stdout.split(separator: "\n").count, 1)
        XCTAssertTrue(text.stdout.hasPrefix("#2 run="), text.stdout)
        let shown = try CLIRunner.run(["store", "sync-runs", "show", "1", "--store", store])
        XCTAssertEqual(shown.status, 0, shown.stderr)
        XCTAssertTrue(shown.stdout.contains("\"pulled\""), shown.stdout)
        let missing = try CLIRunner.run(["store", "sync-runs", "show", "9", "--store", store])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("no sync run #9"), missing.stderr)
        XCTAssertEqual(try CLIRunner.run(["store", "sync-runs", "--limit", "0", "--store", store]).status, 2, "a usage error")
    }

    func testTheRecordCarriesTheRunIdOfTheLogLines() throws {
        let folder = try makeScratchFolder("sync-run-id")
        let store = folder.appendingPathComponent("s.sqlite").path
        let run = try CLIRunner.run(["sync", "--once", "--config", try syncConfig(folder), "--store", store, "--log-format", "json", "--log-level", "info"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let ids = Set(run.stderr.split(separator: "\n").compactMap { line -> String? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return object["run"] as? String ?? (object["metadata"] as? [String: Any])?["run"] as? String
        })
        let recorded = try XCTUnwrap(SQLiteStore(path: store, mode: .readOnly).syncRuns(limit: 1).first)
        XCTAssertEqual(ids, [recorded.runID], run.stderr)
    }

    func testARecordThatCannotBeWrittenIsAWarningAndTheRunKeepsItsExitStatus() throws {
        let folder = try makeScratchFolder("sync-run-unrecorded")
        let store = folder.appendingPathComponent("s.sqlite").path
        _ = try SQLiteStore(path: store)
        let queue = try DatabaseQueue(path: store)
        try queue.write { db in
            try db.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON syncRun BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")
        }
        let run = try CLIRunner.run(["sync", "--once", "--config", try syncConfig(folder), "--store", store])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stderr.contains("the run was not recorded in the store's history of sync runs"), run.stderr)
        XCTAssertTrue(run.stdout.contains("pulled CarePlan: 1 read: 1 created"), run.stdout)
    }

    func testAnImportWithCoverageKeepsItInTheStoreAndADryRunDoesNot() throws {
        let folder = try makeScratchFolder("import-coverage")
        let store = folder.appendingPathComponent("s.sqlite").path
        let dry = try CLIRunner.run(["import", provider, "--store", store, "--coverage", "--dry-run", "--time-zone", "America/Chicago"])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: store))
        let run = try CLIRunner.run(["import", provider, "--store", store, "--coverage", "--time-zone", "America/Chicago"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let record = try XCTUnwrap(SQLiteStore(path: store, mode: .readOnly).lastImportCoverage())
        XCTAssertEqual(record.resourcesRead, 8)
        XCTAssertEqual(record.counts.values.reduce(0, +), 8, "every resource read is counted once")
        XCTAssertGreaterThan(record.pathCount, 0)
        for (type, paths) in record.coverage {
            for path in paths.keys { XCTAssertTrue(run.stdout.contains("  \(path)  "), "\(type): \(path) is in the printed coverage") }
        }
    }

    func testASyncWithCoverageKeepsWhatAnImportOfTheSameResourcesWouldAndADryRunKeepsNothing() throws {
        let folder = try makeScratchFolder("sync-coverage")
        let imported = folder.appendingPathComponent("imported.sqlite").path
        XCTAssertEqual(try CLIRunner.run(["import", provider, "--store", imported, "--coverage", "--time-zone", "America/Chicago"]).status, 0)
        let expected = try XCTUnwrap(SQLiteStore(path: imported, mode: .readOnly).lastImportCoverage())

        let config = try folder.writeFile(
            "sync.yaml", "server: \(provider)\npush-to: \(folder.appendingPathComponent("out").path)\ntime-zone: America/Chicago\ncoverage: true\n")
        let store = folder.appendingPathComponent("synced.sqlite").path
        let dry = try CLIRunner.run(["sync", "--once", "--dry-run", "--config", config, "--store", store])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        let run = try CLIRunner.run(["sync", "--once", "--config", config, "--store", store])
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        let record = try XCTUnwrap(SQLiteStore(path: store, mode: .readOnly).lastImportCoverage(), "the run kept its coverage")
        XCTAssertEqual(record.resourcesRead, expected.resourcesRead)
        XCTAssertEqual(record.coverage, expected.coverage, "the same elements unread as the import's")
        XCTAssertEqual(record.counts["created"], expected.counts["created"])

        let bad = try folder.writeFile("bad.yaml", "server: \(provider)\npush-to: \(folder.path)/out\ncoverage: often\n")
        let refused = try CLIRunner.run(["sync", "--once", "--config", bad, "--store", store])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("`coverage:` is true or false"), refused.stderr)
    }
}
