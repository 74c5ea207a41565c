import CareModel
import FHIR
import Foundation
import Store
import Sync
import TestSupport
import XCTest

/// `caregate sync` end to end against the real server: the provider's resources pulled give the store
/// a direct import gives; an outcome recorded goes back once; a run with nothing new changes nothing.
final class SyncJobTests: XCTestCase {
    private func load(_ folder: String, into server: FHIRServerProcess) throws {
        let client = FHIRClient(base: server.base)
        for source in FHIRInput.sources(for: [folder]) {
            try FHIRInput.forEachEntry(of: source) { entry, _ in
                _ = try client.update(try entry.result.get())
            }
        }
    }

    private func ids(_ store: SQLiteStore) throws -> [String] {
        var all: [String] = []
        for kind in [EntityKind.patient, .carePlan, .contact, .task] {
            try store.forEachEntity(kind, .current) { all.append("\(kind) \($0.id)") }
        }
        return all.sorted()
    }

    func testSyncPullsWhatAnImportGivesAndPushesOutcomesOnce() throws {
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        let fixtures = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
        try load(fixtures, into: server)
        let folder = try makeScratchFolder("sync")
        let config = folder.appendingPathComponent("sync.yaml")
        try Data("server: \(server.base.absoluteString)\ntime-zone: America/Chicago\npage-size: 2\n".utf8).write(to: config)
        let synced = folder.appendingPathComponent("synced.sqlite").path
        let direct = folder.appendingPathComponent("direct.sqlite").path

        let dry = try CLIRunner.run(["sync", "--config", config.path, "--store", synced, "--dry-run"])
        XCTAssertEqual(dry.status, 0, dry.stdout + dry.stderr)
        XCTAssertTrue(dry.stdout.contains("pulled CarePlan: 1 in 1 page(s): 1 created"), dry.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: synced), "a dry run writes nothing")

        let first = try CLIRunner.run(["sync", "--config", config.path, "--store", synced, "--report", folder.appendingPathComponent("report.json").path])
        XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
        XCTAssertEqual(try CLIRunner.run(["import", fixtures, "--time-zone", "America/Chicago", "--store", direct]).status, 0)
        XCTAssertEqual(try ids(SQLiteStore(path: synced)), try ids(SQLiteStore(path: direct)), "the store holds what a direct import gives")
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("report.json"))) as? [String: Any])
        XCTAssertEqual(((report["pulled"] as? [String: Any])?["CarePlan"] as? [String: Any])?["created"] as? Int, 1)

        let added = try CLIRunner.run([
            "outcomes", "add", "--store", synced, "--task", "CarePlan/cp-1#activity-Walk-for-30-minutes", "--occurrence", "1", "--value", "true",
        ])
        XCTAssertEqual(added.status, 0, added.stderr)
        let second = try CLIRunner.run(["sync", "--config", config.path, "--store", synced])
        XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
        XCTAssertTrue(second.stdout.contains("1 acknowledged"), second.stdout)
        var observations = 0
        try FHIRClient(base: server.base).search("Observation", [("identifier", "urn:caregate:outcome|")]) { page in
            observations += page.children(named: "entry").count
            return true
        }
        XCTAssertEqual(observations, 1, "one Observation per outcome on the server")

        let third = try CLIRunner.run(["sync", "--config", config.path, "--store", synced])
        XCTAssertEqual(third.status, 0, third.stdout + third.stderr)
        XCTAssertTrue(third.stdout.contains("pushed: 0 outcome(s)"), third.stdout)
        XCTAssertFalse(third.stdout.contains(" created,") && !third.stdout.contains(" 0 created,"), "nothing new: \(third.stdout)")
    }

    func testBadConfigurationIsExitTwoAndTouchesNothing() throws {
        let folder = try makeScratchFolder("sync-config")
        let store = folder.appendingPathComponent("never.sqlite").path
        let cases: [(String, String)] = [
            ("server: http://127.0.0.1:9/fhir\npage-sise: 10\n", "did you mean 'page-size'"),
            ("server: not a url\n", "must be an http(s) URL"),
            ("server: http://127.0.0.1:9/fhir\nauth:\n  token-env: CAREGATE_TEST_NO_SUCH_TOKEN\n", "CAREGATE_TEST_NO_SUCH_TOKEN"),
            ("server: http://127.0.0.1:9/fhir\n", "does not answer as a FHIR server"),
        ]
        for (text, expected) in cases {
            let config = folder.appendingPathComponent("sync.yaml")
            try Data(text.utf8).write(to: config)
            let run = try CLIRunner.run(["sync", "--config", config.path, "--store", store])
            XCTAssertEqual(run.status, 2, "\(text): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains(expected), "\(text): \(run.stderr)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: store), "no store was created")
    }

    /// A folder is a server too: Fixtures/provider as the provider, a folder as the push target.
    func testAFolderAsTheProviderAndTheOutboxWrittenToAFolder() throws {
        let folder = try makeScratchFolder("sync-folder")
        let outbox = folder.appendingPathComponent("outbox")
        try FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true)
        let config = folder.appendingPathComponent("sync.yaml")
        let fixtures = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
        try Data("server: \(fixtures)\npush-to: \(outbox.path)\ntime-zone: America/Chicago\n".utf8).write(to: config)
        let store = folder.appendingPathComponent("s.sqlite").path
        let first = try CLIRunner.run(["sync", "--config", config.path, "--store", store])
        XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
        XCTAssertTrue(first.stdout.contains("CarePlan: 1"), first.stdout)
        XCTAssertEqual(try CLIRunner.run([
            "outcomes", "add", "--store", store, "--task", "CarePlan/cp-1#activity-Walk-for-30-minutes", "--occurrence", "1", "--value", "true",
        ]).status, 0)
        let second = try CLIRunner.run(["sync", "--config", config.path, "--store", store])
        XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
        XCTAssertTrue(second.stdout.contains("1 unchanged") || second.stdout.contains("unchanged"), second.stdout)
        let written = try FileManager.default.contentsOfDirectory(atPath: outbox.path).filter { $0.hasPrefix("export-") }
        XCTAssertEqual(written.count, 1, "the outcome written to the push folder")
        try Data("server: \(fixtures)\n".utf8).write(to: config)
        XCTAssertEqual(try CLIRunner.run(["sync", "--config", config.path, "--store", store]).status, 2, "a folder needs push-to")
    }
}
