import Foundation
import TestSupport
import XCTest

/// Readers and writers in separate processes on one store, as hospital IT runs them: reports and
/// inspections while a sync job writes, and scheduled jobs that overlap.
final class StoreConcurrencyCLITests: XCTestCase {
    private var folder: URL!
    private var storePath: String { folder.appendingPathComponent("care.sqlite").path }

    override func setUpWithError() throws {
        folder = try makeScratchFolder("store-concurrency")
    }

    /// The number of current outcomes `store stats` printed.
    private static func outcomeCount(_ stats: String) -> Int? {
        stats.split(separator: "\n").first { $0.hasPrefix("outcome ") }?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    /// What the reader processes found, gathered from their threads.
    private final class ReaderLog: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var runs = 0
        private(set) var failures: [String] = []
        private(set) var sequences: [[Int]] = []

        func ran(failure: String?) { lock.withLock { runs += 1; if let failure { failures.append(failure) } } }
        func failed(_ failure: String) { lock.withLock { failures.append(failure) } }
        func saw(_ sequence: [Int]) { lock.withLock { sequences.append(sequence) } }
    }

    /// Runs stats, events and dump in turn until `writer` ends (and twice more), noting the outcome counts.
    private static func readLoop(_ store: String, while writer: CLIRunner.Running, into log: ReaderLog) {
        var seen: [Int] = []
        var round = 0
        while writer.isRunning || round < 2 {
            let command: [String]
            switch round % 4 {
            case 0: command = ["store", "stats"]
            case 1: command = ["store", "events", "--patient", "patient-1", "--from", "2025-01-01", "--to", "2025-01-08", "--time-zone", "UTC"]
            case 2: command = ["store", "stats", "--check"]
            default: command = ["store", "dump"]
            }
            round += 1
            guard let result = try? CLIRunner.run(command + ["--store", store]) else {
                log.failed("\(command): could not be started")
                continue
            }
            log.ran(failure: result.status == 0 ? nil : "\(command) exited \(result.status): \(result.stderr)")
            if command[1] == "stats", let count = outcomeCount(result.stdout) {
                seen.append(count)
                // generate commits one day (400 patients x 5 tasks) per transaction.
                if count % 2000 != 0 { log.failed("a snapshot between batches: \(count) outcomes") }
            }
        }
        log.saw(seen)
    }

    func testReadersNeverFailWhileAWriterWritesAndSeeOnlyCommittedGrowth() throws {
        let store = storePath
        // A writer long enough to be caught in the middle: one transaction per generated day.
        let writer = try CLIRunner.start(["store", "generate", "--store", store, "--patients", "400", "--tasks", "5", "--days", "60"])
        // Wait until the first day is committed (patients, plans and tasks come with it), so that every
        // reader's question has an answer.
        let deadline = Date().addingTimeInterval(60)
        while (Self.outcomeCount(try CLIRunner.run(["store", "stats", "--store", store]).stdout) ?? 0) == 0 {
            guard Date() < deadline, writer.isRunning else { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let log = ReaderLog()
        DispatchQueue.concurrentPerform(iterations: 3) { _ in Self.readLoop(store, while: writer, into: log) }
        let written = try writer.wait()
        XCTAssertEqual(written.status, 0, written.stderr)
        let final = 400 * 5 * 60
        for seen in log.sequences {
            XCTAssertEqual(seen, seen.sorted(), "a reader saw the count go down")
        }
        print("concurrent readers: \(log.runs) runs, \(log.failures.count) failed; outcome counts seen: \(log.sequences.map { $0.map(String.init).joined(separator: " ") })")
        XCTAssertEqual(log.failures, [])
        XCTAssertGreaterThan(log.runs, 6)
        XCTAssertTrue(log.sequences.contains { $0.contains { $0 < final } }, "no reader ran while the writer was writing")
    }

    func testASecondWriterWaitsItsTurnOrFailsSayingWhoHoldsTheStore() throws {
        let made = try CLIRunner.run(["store", "generate", "--store", storePath, "--patients", "2", "--tasks", "3", "--days", "4"])
        XCTAssertEqual(made.status, 0, made.stderr)
        // Another program (not CareGate, so outside the writer lease) takes SQLite's write lock until told.
        let release = storePath + ".release"
        let holder = try StoreLockHolder.start(store: storePath, release: release, locks: StoreLockHolder.sqliteWriteLock)
        defer { if holder.isRunning { holder.terminate() } }

        // A reader is not blocked by it.
        let reader = try CLIRunner.run(["store", "stats", "--store", storePath, "--busy-timeout", "0"])
        XCTAssertEqual(reader.status, 0, reader.stderr)

        // A writer with a short timeout gives up, cleanly, once SQLite's shortest lock wait (2 s, so that
        // a checkpoint never fails a job) has passed: the lock is held until the test lets go.
        let started = Date()
        let impatient = try CLIRunner.run(["import", "Fixtures/provider", "--store", storePath, "--busy-timeout", "0.3"])
        let gaveUpAfter = Date().timeIntervalSince(started)
        XCTAssertEqual(impatient.status, 1, impatient.stdout)
        XCTAssertTrue(impatient.stderr.contains("another process holds the store"), impatient.stderr)
        XCTAssertTrue(holder.isRunning, "the holder let go before the impatient writer gave up")

        // One with the default timeout (30 s) waits for the lock, let go a second after it started, and then writes.
        let patient = try CLIRunner.start(["import", "Fixtures/provider", "--store", storePath, "--time-zone", "America/Chicago"])
        Thread.sleep(forTimeInterval: 1)
        XCTAssertTrue(patient.isRunning, "the second writer did not wait for the lock")
        FileManager.default.createFile(atPath: release, contents: nil)
        let written = try patient.wait()
        XCTAssertEqual(written.status, 0, written.stderr)
        XCTAssertTrue(written.stdout.contains("created"), written.stdout)
        holder.waitUntilExit()
        XCTAssertEqual(holder.terminationStatus, 0)
        print("second writer: gave up after \(String(format: "%.2f", gaveUpAfter)) s with --busy-timeout 0.3; waited for the lock and succeeded with the default")
        let check = try CLIRunner.run(["store", "stats", "--store", storePath, "--check"])
        XCTAssertTrue(check.stdout.contains("integrity: ok"), check.stdout)
    }
}
