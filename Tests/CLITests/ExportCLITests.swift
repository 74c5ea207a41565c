import Foundation
import TestSupport
import XCTest

/// `caregate outcomes add`, `export` and `outbox` as a user runs them, and an export killed (SIGKILL) at
/// each point of its commit.
final class ExportCLITests: XCTestCase {
    private let bloodPressure = "CarePlan/cp-1#activity-85354-9"

    /// A store with Fixtures/provider imported and `count` outcomes recorded through the CLI.
    private func storeWithOutcomes(_ count: Int) throws -> (store: String, folder: URL) {
        let folder = try makeScratchFolder("export-cli")
        let store = folder.appendingPathComponent("s.sqlite").path
        let imported = try CLIRunner.run(["import", "Fixtures/provider", "--time-zone", "America/Chicago", "--store", store])
        XCTAssertEqual(imported.status, 0, imported.stderr)
        for occurrence in 0..<count {
            let added = try CLIRunner.run([
                "outcomes", "add", "--store", store, "--task", bloodPressure, "--occurrence", "\(occurrence + 10)",
                "--value", "\(120 + occurrence)", "--value", "80", "--unit", "mm[Hg]",
                "--kind", "http://loinc.org|8480-6", "--kind", "http://loinc.org|8462-4",
            ])
            XCTAssertEqual(added.status, 0, added.stderr)
        }
        return (store, folder)
    }

    private func outbox(_ store: String, state: String) throws -> Int {
        let listed = try CLIRunner.run(["outbox", "--store", store, "--state", state])
        XCTAssertEqual(listed.status, 0, listed.stderr)
        return listed.stdout.split(separator: "\n").count
    }

