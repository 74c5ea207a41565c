import Foundation
import TestSupport
import XCTest

/// `caregate outcomes add`, `export` and `outbox` as a user runs them (an export killed at each step of
/// its commit: ``ExportKillTests``).
final class ExportCLITests: XCTestCase {
    private let bloodPressure = ExportScenario.bloodPressure

    /// A store with Fixtures/provider imported and `count` outcomes recorded through the CLI, removed
    /// after the test.
    private func storeWithOutcomes(_ count: Int) throws -> ExportScenario {
        let scenario = try ExportScenario(outcomes: count)
        addTeardownBlock { scenario.remove() }
        return scenario
    }

    func testAddExportAndExportAgain() throws {
        let scenario = try storeWithOutcomes(3)
        let (store, out) = (scenario.store, scenario.out)
        XCTAssertEqual(try scenario.outbox(state: "pending"), 3)
        let first = try CLIRunner.run(["export", "--store", store, "--to", out.path])
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(first.stderr.contains("exported 3 Observation(s)"), first.stderr)
        let files = try scenario.exported()
        XCTAssertEqual(files.count, 1)
        let validated = try CLIRunner.run(["validate", out.appendingPathComponent(files[0]).path])
        XCTAssertEqual(validated.status, 0, validated.stdout + validated.stderr)
        XCTAssertEqual(try scenario.outbox(state: "sent"), 3)
        let again = try CLIRunner.run(["export", "--store", store, "--to", out.path])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try scenario.exported().count, 1, "nothing new to write")

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
        let scenario = try storeWithOutcomes(0)
        let (store, folder) = (scenario.store, scenario.folder)
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
        XCTAssertEqual(try scenario.outbox(state: "pending"), 1)
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
        XCTAssertEqual(try scenario.outbox(state: "pending"), 0)
        let missing = try CLIRunner.run(["outcomes", "import", folder.appendingPathComponent("missing.json").path, "--store", store])
        XCTAssertEqual(missing.status, 2, "a missing input is a usage error, as for every command: \(missing.stderr)")
    }

    func testABinaryOutcomeIsADeadLetterAndRetryRequeuesIt() throws {
        let scenario = try storeWithOutcomes(1)
        let (store, out) = (scenario.store, scenario.out)
        let added = try CLIRunner.run(["outcomes", "add", "--store", store, "--task", bloodPressure, "--occurrence", "2", "--type", "binary", "--value", "AAEC"])
        XCTAssertEqual(added.status, 0, added.stderr)
        let export = try CLIRunner.run(["export", "--store", store, "--to", out.path])
        XCTAssertEqual(export.status, 1, "a refused outcome is a failure the scheduler sees")
        XCTAssertTrue(export.stderr.contains("binary data"), export.stderr)
        XCTAssertEqual(try scenario.observationCount(), 1, "the rest of the batch went")
        let failed = try CLIRunner.run(["outbox", "--store", store, "--state", "failed"])
        let id = try XCTUnwrap(failed.stdout.split(separator: " ").first.map { String($0.dropFirst()) })
        let retry = try CLIRunner.run(["outbox", "retry", id, "--store", store])
        XCTAssertEqual(retry.status, 0, retry.stderr)
        XCTAssertEqual(try CLIRunner.run(["outbox", "retry", id, "--store", store]).status, 0, "still failed-with-retry: may be requeued again")
        XCTAssertEqual(try CLIRunner.run(["outbox", "retry", "999", "--store", store]).status, 1)
    }
}
