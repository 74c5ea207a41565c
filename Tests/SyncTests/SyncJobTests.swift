import CareModel
import FHIR
import Foundation
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// `caregate sync` end to end against the real server: the provider's resources pulled give the store
/// a direct import gives; an outcome recorded goes back once; a run with nothing new changes nothing.
final class SyncJobTests: XCTestCase {
    private func load(_ folder: String, into server: FHIRServerProcess) throws {
        try loadKeepingIDs([folder], into: server.base)
    }

    /// Fixtures/provider loaded into `server`, and a sync configuration for it with `settings`: the
    /// fixtures' path, a scratch folder, the configuration, and the path of a direct store (SQLite).
    private func fixturesOnServer(_ server: FHIRServerProcess, settings: String) throws -> (String, URL, URL, String) {
        let fixtures = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
        try load(fixtures, into: server)
        let folder = try makeScratchFolder("sync")
        let config = folder.appendingPathComponent("sync.yaml")
        try Data("server: \(server.base.absoluteString)\ntime-zone: America/Chicago\n\(settings)\n".utf8).write(to: config)
        return (fixtures, folder, config, folder.appendingPathComponent("direct.sqlite").path)
    }

    /// The current patients, care plans, contacts and tasks of `store`, by kind and id.
    private func ids(_ store: any Store) throws -> [String] {
        var all: [String] = []
        for kind in [EntityKind.patient, .carePlan, .contact, .task] {
            try store.forEachEntity(kind, .current) { all.append("\(kind) \($0.id)") }
        }
        return all.sorted()
    }

    func testSyncPullsWhatAnImportGivesAndPushesOutcomesOnce() throws {
        try forEachStore(sqliteFile: true) { tested in
            let server = try FHIRServerProcess.start()
            defer { server.stop() }
            let (fixtures, folder, config, direct) = try fixturesOnServer(server, settings: "page-size: 2")
            let synced = try XCTUnwrap(tested.location)

            let dry = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", synced, "--dry-run"])
            XCTAssertEqual(dry.status, 0, dry.stdout + dry.stderr)
            XCTAssertTrue(dry.stdout.contains("pulled CarePlan: 1 in 1 page(s): 1 created"), dry.stdout)
            XCTAssertEqual(try ids(tested.reopen()), [], "\(tested.kind): a dry run writes nothing")
            if tested.kind == .sqlite {
                // The store under test exists already: a dry run on a path with no store makes none.
                let never = folder.appendingPathComponent("never.sqlite").path
                XCTAssertEqual(try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", never, "--dry-run"]).status, 0)
                XCTAssertFalse(FileManager.default.fileExists(atPath: never), "a dry run writes nothing")
            }

            let first = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", synced, "--report", folder.appendingPathComponent("report.json").path])
            XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
            XCTAssertEqual(try CLIRunner.run(["import", fixtures, "--time-zone", "America/Chicago", "--store", direct]).status, 0)
            XCTAssertEqual(try ids(tested.reopen()), try ids(SQLiteStore(path: direct)), "\(tested.kind): the store holds what a direct import gives")
            let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("report.json"))) as? [String: Any])
            XCTAssertEqual(((report["pulled"] as? [String: Any])?["CarePlan"] as? [String: Any])?["created"] as? Int, 1)

            let added = try CLIRunner.run([
                "outcomes", "add", "--store", synced, "--task", "CarePlan/cp-1#activity-Walk-for-30-minutes", "--occurrence", "1", "--value", "true",
            ])
            XCTAssertEqual(added.status, 0, added.stderr)
            let second = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", synced])
            XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
            XCTAssertTrue(second.stdout.contains("1 acknowledged"), second.stdout)
            var observations = 0
            try FHIRClient(base: server.base).search("Observation", [("identifier", "urn:caregate:outcome|")]) { page in
                observations += page.children(named: "entry").count
                return true
            }
            XCTAssertEqual(observations, 1, "one Observation per outcome on the server")