    private func exported(in folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("export-") }.sorted()
    }

    private func observationCount(in folder: URL) throws -> Int {
        try exported(in: folder).reduce(0) { total, name in
            let bundle = try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent(name))) as? [String: Any]
            let entries = bundle?["entry"] as? [[String: Any]] ?? []
            return total + entries.filter { ($0["resource"] as? [String: Any])?["resourceType"] as? String == "Observation" }.count
        }
    }

    func testAddExportAndExportAgain() throws {
        let (store, folder) = try storeWithOutcomes(3)
        let out = folder.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        XCTAssertEqual(try outbox(store, state: "pending"), 3)
        let first = try CLIRunner.run(["export", "--store", store, "--to", out.path])
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(first.stderr.contains("exported 3 Observation(s)"), first.stderr)
        let files = try exported(in: out)
        XCTAssertEqual(files.count, 1)
        let validated = try CLIRunner.run(["validate", out.appendingPathComponent(files[0]).path])
        XCTAssertEqual(validated.status, 0, validated.stdout + validated.stderr)
        XCTAssertEqual(try outbox(store, state: "sent"), 3)
        let again = try CLIRunner.run(["export", "--store", store, "--to", out.path])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try exported(in: out).count, 1, "nothing new to write")

        let bad = try CLIRunner.run(["outcomes", "add", "--store", store, "--task", "no-such-task", "--occurrence", "0", "--value", "1"])
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(bad.stderr.contains("no task 'no-such-task'"), bad.stderr)
        let noOccurrence = try CLIRunner.run(["outcomes", "add", "--store", store, "--task", bloodPressure, "--occurrence", "-1", "--value", "1"])
        XCTAssertEqual(noOccurrence.status, 2, noOccurrence.stderr)
        let badTime = try CLIRunner.run(["outcomes", "add", "--store", store, "--task", bloodPressure, "--occurrence", "1", "--value", "1", "--time", "2026-02-30T08:00:00Z"])
        XCTAssertEqual(badTime.status, 2, "an impossible date is a usage error: \(badTime.stderr)")
    }

    /// An app's outcomes in CareKit JSON (the task version named by the uuid `store dump` shows) are
    /// stored, queued, and exported; a file naming an unknown task version stores nothing.
    func testOutcomesImportFromCareKitJSONThenExport() throws {
        let (store, folder) = try storeWithOutcomes(0)
        let dump = try CLIRunner.run(["store", "dump", "--store", store, "--format", "carekit-json", "--patient", "Patient/pat-1"])
        XCTAssertEqual(dump.status, 0, dump.stderr)
        let entities = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let tasks = try XCTUnwrap(entities["tasks"] as? [[String: Any]])
        let uuid = try XCTUnwrap(tasks.first { $0["id"] as? String == bloodPressure }?["uuid"] as? String)
        // As CareKit 4.0 encodes an OCKOutcome: its own random id and version uuid, every value dated.
        let outcome: [String: Any] = [
            "id": UUID().uuidString, "uuid": UUID().uuidString, "nextVersionUUIDs": [], "previousVersionUUIDs": [],
            "timezone": ["identifier": "America/Chicago"],
            "taskUUID": uuid, "taskOccurrenceIndex": 5, "effectiveDate": 815_580_000, "source": "HeartApp",
            "values": [["type": "integer", "value": 126, "units": "mm[Hg]", "kind": "http://loinc.org|8480-6", "createdDate": 815_580_000],
                       ["type": "integer", "value": 79, "units": "mm[Hg]", "kind": "http://loinc.org|8462-4", "createdDate": 815_580_000]],
        ]
        let file = folder.appendingPathComponent("app-outcomes.json")
        try JSONSerialization.data(withJSONObject: [outcome]).write(to: file)
        let imported = try CLIRunner.run(["outcomes", "import", file.path, "--store", store])
        XCTAssertEqual(imported.status, 0, imported.stderr)
        XCTAssertTrue(imported.stdout.contains("1 new") && imported.stdout.contains("1 queued for export"), imported.stdout)
        XCTAssertEqual(try outbox(store, state: "pending"), 1)
        let exportFile = folder.appendingPathComponent("bundle.json").path
        let export = try CLIRunner.run(["export", "--store", store, "--to", exportFile])
        XCTAssertEqual(export.status, 0, export.stderr)
        XCTAssertTrue(try String(contentsOfFile: exportFile, encoding: .utf8).contains("\"HeartApp\""), "the app is the Observation's device")

        var unknown = outcome
        unknown["taskUUID"] = UUID().uuidString
        try JSONSerialization.data(withJSONObject: [outcome, unknown]).write(to: file)
        let refused = try CLIRunner.run(["outcomes", "import", file.path, "--store", store])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("outcome [1]") && refused.stderr.contains("nothing was imported"), refused.stderr)
        XCTAssertEqual(try outbox(store, state: "pending"), 0)
        let missing = try CLIRunner.run(["outcomes", "import", folder.appendingPathComponent("missing.json").path, "--store", store])
        XCTAssertEqual(missing.status, 2, "a missing input is a usage error, as for every command: \(missing.stderr)")
    }

    func testABinaryOutcomeIsADeadLetterAndRetryRequeuesIt() throws {
        let (store, folder) = try storeWithOutcomes(1)
        let added = try CLIRunner.run(["outcomes", "add", "--store", store, "--task", bloodPressure, "--occurrence", "2", "--type", "binary", "--value", "AAEC"])
        XCTAssertEqual(added.status, 0, added.stderr)
        let out = folder.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let export = try CLIRunner.run(["export", "--store", store, "--to", out.path])
        XCTAssertEqual(export.status, 1, "a refused outcome is a failure the scheduler sees")
        XCTAssertTrue(export.stderr.contains("binary data"), export.stderr)
        XCTAssertEqual(try observationCount(in: out), 1, "the rest of the batch went")
        let failed = try CLIRunner.run(["outbox", "--store", store, "--state", "failed"])
        let id = try XCTUnwrap(failed.stdout.split(separator: " ").first.map { String($0.dropFirst()) })
        let retry = try CLIRunner.run(["outbox", "retry", id, "--store", store])
        XCTAssertEqual(retry.status, 0, retry.stderr)
        XCTAssertEqual(try CLIRunner.run(["outbox", "retry", id, "--store", store]).status, 0, "still failed-with-retry: may be requeued again")
        XCTAssertEqual(try CLIRunner.run(["outbox", "retry", "999", "--store", store]).status, 1)
    }

    /// Killed after writing the partial file, before the commit: nothing is sent; the next run discards
    /// the partial file and sends everything, once.
    func testKilledBeforeTheCommitSendsEverythingNextTime() throws {
        try assertKill(at: "export-written", sentAfterKill: 0)
    }

    /// Killed after the commit, before the rename: everything is sent; the next run puts the file in
    /// place and sends nothing again.
    func testKilledAfterTheCommitFinishesTheFileNextTime() throws {
        try assertKill(at: "export-committed", sentAfterKill: 4)
    }

    private func assertKill(at point: String, sentAfterKill: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        let (store, folder) = try storeWithOutcomes(4)
        let out = folder.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let running = try CLIRunner.start(["export", "--store", store, "--to", out.path], environment: ["CAREGATE_FAULT_PAUSE": point])
        let deadline = Date().addingTimeInterval(60)
        while !running.standardErrorSoFar.contains("paused at \(point)") && running.isRunning && Date() < deadline { usleep(20_000) }
        XCTAssertTrue(running.standardErrorSoFar.contains("paused at \(point)"), running.standardErrorSoFar, file: file, line: line)
        running.kill()
        _ = try running.wait()
        XCTAssertEqual(try exported(in: out), [], "no file in place yet", file: file, line: line)
        XCTAssertEqual(try outbox(store, state: "sent"), sentAfterKill, file: file, line: line)
        XCTAssertEqual(try outbox(store, state: "pending"), 4 - sentAfterKill, file: file, line: line)

        let next = try CLIRunner.run(["export", "--store", store, "--to", out.path])
        XCTAssertEqual(next.status, 0, next.stderr, file: file, line: line)
        XCTAssertEqual(try outbox(store, state: "sent"), 4, file: file, line: line)
        let files = try exported(in: out)
        XCTAssertEqual(files.count, 1, "one file: \(files)", file: file, line: line)
        XCTAssertEqual(try observationCount(in: out), 4, "each outcome written once", file: file, line: line)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasSuffix(".partial") }
        XCTAssertEqual(leftovers, [], file: file, line: line)
    }
}
