import FHIR
import Foundation
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// A server that misbehaves on purpose (Scripts/fault-proxy.py in front of a real one): an answer of
/// 4 GB, one that only grows, one that never comes, one that trickles, pages relabelled with another
/// type. Each request ends with a clear error and the job stops in bounded time with nothing lost.
final class HostileServerTests: XCTestCase {
    /// The CPU seconds (user and system) this process has used.
    private static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    private func client(_ base: URL, timeout: TimeInterval = 10, maxBytes: Int64 = 8 << 20, runTimeout: TimeInterval = 3600) -> FHIRClient {
        FHIRClient(base: base, timeout: timeout, retry: RetryPolicy(maxAttempts: 1), maxResponseBytes: maxBytes, runTimeout: runTimeout)
    }

    func testAnAnswerOverTheSizeLimitFailsItsRequestWithoutReadingIt() throws {
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        for action in ["huge", "bloat"] {
            let proxy = try FaultProxyProcess.start(upstream: server.base, schedule: [action])
            defer { proxy.stop() }
            XCTAssertThrowsError(try client(proxy.base).capabilities(), action) { error in
                guard case FHIRClientError.tooLarge(_, let bytes, let limit)? = error as? FHIRClientError else {
                    return XCTFail("\(action): \(error)")
                }
                XCTAssertEqual(limit, 8 << 20)
                XCTAssertGreaterThan(bytes, limit, action)
                XCTAssertTrue("\(error)".contains("max-response-mb"), "\(error)")
            }
        }
    }

    func testASilentServerEndsAtTheDeadlineWithoutBurningACore() throws {
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        let proxy = try FaultProxyProcess.start(upstream: server.base, schedule: ["silent"])
        defer { proxy.stop() }
        let cpuBefore = Self.cpuSeconds()
        XCTAssertThrowsError(try client(proxy.base, timeout: 1).capabilities()) { error in
            guard case FHIRClientError.timeout? = error as? FHIRClientError else { return XCTFail("\(error)") }
        }
        // The wait (four seconds at most: the request's deadline) sleeps; a polling loop would use them all.
        XCTAssertLessThan(Self.cpuSeconds() - cpuBefore, 1.5, "waiting for a silent server should not keep a core busy")
    }

    func testATricklingServerEndsAtTheRequestsDeadline() throws {
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        let proxy = try FaultProxyProcess.start(upstream: server.base, schedule: ["trickle"])
        defer { proxy.stop() }
        // Ten bytes a second reset the idle timeout every time; the whole exchange still ends at 4 x 1 s.
        XCTAssertThrowsError(try client(proxy.base, timeout: 1).capabilities()) { error in
            guard case FHIRClientError.timeout(_, let seconds)? = error as? FHIRClientError else { return XCTFail("\(error)") }
            XCTAssertLessThanOrEqual(seconds, 4, "the idle timeout or the exchange's deadline, whichever comes first")
        }
    }

    func testTheRunTimeoutStopsEveryRequestAfterIt() throws {
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        let proxy = try FaultProxyProcess.start(upstream: server.base, schedule: ["silent"])
        defer { proxy.stop() }
        let client = FHIRClient(base: proxy.base, timeout: 1, retry: RetryPolicy(maxAttempts: 100, baseDelay: 0.01, maxDelay: 0.05), runTimeout: 3)
        client.resetRetries()
        XCTAssertThrowsError(try client.capabilities()) { error in
            guard case FHIRClientError.runTimeout? = error as? FHIRClientError else { return XCTFail("a hundred retries are cut short: \(error)") }
        }
    }

