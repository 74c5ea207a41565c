import CareModel
import Foundation
import Store
import TestSupport
import XCTest

/// `caregate outcomes add` on a measurement log without `--occurrence`: the value goes on the occurrence
/// of its day, which a day without a provider reading gets from a new version of the log stored with it
/// (``LogReadingDays``, Docs/measurement-history.md); a day the log's versions cannot hold is refused and
/// nothing is stored.
final class OutcomesAddLogCLITests: XCTestCase {
    private let log = "Patient/p#log-http---loinc.org-29463-7"

    private func weight(_ id: String, _ day: String) -> String {
        #"{"resourceType":"Observation","id":"\#(id)","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"29463-7"}]},"subject":{"reference":"Patient/p"},"effectiveDateTime":"\#(day)T09:00:00Z","valueQuantity":{"value":70,"unit":"kg","system":"http://unitsofmeasure.org","code":"kg"}}"#
    }

    private func store() throws -> String {
        let folder = try makeScratchFolder("outcomes-add-log")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        try folder.writeFile("w.ndjson", [weight("w1", "2024-03-01"), weight("w5", "2024-03-05")].joined(separator: "\n"))
        try folder.writeFile("m1.json", #"{"resourceType":"MedicationRequest","id":"m1","status":"active","intent":"order","subject":{"reference":"Patient/p"},"authoredOn":"2024-01-01","medicationCodeableConcept":{"text":"Metformin"},"dosageInstruction":[{"timing":{"repeat":{"frequency":1,"period":1,"periodUnit":"d"}}}]}"#)
        let path = folder.appendingPathComponent("store.sqlite").path
        let imported = try CLIRunner.run(["import", folder.path, "--store", path, "--time-zone", "UTC"])
        XCTAssertEqual(imported.status, 0, imported.stderr)
        return path
    }

    private func versions(_ path: String) throws -> [CareTask] {
        try SQLiteStore(path: path).history(.task, id: log).compactMap { if case .task(let task) = $0 { task } else { nil } }
    }

    func testTodaysReadingGetsANewVersionOfTheLogAndASecondOneTheSameOccurrence() throws {
        let path = try store()
        XCTAssertEqual(try versions(path).count, 1)
        let added = try CLIRunner.run(["outcomes", "add", "--store", path, "--task", log, "--value", "71.5", "--unit", "kg"])
        XCTAssertEqual(added.status, 0, added.stderr)
        let chain = try versions(path)
        XCTAssertEqual(chain.count, 2, "a version whose one day is today")
        let tip = try XCTUnwrap(chain.last)
        XCTAssertEqual(tip.schedule.elements.count, 1)
        XCTAssertTrue(added.stdout.contains(Outcome.id(taskUUID: tip.uuid, occurrence: 0)), added.stdout)
        let again = try CLIRunner.run(["outcomes", "add", "--store", path, "--task", log, "--value", "71.7", "--unit", "kg"])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try versions(path).count, 2, "the same day: the same version")
        let outcome = try XCTUnwrap(try SQLiteStore(path: path).outcomes(EntityQuery(ids: [Outcome.id(taskUUID: tip.uuid, occurrence: 0)])).first)
        XCTAssertEqual(outcome.values.map(\.value), [.double(71.5), .double(71.7)])
        // A reading on one of the provider's days goes on that day's occurrence of the first version.
        let known = try CLIRunner.run(["outcomes", "add", "--store", path, "--task", log, "--time", "2024-03-05T18:00:00Z", "--value", "70.2", "--unit", "kg"])
        XCTAssertEqual(known.status, 0, known.stderr)
        XCTAssertTrue(known.stdout.contains(Outcome.id(taskUUID: chain[0].uuid, occurrence: 1)), known.stdout)
    }

    func testADayTheLogCannotHoldIsRefusedAndNothingIsStored() throws {
        let path = try store()
        let refused = try CLIRunner.run(["outcomes", "add", "--store", path, "--task", log, "--time", "2024-03-03T10:00:00Z", "--value", "70", "--unit", "kg"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("2024-03-03") && refused.stderr.contains("not a reading day"), refused.stderr)
        XCTAssertEqual(try versions(path).count, 1)
        XCTAssertEqual(try SQLiteStore(path: path).outcomes(.current).count, 2, "the provider's two readings only")
        // A task that is not a log needs its occurrence.
        let task = try CLIRunner.run(["outcomes", "add", "--store", path, "--task", "MedicationRequest/m1", "--value", "true"])
        XCTAssertEqual(task.status, 1)
        XCTAssertTrue(task.stderr.contains("--occurrence"), task.stderr)
    }
}
