import CareModel
import Foundation
import Store
import TestSupport
import XCTest

/// Issue 41, item 7, on the command line: `caregate outcomes add` and `outcomes import` refuse a number
/// whose sums cannot be represented, naming it (`import`: its JSON path), and store nothing; values
/// already stored near the largest double give a valid Insights series with exit status 0.
final class OverflowCLITests: XCTestCase {
    private let bloodPressure = "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic"
    private let systolic = "http://loinc.org|8480-6"

    private func fixtureStore() throws -> (store: String, folder: URL) {
        let folder = try makeScratchFolder("overflow-cli")
        let store = folder.appendingPathComponent("s.sqlite").path
        let imported = try CLIRunner.run(["import", "Fixtures/provider", "--time-zone", "America/Chicago", "--store", store])
        XCTAssertEqual(imported.status, 0, imported.stderr)
        return (store, folder)
    }

    func testOutcomesAddAndImportRefuseNumbersWhoseSumsOverflow() throws {
        let (store, folder) = try fixtureStore()
        let before = try SQLiteStore(path: store, mode: .readOnly).outcomes(.current).count
        for value in ["1e308", "1.0e308", "-1.5e300"] {
            let added = try CLIRunner.run([
                "outcomes", "add", "--store", store, "--task", bloodPressure, "--occurrence", "4", "--value=\(value)", "--type", "double",
            ])
            XCTAssertEqual(added.status, 1, "\(value): \(added.stdout)")
            XCTAssertTrue(added.stderr.contains("beyond ±2^960"), "\(value): \(added.stderr)")
        }
        // Typed by its shape (a decimal point makes a double): refused too, not stored as text.
        let shaped = try CLIRunner.run(["outcomes", "add", "--store", store, "--task", bloodPressure, "--occurrence", "4", "--value", "1.0e308"])
        XCTAssertEqual(shaped.status, 1, shaped.stdout)

        let task = try XCTUnwrap(try SQLiteStore(path: store, mode: .readOnly).tasks(EntityQuery(ids: [bloodPressure])).first)
        let outcome = Outcome(
            taskUUID: task.uuid, taskOccurrenceIndex: 4,
            values: [OutcomeValue(.double(120), kind: systolic, index: 0), OutcomeValue(.double(1e308), kind: systolic, index: 1)],
            metadata: EntityMetadata(effectiveDate: try XCTUnwrap(task.schedule.eventStart(occurrence: 4)), timezone: .gmt))
        let file = folder.appendingPathComponent("outcomes.json")
        try CareKitJSON.makeEncoder().encode(["outcomes": [outcome]]).write(to: file)
        let imported = try CLIRunner.run(["outcomes", "import", "--store", store, file.path])
        XCTAssertEqual(imported.status, 1, imported.stdout)
        XCTAssertTrue(imported.stderr.contains("outcomes[0].values[1].value"), imported.stderr)
        XCTAssertEqual(try SQLiteStore(path: store, mode: .readOnly).outcomes(.current).count, before, "nothing stored")
    }

    /// Two readings of 1e308 of one kind on one day (stored before this check, or by another path): the
    /// daily mean is 1e308, the JSON is the series, exit 0; never `{}`.
    func testReportOfStoredValuesNearTheLargestDoubleIsAValidSeries() throws {
        let (store, _) = try fixtureStore()
        let writer = try SQLiteStore(path: store)
        let task = try XCTUnwrap(try writer.tasks(EntityQuery(ids: [bloodPressure])).first)
        var batch = StoreBatch()
        batch.upsert(Outcome(
            taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 4,
            values: [OutcomeValue(.double(1e308), units: "mm[Hg]", kind: systolic, index: 0), OutcomeValue(.double(1e308), units: "mm[Hg]", kind: systolic, index: 1)],
            metadata: EntityMetadata(effectiveDate: try XCTUnwrap(task.schedule.eventStart(occurrence: 4)), timezone: .gmt)))
        try writer.apply(batch)
        let json = try CLIRunner.run([
            "patients", "report", "--store", store, "--patient", "Patient/pat-1", "--from", "2026-11-01", "--to", "2026-11-14",
            "--time-zone", "America/Chicago", "--format", "json",
        ])
        XCTAssertEqual(json.status, 0, json.stderr)
        let body = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], json.stdout)
        XCTAssertEqual(body["to"] as? String, "2026-11-14", "the last day asked for")
        let series = try XCTUnwrap(body["series"] as? [[String: Any]])
        let measured = series.filter { $0["id"] as? String == systolic }.flatMap { ($0["values"] as? [Any]) ?? [] }
        XCTAssertTrue(measured.contains { $0 as? Double == 1e308 }, "\(series)")
    }
}
