import CommandSupport
import Foundation
import Store
import Synchronization
import TestSupport
import XCTest

/// `caregate sync --background`: the job's threads take Linux's idle CPU policy, and what it does is what
/// it does without the flag; with `--priority auto` (the default) it is a background job exactly while
/// `caregate serve` serves its store.
final class BackgroundSyncCLITests: XCTestCase {
    /// The policy holds for the thread that enters the background and for the threads it starts.
    func testTheBackgroundIsTheIdlePolicyAndThreadsStartedAfterInheritIt() throws {
        #if os(Linux)
        let policies = Mutex<[Int32]>([])
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            do {
                try BackgroundPriority.enter()
                policies.withLock { $0.append(sched_getscheduler(0)) }
                let child = Thread {
                    policies.withLock { $0.append(sched_getscheduler(0)) }
                    done.signal()
                }
                child.start()
            } catch {
                XCTFail("\(error)")
                done.signal()
            }
        }
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 120), .success, "an idle-policy thread is starved while the cores are busy: a bound, not a measurement")
        XCTAssertEqual(policies.withLock { $0 }, [5, 5], "SCHED_IDLE (5) in the thread and in the one it started")
        XCTAssertNotEqual(sched_getscheduler(0), 5, "other threads keep theirs")
        #else
        throw XCTSkip("the idle CPU policy is Linux's")
        #endif
    }

    func testABackgroundSyncDoesWhatASyncDoes() throws {
        var outputs: [String] = []
        for flags in [[], ["--background"]] {
            let folder = try makeScratchFolder("background-sync")
            let provider = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
            let config = try folder.writeFile("sync.yaml", "server: \(provider)\npush-to: \(folder.appendingPathComponent("out").path)\ntime-zone: America/Chicago\n")
            let run = try CLIRunner.run(["sync", "--once"] + flags + ["--config", config, "--store", folder.appendingPathComponent("s.sqlite").path])
            XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
            // The report without its timings.
            outputs.append(run.stdout.split(separator: "\n").filter { !$0.contains(" s (pull ") }.joined(separator: "\n"))
        }
        XCTAssertEqual(outputs[0], outputs[1])
        XCTAssertTrue(outputs[1].contains("pulled CarePlan: 1 read: 1 created"), outputs[1])
    }

    func testASyncOfAServedStoreRunsAsABackgroundJobUnlessToldOtherwise() throws {
        let provider = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
        let note = "caregate serve serves this store: the job runs as a background job"
        for (flags, served, background) in [([String](), false, false), ([], true, true), (["--priority", "normal"], true, false)] {
            let folder = try makeScratchFolder("served-sync")
            let store = folder.appendingPathComponent("s.sqlite").path
            let config = try folder.writeFile("sync.yaml", "server: \(provider)\npush-to: \(folder.appendingPathComponent("out").path)\ntime-zone: America/Chicago\n")
            XCTAssertFalse(ServingMarker.isServed(storePath: store))
            let marker = served ? try ServingMarker(storePath: store) : nil
            XCTAssertEqual(ServingMarker.isServed(storePath: store), served)
            let run = try CLIRunner.run(["sync", "--once"] + flags + ["--config", config, "--store", store])
            XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
            #if os(Linux)
            XCTAssertEqual(run.stderr.contains(note), background, "\(flags), served: \(served): \(run.stderr)")
            #endif
            withExtendedLifetime(marker) {}
        }
        // The kernel drops the server's lock with it.
        let store = try makeScratchFolder("served-sync-ended").appendingPathComponent("s.sqlite").path
        do { _ = try ServingMarker(storePath: store) }
        XCTAssertFalse(ServingMarker.isServed(storePath: store))
        let bad = try CLIRunner.run(["sync", "--once", "--priority", "high", "--config", "x.yaml"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("auto|normal|background") || bad.stderr.contains("'high'"), bad.stderr)
        let both = try CLIRunner.run(["sync", "--once", "--background", "--priority", "normal", "--config", "x.yaml"])
        XCTAssertEqual(both.status, 2)
        XCTAssertTrue(both.stderr.contains("disagree"), both.stderr)
    }
}