            let third = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", synced])
            XCTAssertEqual(third.status, 0, third.stdout + third.stderr)
            XCTAssertTrue(third.stdout.contains("pushed: 0 outcome(s)"), third.stdout)
            XCTAssertFalse(third.stdout.contains(" created,") && !third.stdout.contains(" 0 created,"), "nothing new: \(third.stdout)")
        }
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
            let run = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertEqual(run.status, 2, "\(text): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains(expected), "\(text): \(run.stderr)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: store), "no store was created")
    }

    /// A folder is a server too: Fixtures/provider as the provider, a folder as the push target.
    func testAFolderAsTheProviderAndTheOutboxWrittenToAFolder() throws {
        try forEachStore(sqliteFile: true) { tested in
            let folder = try makeScratchFolder("sync-folder")
            let outbox = folder.appendingPathComponent("outbox")
            try FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true)
            let config = folder.appendingPathComponent("sync.yaml")
            let fixtures = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
            try Data("server: \(fixtures)\npush-to: \(outbox.path)\ntime-zone: America/Chicago\n".utf8).write(to: config)
            let store = try XCTUnwrap(tested.location)
            let first = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
            XCTAssertTrue(first.stdout.contains("CarePlan: 1"), first.stdout)
            XCTAssertEqual(try CLIRunner.run([
                "outcomes", "add", "--store", store, "--task", "CarePlan/cp-1#activity-Walk-for-30-minutes", "--occurrence", "1", "--value", "true",
            ]).status, 0)
            let second = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
            XCTAssertTrue(second.stdout.contains("1 unchanged") || second.stdout.contains("unchanged"), second.stdout)
            let written = try FileManager.default.contentsOfDirectory(atPath: outbox.path).filter { $0.hasPrefix("export-") }
            XCTAssertEqual(written.count, 1, "the outcome written to the push folder")
            try Data("server: \(fixtures)\n".utf8).write(to: config)
            XCTAssertEqual(try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store]).status, 2, "a folder needs push-to")
        }
    }

    /// The patient ids of Synthea files (one Patient each).
    private func patientIDs(_ files: [URL]) throws -> [String] {
        try files.map { file in
            let bundle = try FHIRDocument.read(try Data(contentsOf: file)).singleResource()
            return try XCTUnwrap(bundle.children(named: "entry").compactMap { $0.child(named: "resource") }
                .first { $0.resourceType == "Patient" }?.childValue("id"))
        }
    }

    /// The patient ids a store's care plans belong to, and its patients.
    private func patientsIn(_ store: any Store) throws -> (patients: Set<String>, planPatients: Set<String>) {
        var patients: Set<String> = [], planPatients: Set<String> = []
        try store.forEachEntity(.patient, .current) { patients.insert($0.id) }
        try store.forEachEntity(.carePlan, .current) { if case .carePlan(let plan) = $0, let id = plan.patientID { planPatients.insert(id) } }
        return (patients, planPatients)
    }

    /// A cohort narrows the pull to its patients; a patient who joins it later is pulled in full, and
    /// a Group names the members.
    func testACohortPullsOnlyItsPatientsAndANewMemberInFull() throws {
        let files = Array(try Corpus.files(in: "synthea-r4", suffix: ".json").sorted { $0.path < $1.path }.prefix(3))
        let ids = try patientIDs(files)
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        try loadKeepingIDs(files.map(\.path), into: server.base)
        let folder = try makeScratchFolder("sync-cohort")
        try forEachStore(sqliteFile: true) { tested in
            let config = folder.appendingPathComponent("sync.yaml")
            let store = try XCTUnwrap(tested.location)
            func sync(_ cohort: String) throws -> CLIRunner.Result {
                try Data("server: \(server.base.absoluteString)\ntime-zone: America/Chicago\npage-size: 50\npatients:\n\(cohort)\n".utf8).write(to: config)
                return try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            }
            let first = try sync("  ids: [\(ids[0])]")
            XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
            XCTAssertTrue(first.stderr.contains("cohort: 1 patient(s), 1 new"), first.stderr)
            var found = try patientsIn(tested.reopen())
            XCTAssertEqual(found.patients, ["Patient/\(ids[0])"])
            XCTAssertEqual(found.planPatients, ["Patient/\(ids[0])"])

            let second = try sync("  ids: [\(ids[0]), \(ids[1])]")
            XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
            XCTAssertTrue(second.stderr.contains("cohort: 2 patient(s), 1 new"), second.stderr)
            found = try patientsIn(tested.reopen())
            XCTAssertEqual(found.patients, ["Patient/\(ids[0])", "Patient/\(ids[1])"])
            XCTAssertEqual(found.planPatients, ["Patient/\(ids[0])", "Patient/\(ids[1])"], "the new member's plans pulled though older than the cursors")

            // A Group: its active members.
            _ = try FHIRClient(base: server.base).update(Element.resource("Group", children: [
                Element(name: "id", value: "program"), Element(name: "type", value: "person"), Element(name: "actual", value: "true"),
                Element(name: "member", children: [Element(name: "entity", children: [Element(name: "reference", value: "Patient/\(ids[2])")])]),
                Element(name: "member", children: [
                    Element(name: "entity", children: [Element(name: "reference", value: "Patient/\(ids[1])")]), Element(name: "inactive", value: "true"),
                ]),
            ]))
            let third = try sync("  group: Group/program")
            XCTAssertEqual(third.status, 0, third.stdout + third.stderr)
            XCTAssertTrue(third.stderr.contains("cohort: 1 patient(s), 1 new"), third.stderr)
            XCTAssertTrue(try patientsIn(tested.reopen()).patients.contains("Patient/\(ids[2])"))
        }
    }

    /// `bulk: true`: one $export, polled until its manifest comes, its NDJSON files imported; the next
    /// run exports `_since` the last one and changes nothing.
    func testABulkDataExportPullGivesWhatAnImportGives() throws {
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        let (fixtures, _, config, direct) = try fixturesOnServer(server, settings: "bulk: true")
        XCTAssertEqual(try CLIRunner.run(["import", fixtures, "--time-zone", "America/Chicago", "--store", direct]).status, 0)
        try forEachStore(sqliteFile: true) { tested in
            let synced = try XCTUnwrap(tested.location)
            let first = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", synced])
            XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
            XCTAssertTrue(first.stderr.contains("bulk export started"), first.stderr)
            XCTAssertTrue(first.stdout.contains("pulled CarePlan: 1 in 1 page(s): 1 created"), first.stdout)
            XCTAssertEqual(try ids(tested.reopen()), try ids(SQLiteStore(path: direct)), "\(tested.kind)")
            let checkpoint = try tested.reopen().checkpoint(server: server.base.absoluteString, resourceType: "$export")
            XCTAssertNotNil(checkpoint, "the export's transaction time kept for _since")

            let second = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", synced])
            XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
            XCTAssertFalse(second.stdout.contains("1 created"), second.stdout)
        }
    }

    func testCohortAndBulkSettingsAreChecked() throws {
        let folder = try makeScratchFolder("sync-config-cohort")
        let cases: [(String, String)] = [
            ("patients:\n  ids: [a]\n  group: g\n", "exactly one of"),
            ("patients:\n  idz: [a]\n", "did you mean 'ids'"),
            ("patients:\n  ids: [Patient/a]\n", "without 'Patient/'"),
            ("patients:\n  search: nonsense\n", "name=value"),
            ("patients:\n  ids: [a]\nbulk: true\n", "name the cohort with `group:`"),
            ("interval: soon\n", "30s, 5m or 1h"),
            ("max-retries: -1\n", "from 0 to 10000"),
            ("page-size: 0\n", "from 1 to 10000"),
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try SyncConfiguration.parse("server: http://127.0.0.1:9/fhir\n" + text, file: folder.appendingPathComponent("s.yaml").path)) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(text): \(error)")
            }
        }
        let parsed = try SyncConfiguration.parse(
            "server: http://127.0.0.1:9/fhir\npatients:\n  search: Patient?address-state=MA\ninterval: 2m\n", file: "s.yaml")
        XCTAssertEqual(parsed.cohort, .search("address-state=MA"))
        XCTAssertEqual(parsed.interval, 120)
    }

    /// Relative paths are the configuration file's, and a missing push-to folder is made.
    func testRelativePathsAreReadFromTheConfigurationsFolder() throws {
        let folder = try makeScratchFolder("sync-relative")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("provider"), withIntermediateDirectories: true)
        let parsed = try SyncConfiguration.parse("server: provider\npush-to: out\n", file: folder.appendingPathComponent("sync.yaml").path)
        XCTAssertEqual(parsed.server.standardizedFileURL.path, folder.appendingPathComponent("provider").standardizedFileURL.path)
        XCTAssertEqual(parsed.pushFolder, folder.appendingPathComponent("out").standardizedFileURL.path)
        var isFolder: ObjCBool = false
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder.appendingPathComponent("out").path, isDirectory: &isFolder) && isFolder.boolValue)
        XCTAssertThrowsError(try SyncConfiguration.parse("server: provider\npush-to: no/such/parent\n", file: folder.appendingPathComponent("sync.yaml").path))
    }

    /// Without --once the job repeats every interval; SIGTERM ends it after the run under way.
    func testWithoutOnceTheJobRepeatsUntilTerminated() throws {
        try forEachStore(sqliteFile: true) { tested in
            let folder = try makeScratchFolder("sync-repeat")
            let fixtures = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
            let config = folder.appendingPathComponent("sync.yaml")
            try Data("server: \(fixtures)\npush-to: out\ntime-zone: America/Chicago\ninterval: 1s\n".utf8).write(to: config)
            let run = try CLIRunner.start(["sync", "--config", config.path, "--store", try XCTUnwrap(tested.location)])
            let deadline = Date().addingTimeInterval(60)
            while run.standardErrorSoFar.components(separatedBy: "wrote 0 Observation(s)").count < 3, Date() < deadline {
                Thread.sleep(forTimeInterval: 0.2)
            }
            run.terminate()
            let result = try run.wait()
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertGreaterThanOrEqual(result.stdout.components(separatedBy: "sync with").count - 1, 2, "ran at least twice: \(result.stdout)")
        }
    }

    /// Wrong credentials, and a server answering an HTML page: exit 2, and no store made.
    func testWrongCredentialsAndAnHTMLServerAreConfigurationErrors() throws {
        let server = try FHIRServerProcess.start(settings: "server_auth:\n  types: [bearer]\n  tokens: [right-token]\n")
        defer { server.stop() }
        let folder = try makeScratchFolder("sync-credentials")
        let config = folder.appendingPathComponent("sync.yaml")
        let store = folder.appendingPathComponent("never.sqlite").path
        try Data("server: \(server.base.absoluteString)\nauth:\n  token-env: CAREGATE_TEST_SYNC_TOKEN\n".utf8).write(to: config)
        let wrong = try CLIRunner.start(["sync", "--once", "--config", config.path, "--store", store], environment: ["CAREGATE_TEST_SYNC_TOKEN": "wrong-token"]).wait()
        XCTAssertEqual(wrong.status, 2, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("refuses the configured credentials"), wrong.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: store))
        let right = try CLIRunner.start(["sync", "--once", "--config", config.path, "--store", store], environment: ["CAREGATE_TEST_SYNC_TOKEN": "right-token"]).wait()
        XCTAssertEqual(right.status, 0, right.stdout + right.stderr)

        let (process, port) = try ScriptRunner.startHTTPServerPython(answer: """
            headers = {'Content-Type': 'text/html'}
            body = b'<html><body><h1>Welcome to the portal</h1></body></html>'
            """)
        defer { process.terminate() }
        try Data("server: http://127.0.0.1:\(port)/fhir\n".utf8).write(to: config)
        let untouched = folder.appendingPathComponent("html.sqlite").path
        let html = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", untouched])
        XCTAssertEqual(html.status, 2, html.stderr)
        XCTAssertTrue(html.stderr.contains("HTML page"), html.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: untouched))
    }
}
