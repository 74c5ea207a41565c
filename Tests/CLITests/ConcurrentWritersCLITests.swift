import Foundation
import TestSupport
import XCTest

/// Write jobs in separate processes on one store at once, as hospital IT and the app server run them:
/// whatever the timing, the store ends as a serial run of the same jobs would leave it. And a store
/// whose disk fills mid-run stops with one message, keeps nothing half-written, and a rerun completes it.
final class ConcurrentWritersCLITests: XCTestCase {
    /// `store stats` without its first line (the store's path): the counts of every kind, version,
    /// deletion, outbox state and dead letter.
    private func contentStats(_ store: String) throws -> String {
        let stats = try CLIRunner.run(["store", "stats", "--store", store])
        XCTAssertEqual(stats.status, 0, stats.stderr)
        return stats.stdout.split(separator: "\n").dropFirst().joined(separator: "\n")
    }

    func testTwoImportsAtOnceEndAsOneImportWouldWhateverTheirTiming() throws {
        let bundles = Array(try Corpus.files(in: "synthea-r4", suffix: ".json").prefix(3)).map(\.path)
        guard !bundles.isEmpty else { return }
        let folder = try makeScratchFolder("two-imports")
        let serial = folder.appendingPathComponent("serial.sqlite").path
        let once = try CLIRunner.run(["import"] + bundles + ["--store", serial, "--time-zone", "UTC"])
        XCTAssertEqual(once.status, 0, once.stderr)
        let expected = try contentStats(serial)
        let expectedDump = try NormalizedDump.ofStore(serial)
        // Different timings: both at once, and the second started after a pause of growing length.
        for (round, pause) in [0.0, 0.05, 0.2, 0.5].enumerated() {
            let store = folder.appendingPathComponent("round-\(round).sqlite").path
            let first = try CLIRunner.start(["import"] + bundles + ["--store", store, "--time-zone", "UTC"])
            Thread.sleep(forTimeInterval: pause)
            let second = try CLIRunner.start(["import"] + bundles + ["--store", store, "--time-zone", "UTC"])
            for run in [try first.wait(), try second.wait()] {
                XCTAssertEqual(run.status, 0, "round \(round): \(run.stderr)")
            }
            XCTAssertEqual(try contentStats(store), expected, "round \(round): the store equals one import's (dead letters and deleted outcomes included)")
            XCTAssertEqual(try NormalizedDump.ofStore(store), expectedDump, "round \(round): every entity as one import makes it")
        }
    }

    func testOutcomesRecordedDuringAnImportAreKept() throws {
        let fixtures = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
        let bundles = Array(try Corpus.files(in: "synthea-r4", suffix: ".json").prefix(2)).map(\.path)
        guard !bundles.isEmpty else { return }
        let folder = try makeScratchFolder("import-and-outcomes")
        for round in 0..<3 {
            let store = folder.appendingPathComponent("round-\(round).sqlite").path
            XCTAssertEqual(try CLIRunner.run(["import", fixtures, "--store", store, "--time-zone", "America/Chicago"]).status, 0)
            let importing = try CLIRunner.start(["import"] + bundles + [fixtures, "--store", store, "--time-zone", "America/Chicago"])
            Thread.sleep(forTimeInterval: 0.1 * Double(round))
            let added = try CLIRunner.run([
                "outcomes", "add", "--store", store, "--task", "MedicationRequest/medreq-1", "--occurrence", "1", "--value", "true",
                "--time", "2026-11-02T07:40:00", "--replace",
            ])
            XCTAssertEqual(added.status, 0, added.stderr)
            XCTAssertEqual(try importing.wait().status, 0)
            let events = try CLIRunner.run(["store", "events", "--store", store, "--patient", "Patient/pat-1", "--from", "2026-11-02", "--time-zone", "America/Chicago"])
            XCTAssertTrue(events.stdout.contains("done: yes"), "round \(round): the outcome recorded meanwhile is there: \(events.stdout)")
        }
    }

    func testAWriterThatWaitsTooLongIsToldWhoHoldsTheStore() throws {
        let bundles = try Corpus.files(in: "synthea-r4", suffix: ".json").map(\.path)
        guard !bundles.isEmpty else { return }
        let folder = try makeScratchFolder("lease-wait")
        let store = folder.appendingPathComponent("care.sqlite").path
        XCTAssertEqual(try CLIRunner.run(["import", Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path, "--store", store]).status, 0)
        let long = try CLIRunner.start(["import"] + bundles + ["--store", store, "--time-zone", "UTC"])
        // Once the long import holds the lease, a writer with no patience is refused with its name.
        var refused: CLIRunner.Result?
        for _ in 0..<100 where long.isRunning {
            let attempt = try CLIRunner.run(["import", Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path, "--store", store, "--busy-timeout", "0"])
            if attempt.status != 0 {
                refused = attempt
                break
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTAssertEqual(try long.wait().status, 0)
        let message = try XCTUnwrap(refused, "the long import was never seen holding the store").stderr
        XCTAssertTrue(message.contains("another job is writing to the store") && message.contains("caregate import (pid "), message)
    }

    func testAFullDiskStopsTheImportWithOneMessageAndARerunCompletesIt() throws {
        let bundles = Array(try Corpus.files(in: "synthea-r4", suffix: ".json").prefix(3)).map(\.path)
        guard !bundles.isEmpty, let disk = try smallDisk(megabytes: 40) else { return }
        let store = disk.appendingPathComponent("care.sqlite").path
        let reference = try makeScratchFolder("full-disk-reference").appendingPathComponent("care.sqlite").path
        XCTAssertEqual(try CLIRunner.run(["import", Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path, "--store", store]).status, 0)
        XCTAssertEqual(try CLIRunner.run(["import", Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path, "--store", reference]).status, 0)
        let filler = try fill(disk, leaving: 200 << 10)
        let full = try CLIRunner.run(["import"] + bundles + ["--store", store, "--time-zone", "UTC"])
        XCTAssertEqual(full.status, 1, full.stdout + full.stderr)
        XCTAssertTrue(full.stderr.contains("the disk is full"), full.stderr)
        XCTAssertLessThanOrEqual(full.stderr.split(separator: "\n").count, 2, "one message, not a failure per resource: \(full.stderr)")
        XCTAssertFalse(full.stdout.contains("failed"), full.stdout)

        try FileManager.default.removeItem(at: filler)
        let rerun = try CLIRunner.run(["import"] + bundles + ["--store", store, "--time-zone", "UTC"])
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertEqual(try CLIRunner.run(["import"] + bundles + ["--store", reference, "--time-zone", "UTC"]).status, 0)
        XCTAssertEqual(try NormalizedDump.ofStore(store), try NormalizedDump.ofStore(reference), "nothing lost after the rerun")
    }

    func testAStoreMadeOnAFullDiskIsNotLeftBroken() throws {
        guard let disk = try smallDisk(megabytes: 2) else { return }
        let store = disk.appendingPathComponent("care.sqlite").path
        let filler = try fill(disk, leaving: 24 << 10)
        let made = try CLIRunner.run(["import", Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path, "--store", store])
        XCTAssertNotEqual(made.status, 0)
        XCTAssertTrue(made.stderr.contains("disk is full") || made.stderr.contains("No space"), made.stderr)
        try FileManager.default.removeItem(at: filler)
        // Either no store was linked into place, or the one there is whole: the next run works.
        let again = try CLIRunner.run(["import", Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path, "--store", store])
        XCTAssertEqual(again.status, 0, again.stderr)
        let check = try CLIRunner.run(["store", "stats", "--check", "--store", store])
        XCTAssertEqual(check.status, 0, check.stderr)
    }
}