    func testPagesOfAnotherTypeAreAProblemAndKeepTheCursor() throws {
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        try loadKeepingIDs([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: server.base)
        let proxy = try FaultProxyProcess.start(upstream: server.base, schedule: ["ok"])
        defer { proxy.stop() }
        let folder = try makeScratchFolder("relabel")
        let relabelling = try FaultProxyProcess.start(upstream: server.base, schedule: ["relabel"])
        defer { relabelling.stop() }
        let config = try folder.writeFile("sync.yaml", "server: \(relabelling.base.absoluteString)\ntime-zone: America/Chicago\nresources: [Observation]\n")
        let honest = try folder.writeFile("honest.yaml", "server: \(proxy.base.absoluteString)\ntime-zone: America/Chicago\nresources: [Patient, CarePlan, MedicationRequest, Observation]\n")
        try forEachStore(sqliteFile: true) { tested in
            let store = try XCTUnwrap(tested.location)
            let run = try CLIRunner.run(["sync", "--once", "--config", config, "--store", store])
            XCTAssertNotEqual(run.status, 0, "\(tested.kind): a page relabelled is a problem: \(run.stdout)")
            XCTAssertTrue((run.stdout + run.stderr).contains("held entries of another type"), run.stdout + run.stderr)
            let checkpoint = try tested.reopen().checkpoint(server: relabelling.base.absoluteString, resourceType: "Observation")
            XCTAssertNil(checkpoint, "\(tested.kind): the cursor stays where it was")
            // The next run, from an honest server, pulls what the relabelled pages hid.
            let rerun = try CLIRunner.run(["sync", "--once", "--config", honest, "--store", store])
            XCTAssertEqual(rerun.status, 0, rerun.stdout + rerun.stderr)
            XCTAssertNotNil(try tested.reopen().checkpoint(server: proxy.base.absoluteString, resourceType: "Observation"), "\(tested.kind)")
        }
    }

    /// Pulled pages are held in memory: a sync killed in the middle of its pull (through a proxy that
    /// delays every answer, so that it is surely pulling) leaves no file of patient data behind.
    func testAKilledPullLeavesNoFileOutsideTheStore() throws {
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        try loadKeepingIDs([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: server.base)
        let proxy = try FaultProxyProcess.start(upstream: server.base, schedule: ["delay"])
        defer { proxy.stop() }
        let folder = try makeScratchFolder("killed-pull")
        let config = try folder.writeFile("sync.yaml", "server: \(proxy.base.absoluteString)\ntime-zone: America/Chicago\npage-size: 1\n")
        let temporary = FileManager.default.temporaryDirectory.path
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: temporary))
        for pause in [1.0, 3.0, 6.0] {
            let sync = try CLIRunner.start(["sync", "--once", "--config", config, "--store", folder.appendingPathComponent("care.sqlite").path])
            Thread.sleep(forTimeInterval: pause)
            sync.kill()
            _ = try sync.wait()
        }
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: temporary)).subtracting(before)
            // What the test harness makes (here or in another test process sharing the folder: CLI scratch
            // folders, FHIR and PostgreSQL servers' folders, the benchmarks' PostgreSQL) is not the sync's.
            .filter { name in
                name.hasPrefix("caregate")
                    && !["caregate-cli-", "caregate-fhir-server-", "caregate-postgres-", "caregate-bench-postgres."].contains { name.hasPrefix($0) }
            }
        XCTAssertEqual(left, [], "nothing of the pull stays in the temporary folder")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix("care.sqlite") && $0 != "sync.yaml" }, [])
    }

    func testAMisspelledResourceTypeIsRefusedBeforeTheRun() throws {
        let folder = try makeScratchFolder("typo")
        let config = try folder.writeFile("typo.yaml", "server: http://127.0.0.1:9/fhir\nresources: [Patient, Observaton]\n")
        let run = try CLIRunner.run(["sync", "--once", "--config", config, "--store", folder.appendingPathComponent("s.sqlite").path])
        XCTAssertEqual(run.status, 2)
        XCTAssertTrue(run.stderr.contains("'Observaton', which is not an R4 resource type (did you mean 'Observation'?)"), run.stderr)
    }

    func testAPasswordInTheServerURLReachesNoReportOrStore() throws {
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        try loadKeepingIDs([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: server.base)
        var parts = try XCTUnwrap(URLComponents(url: server.base, resolvingAgainstBaseURL: false))
        parts.user = "hospital"
        parts.password = "s3cret-pw"
        let folder = try makeScratchFolder("password")
        let config = try folder.writeFile("pw.yaml", "server: \(try XCTUnwrap(parts.string))\ntime-zone: America/Chicago\nresources: [Patient]\n")
        try forEachStore(sqliteFile: true) { tested in
            let run = try CLIRunner.run(["sync", "--once", "--config", config, "--store", try XCTUnwrap(tested.location)])
            XCTAssertEqual(run.status, 0, "\(tested.kind): " + run.stdout + run.stderr)
            XCTAssertFalse((run.stdout + run.stderr).contains("s3cret-pw"), run.stdout + run.stderr)
            XCTAssertNil(try Self.storedBytes(tested).range(of: Data("s3cret-pw".utf8)), "\(tested.kind): the store keeps no password")
        }
    }

    /// Everything `tested` holds, as bytes: the SQLite file and its write-ahead log, or a `pg_dump` of the
    /// PostgreSQL database (schema and rows).
    private static func storedBytes(_ tested: TestStore) throws -> Data {
        let location = try XCTUnwrap(tested.location)
        guard tested.kind == .postgresql else {
            return try Data(contentsOf: URL(fileURLWithPath: location)) + ((try? Data(contentsOf: URL(fileURLWithPath: location + "-wal"))) ?? Data())
        }
        let dump = Process()
        dump.executableURL = try XCTUnwrap(PostgresServerProcess.findBinaries()).appendingPathComponent("pg_dump")
        dump.arguments = ["--dbname", location]
        let output = Pipe()
        dump.standardOutput = output
        try dump.run()
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        dump.waitUntilExit()
        XCTAssertEqual(dump.terminationStatus, 0, "pg_dump of the store")
        XCTAssertGreaterThan(bytes.count, 0)
        return bytes
    }
}

/// Issue 27: what waits for a later run is said, and the run is not "done".
final class SyncReportTests: XCTestCase {
    func testOutboxEntriesWaitingForTheirRetryAreReportedAndExitOne() {
        var report = SyncReport(server: "http://127.0.0.1:9/fhir")
        XCTAssertEqual(report.exitStatus, 0)
        report.waiting = 5
        report.nextAttempt = Date(timeIntervalSince1970: 1_800_000_000)
        XCTAssertEqual(report.exitStatus, 1, "entries that wait for a later run are not done")
        XCTAssertTrue(report.text.contains("waiting: 5 outbox entries failed before and wait for a later run (the first from 2027-01-15T08:00:00Z"), report.text)
    }
}
