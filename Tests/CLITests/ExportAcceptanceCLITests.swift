import CareModel
import FHIR
import Foundation
import Mapping
import Store
import TestSupport
import XCTest

/// The write-back acceptance on real data: synthea-r4 imported, outcomes recorded through the CLI for a
/// medication task, a care plan activity and a measurement log, exported; every Observation validates
/// and carries the right subject, code, effective time and value; exporting again writes nothing; and
/// the exported Observations, imported into a fresh store holding the same plans, make the same outcomes.
final class ExportAcceptanceCLITests: XCTestCase {
    /// One outcome recorded for the test.
    private struct Recorded {
        let taskID: String
        let occurrence: Int
        let time: Date
        let value: OutcomeValue.Value
        let units: String?
        let patientReference: String
        let codes: Set<String>
    }

    func testSyntheaRoundTrip() throws {
        let synthea = try Corpus.folder("synthea-r4").path
        let folder = try makeScratchFolder("export-acceptance")
        let first = folder.appendingPathComponent("first.sqlite").path
        let imported = try CLIRunner.run(["import", synthea, "--store", first])
        XCTAssertEqual(imported.status, 0, imported.stderr)

        let recorded = try chooseAndRecord(in: first)
        XCTAssertEqual(recorded.count, 3)

        let bundlePath = folder.appendingPathComponent("observations.json").path
        let export = try CLIRunner.run(["export", "--store", first, "--to", bundlePath])
        XCTAssertEqual(export.status, 0, export.stderr)
        XCTAssertTrue(export.stderr.contains("exported 3 Observation(s)"), export.stderr)
        let validated = try CLIRunner.run(["validate", bundlePath])
        XCTAssertEqual(validated.status, 0, "every exported resource validates: \(validated.stdout)\(validated.stderr)")

        let bundle = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: bundlePath)))
        let observations = bundle.children(named: "entry").compactMap { $0.child(named: "resource") }.filter { $0.resourceType == "Observation" }
        XCTAssertEqual(observations.count, 3)
        let store = try SQLiteStore(path: first)
        for outcome in recorded {
            let task = try XCTUnwrap(try store.tasks(EntityQuery(ids: [outcome.taskID])).first)
            let id = OutcomeExporter.observationID(of: Outcome.id(taskUUID: task.uuid, occurrence: outcome.occurrence))
            let observation = try XCTUnwrap(observations.first { $0.childValue("id") == id }, "no Observation for \(outcome.taskID)")
            XCTAssertEqual(observation.child(named: "subject")?.childValue("reference"), outcome.patientReference, outcome.taskID)
            let codes = Set(observation.child(named: "code")?.children(named: "coding").map { "\($0.childValue("system") ?? "")|\($0.childValue("code") ?? "")" } ?? [])
            XCTAssertEqual(codes, outcome.codes, "the task's own codes: \(outcome.taskID)")
            let effective = try XCTUnwrap(observation.childValue("effectiveDateTime"), outcome.taskID)
            XCTAssertEqual(FHIRDateText.date(effective, in: .gmt), outcome.time, outcome.taskID)
            switch outcome.value {
            case .boolean(let flag): XCTAssertEqual(observation.childValue("valueBoolean"), flag ? "true" : "false")
            case .double(let number):
                XCTAssertEqual(observation.child(named: "valueQuantity")?.childValue("value").flatMap(Double.init), number, outcome.taskID)
                XCTAssertEqual(observation.child(named: "valueQuantity")?.childValue("unit"), outcome.units, outcome.taskID)
            case .integer(let number):
                let text = observation.childValue("valueInteger") ?? observation.child(named: "valueQuantity")?.childValue("value")
                XCTAssertEqual(text, String(number), outcome.taskID)
            default: XCTFail("unexpected value \(outcome.value)")
            }
        }

        let again = try CLIRunner.run(["export", "--store", first, "--to", folder.appendingPathComponent("again.json").path])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(again.stderr.contains("exported 0 Observation(s)"), again.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder.appendingPathComponent("again.json").path), "nothing new to write")

        // A fresh store with the same plans: the exported Observations become the same outcomes.
        let second = folder.appendingPathComponent("second.sqlite").path
        XCTAssertEqual(try CLIRunner.run(["import", synthea, "--store", second]).status, 0)
        let back = try CLIRunner.run(["import", bundlePath, "--store", second])
        XCTAssertEqual(back.status, 0, back.stderr)
        let fresh = try SQLiteStore(path: second)
        for outcome in recorded {
            let task = try XCTUnwrap(try fresh.tasks(EntityQuery(ids: [outcome.taskID])).first)
            let made = try XCTUnwrap(
                try fresh.outcomes(EntityQuery(ids: [Outcome.id(taskUUID: task.uuid, occurrence: outcome.occurrence)])).first,
                "no outcome for occurrence \(outcome.occurrence) of \(outcome.taskID)")
            XCTAssertEqual(made.values.map(\.value), [outcome.value], outcome.taskID)
            XCTAssertEqual(made.values.first?.units, outcome.units, outcome.taskID)
        }
    }

    /// Picks a medication task, a care plan activity and a measurement log of the store, and records an
    /// outcome for an occurrence of each through `caregate outcomes add`.
    private func chooseAndRecord(in path: String) throws -> [Recorded] {
        let store = try SQLiteStore(path: path)
        let tasks = try store.tasks(.current).sorted { $0.id < $1.id }
        let medication = try XCTUnwrap(tasks.first { $0.metadata.provenance?.fhirType == "MedicationRequest" && Self.firstOwnedOccurrence(of: $0) != nil })
        let activity = try XCTUnwrap(tasks.first { $0.metadata.provenance?.fhirType == "CarePlan" && Self.firstOwnedOccurrence(of: $0) != nil })
        // A log whose provider measurements carry a unit: the new value is one more of them.
        let logs = Dictionary(tasks.filter { $0.metadata.tags?.contains("log") == true }.map { ($0.uuid, $0) }, uniquingKeysWith: { a, _ in a })
        let measured = try store.outcomes(EntityQuery(dateInterval: DateInterval(start: .distantPast, end: Date())))
            .first { logs[$0.taskUUID] != nil && $0.values.count == 1 && $0.values[0].units != nil && $0.values[0].type == .double }
        let measurement = try XCTUnwrap(measured)
        let log = try XCTUnwrap(logs[measurement.taskUUID])

        var recorded: [Recorded] = []
        for (task, value, units, isLog) in [
            (medication, OutcomeValue.Value.boolean(true), String?.none, false),
            (activity, .boolean(true), nil, false),
            (log, .double(71.5), measurement.values[0].units, true),
        ] {
            // A log has events on its reading days only: today's reading (none from the provider) gets
            // an occurrence on a new version of the log, which outcomes add stores with it.
            var occurrence = isLog ? nil : try XCTUnwrap(Self.firstOwnedOccurrence(of: task))
            let time = try occurrence.map { occurrence in
                let start = try XCTUnwrap(task.schedule.eventStart(occurrence: occurrence))
                return start.addingTimeInterval(task.schedule.event(occurrence: occurrence).map { $0.end > $0.start ? 60 : 0 } ?? 0)
            } ?? Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            var arguments = [
                "outcomes", "add", "--store", path, "--task", task.id,
                "--time", FHIRDateFormat.instant(time), "--source", "AcceptanceApp",
            ] + (occurrence.map { ["--occurrence", "\($0)"] } ?? [])
            switch value {
            case .boolean(let flag): arguments += ["--value", flag ? "true" : "false"]
            case .double(let number): arguments += ["--value", "\(number)", "--unit", units ?? ""]
            default: break
            }
            let added = try CLIRunner.run(arguments)
            XCTAssertEqual(added.status, 0, "\(task.id): \(added.stderr)")
            if occurrence == nil {
                // "outcome <task uuid>_<occurrence>: ...", on the log's current version.
                let id = try XCTUnwrap(added.stdout.split(separator: " ").dropFirst().first?.dropLast(), added.stdout)
                occurrence = try XCTUnwrap(id.split(separator: "_").last.flatMap { Int($0) }, added.stdout)
                let tip = try XCTUnwrap(try store.tasks(EntityQuery(ids: [task.id])).first)
                XCTAssertTrue(id.hasPrefix(tip.uuid.canonicalString), "today's reading is on the log's current version: \(added.stdout)")
            }
            let occurrenceIndex = try XCTUnwrap(occurrence)
            var patientID = task.metadata.linkage.patientID
            if patientID == nil, let planID = task.carePlanID { patientID = try store.carePlans(EntityQuery(ids: [planID])).first?.patientID }
            let patient = try XCTUnwrap(try patientID.flatMap { try store.patients(EntityQuery(ids: [$0])).first }, task.id)
            let codes = Set(task.metadata.linkage.codes)
            recorded.append(Recorded(
                taskID: task.id, occurrence: occurrenceIndex, time: time, value: value, units: units,
                patientReference: "Patient/\(patient.metadata.provenance?.fhirID ?? "?")", codes: codes))
        }
        return recorded
    }

    /// The first occurrence of `task` that its current version owns (starting at or after its effective date).
    private static func firstOwnedOccurrence(of task: CareTask) -> Int? {
        let effective = task.metadata.effectiveDate
        var occurrence = task.schedule.occurrence(at: effective) ?? 0
        if let start = task.schedule.eventStart(occurrence: occurrence), start < effective { occurrence += 1 }
        return task.schedule.eventStart(occurrence: occurrence) != nil ? occurrence : nil
    }
}
