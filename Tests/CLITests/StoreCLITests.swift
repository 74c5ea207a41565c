import Foundation
import TestSupport
import XCTest

/// `caregate store ...` as a user runs it.
final class StoreCLITests: XCTestCase {
    private var folder: URL!
    private var storePath: String { folder.appendingPathComponent("care.sqlite").path }

    override func setUpWithError() throws {
        folder = try makeScratchFolder("store-cli")
    }

    private func generate(in directory: URL? = nil, store: [String]? = nil) throws {
        let result = try CLIRunner.run(
            ["store", "generate"] + (store ?? ["--store", storePath]) + ["--patients", "2", "--tasks", "3", "--days", "4"],
            in: directory)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("generated 10 entities and 24 outcomes"), result.stdout)
    }

    func testStatsCountsWhatGenerateWrote() throws {
        try generate()
        let result = try CLIRunner.run(["store", "stats", "--store", storePath, "--check"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains { $0.hasPrefix("patient") && $0.split(separator: " ").map(String.init) == ["patient", "2", "0", "2"] }, result.stdout)
        XCTAssertTrue(lines.contains { $0.split(separator: " ").map(String.init) == ["outcome", "24", "0", "24"] }, result.stdout)
        XCTAssertTrue(result.stdout.contains("integrity: ok"))
    }

    func testStoreDefaultsToCaregateSQLiteInTheWorkingDirectory() throws {
        try generate(in: folder, store: [])
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder.appendingPathComponent("caregate.sqlite").path))
        let result = try CLIRunner.run(["store", "stats"], in: folder)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("store caregate.sqlite"), result.stdout)
    }

    func testEventsDayView() throws {
        try generate()
        let result = try CLIRunner.run([
            "store", "events", "--store", storePath, "--patient", "patient-1", "--from", "2025-01-02", "--time-zone", "UTC",
        ])
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 4, result.stdout)
        XCTAssertTrue(lines[0].hasPrefix("2025-01-02 "), lines[0])
        XCTAssertEqual(lines[1], "  06:00-06:30  Task 1  (task task-1-1, occurrence 1)  done: 101 mmHg")
        XCTAssertTrue(lines[3].contains("task task-1-3, occurrence 1"))
    }

    func testEventsAsJSON() throws {
        try generate()
        let result = try CLIRunner.run([
            "store", "events", "--store", storePath, "--patient", "patient-2", "--from", "2025-01-01T00:00:00Z",
            "--to", "2025-01-03T00:00:00Z", "--format", "json",
        ])
        XCTAssertEqual(result.status, 0, result.stderr)
        let events = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(events.count, 6)
        XCTAssertEqual(events.first?["taskID"] as? String, "task-2-1")
        XCTAssertEqual(events.first?["start"] as? String, "2025-01-01T06:00:00Z")
        let outcome = try XCTUnwrap(events.first?["outcome"] as? [String: Any])
        XCTAssertEqual(outcome["taskOccurrenceIndex"] as? Int, 0)
    }

    /// Without --patient: one CareKit 4.0 object per patient, one per line, linked by version UUID.
    func testDumpAsCareKitJSON() throws {
        try generate()
        let result = try CLIRunner.run(["store", "dump", "--store", storePath, "--format", "carekit-json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, "one line per patient, none for entities of no patient (there are none)")
        for (index, line) in lines.enumerated() {
            let dump = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: [[String: Any]]])
            XCTAssertEqual(dump["patients"]?.count, 1)
            XCTAssertEqual(dump["patients"]?.first?["id"] as? String, "patient-\(index + 1)")
            XCTAssertEqual(dump["carePlans"]?.count, 1)
            XCTAssertEqual(dump["contacts"]?.count, 0)
            XCTAssertEqual(dump["tasks"]?.count, 3)
            XCTAssertEqual(dump["outcomes"]?.count, 12)
            try assertLinkedByVersionUUID(dump)
        }

        let text = try CLIRunner.run(["store", "dump", "--store", storePath])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertEqual(text.stdout.split(separator: "\n").count, 34)
        XCTAssertTrue(text.stdout.hasPrefix("patient patient-1 uuid="), text.stdout)
    }

    /// --patient: that patient's entities in one object, what one CareKit store holds; the same as its
    /// line of the whole dump.
    func testDumpOnePatientAsCareKitJSON() throws {
        try generate()
        let result = try CLIRunner.run(["store", "dump", "--store", storePath, "--format", "carekit-json", "--patient", "patient-2"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let dump = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: [[String: Any]]])
        XCTAssertEqual(dump["patients"]?.map { $0["id"] as? String }, ["patient-2"])
        XCTAssertEqual(dump["tasks"]?.count, 3)
        XCTAssertEqual(dump["outcomes"]?.count, 12)
        XCTAssertTrue(dump["tasks"]?.allSatisfy { $0["carePlanID"] is String } ?? false, "CareGate's stable-id link rides along")
        try assertLinkedByVersionUUID(dump)
        XCTAssertTrue(dump["patients"]?.first?["effectiveDate"] is NSNumber, "CareKit dates are seconds since 2001")

        let whole = try CLIRunner.run(["store", "dump", "--store", storePath, "--format", "carekit-json"])
        let line = try XCTUnwrap(whole.stdout.split(separator: "\n").last.map(String.init))
        let fromLine = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? NSDictionary)
        XCTAssertEqual(fromLine, dump as NSDictionary)

        let text = try CLIRunner.run(["store", "dump", "--store", storePath, "--patient", "patient-2"])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertEqual(text.stdout.split(separator: "\n").count, 17, "the patient, its plan, 3 tasks, 12 outcomes")

        let unknown = try CLIRunner.run(["store", "dump", "--store", storePath, "--format", "carekit-json", "--patient", "nobody"])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("no patient 'nobody'"), unknown.stderr)
        XCTAssertEqual(unknown.stdout, "")
    }

    /// Plans link their patient, tasks their plan, outcomes a task of the dump, by version UUID; outcomes
    /// carry CareKit 4.0's `id` and values of its five keys.
    private func assertLinkedByVersionUUID(_ dump: [String: [[String: Any]]], file: StaticString = #filePath, line: UInt = #line) throws {
        let patientUUIDs = Set(dump["patients"]?.compactMap { $0["uuid"] as? String } ?? [])
        let planUUIDs = Set(dump["carePlans"]?.compactMap { $0["uuid"] as? String } ?? [])
        let taskUUIDs = Set(dump["tasks"]?.compactMap { $0["uuid"] as? String } ?? [])
        for plan in dump["carePlans"] ?? [] {
            XCTAssertTrue(patientUUIDs.contains(plan["patientUUID"] as? String ?? "-"), "\(plan)", file: file, line: line)
        }
        for task in dump["tasks"] ?? [] {
            XCTAssertTrue(planUUIDs.contains(task["carePlanUUID"] as? String ?? "-"), "\(task)", file: file, line: line)
        }
        for outcome in dump["outcomes"] ?? [] {
            let taskUUID = outcome["taskUUID"] as? String ?? "-"
            XCTAssertTrue(taskUUIDs.contains(taskUUID), file: file, line: line)
            XCTAssertEqual(outcome["id"] as? String, "\(taskUUID)_\(outcome["taskOccurrenceIndex"] as? Int ?? -1)", file: file, line: line)
            for value in outcome["values"] as? [[String: Any]] ?? [] {
                XCTAssertTrue(Set(value.keys).isSubset(of: ["type", "value", "kind", "units", "createdDate"]), "\(value)", file: file, line: line)
                XCTAssertTrue(value["createdDate"] is NSNumber, file: file, line: line)
            }
        }
    }

    func testMissingStoreIsAnErrorWithStatus1() throws {
        for command in [["stats"], ["dump"], ["events", "--patient", "p", "--from", "2025-01-01"]] {
            let result = try CLIRunner.run(["store"] + command + ["--store", storePath])
            XCTAssertEqual(result.status, 1, "\(command): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("no store at \(storePath)"), result.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: storePath), "reading never creates a store")
        }
    }

    func testCorruptStoreIsAnErrorWithStatus1() throws {
        try Data(String(repeating: "garbage ", count: 1000).utf8).write(to: URL(fileURLWithPath: storePath))
        let result = try CLIRunner.run(["store", "stats", "--store", storePath])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("is not a CareGate store"), result.stderr)
    }

    func testBadDatesAreUsageErrorsWithStatus2() throws {
        try generate()
        let badDate = try CLIRunner.run(["store", "events", "--store", storePath, "--patient", "patient-1", "--from", "yesterday"])
        XCTAssertEqual(badDate.status, 2)
        XCTAssertTrue(badDate.stderr.contains("--from: 'yesterday' is not a date"), badDate.stderr)
        let backwards = try CLIRunner.run([
            "store", "events", "--store", storePath, "--patient", "patient-1", "--from", "2025-01-05", "--to", "2025-01-01",
        ])
        XCTAssertEqual(backwards.status, 2)
        XCTAssertTrue(backwards.stderr.contains("must be after --from"), backwards.stderr)
        let zone = try CLIRunner.run([
            "store", "events", "--store", storePath, "--patient", "patient-1", "--from", "2025-01-05", "--time-zone", "Mars/Olympus",
        ])
        XCTAssertEqual(zone.status, 2)
        // Impossible dates and times are refused, not rolled over into the next month or day.
        for (option, text) in [("--from", "2025-02-30"), ("--from", "2025-01-01T25:00:00Z"), ("--from", "2025-01-01T10:61:00Z"), ("--to", "2025-13-01")] {
            var arguments = ["store", "events", "--store", storePath, "--patient", "patient-1", "--from", "2025-01-01"]
            if option == "--from" { arguments[arguments.count - 1] = text } else { arguments += ["--to", text] }
            let result = try CLIRunner.run(arguments)
            XCTAssertEqual(result.status, 2, text)
            XCTAssertTrue(result.stderr.contains("\(option): '\(text)' is not a date"), result.stderr)
        }
    }

    func testEventsOverALongRangeAreBoundedAndStreamedWeekByWeek() throws {
        try generate()
        let huge = try CLIRunner.run(["store", "events", "--store", storePath, "--patient", "patient-1", "--from", "2025-01-01", "--to", "9999-12-31"])
        XCTAssertEqual(huge.status, 2)
        XCTAssertTrue(huge.stderr.contains("days, more than --max-days 3650"), huge.stderr)
        let allowed = try CLIRunner.run([
            "store", "events", "--store", storePath, "--patient", "patient-1", "--from", "2025-01-01T06:15:00Z", "--to", "2025-01-20",
            "--time-zone", "UTC", "--max-days", "30", "--format", "json",
        ])
        XCTAssertEqual(allowed.status, 0, allowed.stderr)
        // Written week by week: every event once, in time order, the one running at --from included.
        let events = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(allowed.stdout.utf8)) as? [[String: Any]])
        let keys = events.map { "\($0["taskID"] ?? "")/\($0["occurrence"] ?? "")" }
        XCTAssertEqual(keys.count, Set(keys).count, "an event written twice")
        XCTAssertEqual(events.count, 3 * 19, allowed.stdout)  // 3 daily tasks, 2025-01-01 to 2025-01-19
        XCTAssertEqual(keys.first, "task-1-1/0", "the 06:00-06:30 event still running at 06:15")
        let text = try CLIRunner.run([
            "store", "events", "--store", storePath, "--patient", "patient-1", "--from", "2025-01-01", "--to", "2025-01-20", "--time-zone", "UTC",
        ])
        XCTAssertEqual(text.stdout.split(separator: "\n").filter { $0.hasPrefix("2025-") }.count, 19, "one heading per day, across weeks")
    }

    func testAHugeGenerateShowsProgressAtOnceAndSizesAreBounded() throws {
        let run = try CLIRunner.start(["store", "generate", "--store", storePath, "--patients", "100000000", "--days", "1"])
        defer { run.terminate() }
        let deadline = Date().addingTimeInterval(60)
        while !run.standardErrorSoFar.contains("committed: "), run.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        let progress = run.standardErrorSoFar
        XCTAssertTrue(progress.hasPrefix("writing 700000000 entities and 500000000 outcomes"), progress)
        XCTAssertTrue(progress.contains("committed: "), "no progress within a minute: \(progress)")
        run.terminate()
        _ = try run.wait()
        for (option, value) in [("--patients", "9223372036854775807"), ("--days", "1000000"), ("--tasks", "100000"), ("--days-per-batch", "9223372036854775807")] {
            let refused = try CLIRunner.run(["store", "generate", "--store", storePath + "-2", option, value])
            XCTAssertEqual(refused.status, 2, "\(option) \(value): \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains("\(option) can be at most"), refused.stderr)
        }
    }

    func testUnknownPatientIsAnErrorWithStatus1() throws {
        try generate()
        let result = try CLIRunner.run(["store", "events", "--store", storePath, "--patient", "nobody", "--from", "2025-01-01"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("no patient with id 'nobody'"), result.stderr)
    }
}
