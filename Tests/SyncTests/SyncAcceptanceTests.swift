import CareModel
import FHIR
import Foundation
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// Issue 11's acceptance runs, all through the command line against the real server (sekmet-fhir on
/// 127.0.0.1): Synthea records pulled give the store a direct import of the same files gives; recorded
/// outcomes reach the server once; the same end state through a fault-injecting proxy, and after the
/// job is killed (SIGKILL) twenty times along the way.
final class SyncAcceptanceTests: XCTestCase {
    private func load(_ files: [URL], into server: FHIRServerProcess) throws {
        try loadKeepingIDs(files.map(\.path), into: server.base)
    }

    /// What a store holds, comparable across stores: current entities by id, outcomes by task id and
    /// occurrence with their values.
    private func contents(_ path: String) throws -> [String] {
        try contents(of: SQLiteStore(path: path))
    }

    /// ``contents(_:)`` of a store of either kind.
    private func contents(of store: any Store) throws -> [String] {
        var lines: [String] = []
        var taskIDs: [UUID: String] = [:]
        try store.forEachVersion(.task) { if case .task(let task) = $0 { taskIDs[task.uuid] = task.id } }
        for kind in [EntityKind.patient, .carePlan, .contact, .task] {
            try store.forEachEntity(kind, .current) { lines.append("\(kind) \($0.id)") }
        }
        try store.forEachEntity(.outcome, .current) { entity in
            guard case .outcome(let outcome) = entity else { return }
            let values = outcome.values.map { "\($0.value)\($0.units.map { " \($0)" } ?? "")" }.sorted()
            lines.append("outcome \(taskIDs[outcome.taskUUID] ?? "?") #\(outcome.taskOccurrenceIndex): \(values)")
        }
        return lines.sorted()
    }

    /// Asserts two stores' contents are the same, naming only what differs.
    private func assertSameContents(_ actual: [String], _ expected: [String], _ message: String, line: UInt = #line) {
        let missing = Set(expected).subtracting(actual), extra = Set(actual).subtracting(expected)
        XCTAssertTrue(missing.isEmpty && extra.isEmpty && actual.count == expected.count,
                      "\(message): \(missing.count) missing, e.g. \(missing.sorted().prefix(5)); \(extra.count) extra, e.g. \(extra.sorted().prefix(5)); \(actual.count) vs \(expected.count) lines",
                      line: line)
    }

    /// The Observations CareGate wrote on the server, by their outcome identifier.
    private func exportedObservations(_ base: URL) throws -> [String: Element] {
        var found: [String: Element] = [:]
        try FHIRClient(base: base).search("Observation", [("identifier", "urn:caregate:outcome|"), ("_count", "200")]) { page in
            for resource in page.children(named: "entry").compactMap({ $0.child(named: "resource") }) {
                let identifier = resource.children(named: "identifier").first { $0.childValue("system") == "urn:caregate:outcome" }
                let key = identifier?.childValue("value") ?? "?"
                XCTAssertNil(found[key], "a duplicate Observation for \(key)")
                found[key] = resource
            }
            return true
        }
        return found
    }

    /// On each store, with a server of its own (the count of Observations is the store's).
    func testSyntheaThroughTheServerGivesWhatADirectImportGivesAndOutcomesGoBackOnce() throws {
        let files = try Corpus.files(in: "synthea-r4", suffix: ".json")
        let direct = try makeScratchFolder("sync-synthea-direct").appendingPathComponent("direct.sqlite").path
        XCTAssertEqual(try CLIRunner.run(["import"] + files.map(\.path) + ["--time-zone", "America/Chicago", "--store", direct]).status, 0)
        let expected = try contents(direct)
        XCTAssertGreaterThan(expected.count, 1_000)
        try forEachStore(sqliteFile: true) { tested in
            let server = try FHIRServerProcess.start()
            defer { server.stop() }
            try load(files, into: server)
            let folder = try makeScratchFolder("sync-synthea")
            let config = try writeConfig(server.base, in: folder)
            let synced = try XCTUnwrap(tested.location)

            let first = try CLIRunner.run(["sync", "--once", "--config", config, "--store", synced])
            XCTAssertEqual(first.status, 0, "\(tested.kind): " + first.stdout + first.stderr)
            assertSameContents(try contents(of: tested.reopen()), expected, "\(tested.kind): the synced store holds what a direct import of the same files gives")

            let tasks = try plannedTasks(in: tested.reopen(), count: 3)
            XCTAssertEqual(tasks.count, 3)
            try record(on: tasks, store: synced)
            let second = try CLIRunner.run(["sync", "--once", "--config", config, "--store", synced])
            XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
            XCTAssertTrue(second.stdout.contains("pushed: 3 outcome(s): 3 acknowledged"), "\(tested.kind): " + second.stdout)
            let observations = try exportedObservations(server.base)
            XCTAssertEqual(observations.count, 3, "\(tested.kind): one Observation per outcome")
            for observation in observations.values {
                XCTAssertTrue(observation.child(named: "subject")?.childValue("reference")?.hasPrefix("Patient/") ?? false)
                XCTAssertNotNil(observation.child(named: "code"))
                XCTAssertNotNil(observation.childValue("effectiveDateTime") ?? observation.child(named: "effectivePeriod")?.childValue("start"))
                XCTAssertTrue(["1", "2", "3"].contains(observation.childValue("valueInteger") ?? ""), "\(FHIRJSON.write(observation))")
            }
            for entry in try tested.reopen().outboxEntries(in: .acknowledged, limit: .max) {
                XCTAssertNotNil(entry.server, "\(tested.kind): the server's id and version kept")
            }

            let third = try CLIRunner.run(["sync", "--once", "--config", config, "--store", synced])
            XCTAssertEqual(third.status, 0, third.stdout + third.stderr)
            XCTAssertTrue(third.stdout.contains("pushed: 0 outcome(s)"), "\(tested.kind): " + third.stdout)
            for line in third.stdout.split(separator: "\n") where line.contains("pulled") {
                XCTAssertTrue(line.contains(" 0 created, 0 updated,"), "\(tested.kind): a third sync changes nothing: \(line)")
            }
            XCTAssertEqual(try observationCount(server.base), 3)
        }
    }

    /// 10% dropped connections, and 429s, 500s and truncated answers, on the way in and out.
    /// Issue 27: two syncs at once, and a sync beside outcomes recorded by an app, on one store, in
    /// several timings: the store ends as one sync leaves it (nothing deleted, no dead letter from the
    /// race), and every outcome reaches the server exactly once.
    func testTwoSyncsAtOnceAndASyncBesideRecordedOutcomesEndAsASerialRun() throws {
        let files = Array(try Corpus.files(in: "synthea-r4", suffix: ".json").prefix(3))
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        try load(files, into: server)
        let folder = try makeScratchFolder("sync-concurrent")
        let config = try writeConfig(server.base, in: folder)
        let direct = folder.appendingPathComponent("direct.sqlite").path
        XCTAssertEqual(try CLIRunner.run(["import"] + files.map(\.path) + ["--time-zone", "America/Chicago", "--store", direct]).status, 0)
        let expected = try contents(direct)
        var store = ""
        for (round, pause) in [0.0, 0.1, 0.4].enumerated() {
            store = folder.appendingPathComponent("round-\(round).sqlite").path
            let first = try CLIRunner.start(["sync", "--once", "--config", config, "--store", store])
            Thread.sleep(forTimeInterval: pause)
            let second = try CLIRunner.start(["sync", "--once", "--config", config, "--store", store])
            for run in [try first.wait(), try second.wait()] { XCTAssertEqual(run.status, 0, "round \(round): \(run.stdout) \(run.stderr)") }
            assertSameContents(try contents(store), expected, "round \(round): two syncs at once leave what one import gives")
            let stats = try CLIRunner.run(["store", "stats", "--store", store]).stdout
            XCTAssertTrue(stats.contains("dead letters: 0"), "round \(round): \(stats)")
            let outcomeLine = stats.split(separator: "\n").first { $0.hasPrefix("outcome ") }.map(String.init) ?? ""
            XCTAssertEqual(outcomeLine.split(separator: " ").dropFirst(2).first, "0", "round \(round): no outcome deleted: \(outcomeLine)")
        }

        // A sync beside `outcomes import` of what an app sent (CareKit 4.0 outcomes), then beside
        // `outcomes add`, on the last store: each outcome is kept and reaches the server once.
        let tasks = try plannedTasks(store, count: 3)
        var sent = Data()
        for case .task(let task) in try SQLiteStore(path: store, mode: .readOnly).histories(.task, ids: [tasks[0], tasks[1]]) where task.metadata.nextVersionUUIDs.isEmpty {
            let outcome = Outcome(
                taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 0, values: [OutcomeValue(.integer(7))],
                metadata: EntityMetadata(effectiveDate: task.schedule.eventStart(occurrence: 0) ?? Date(), timezone: TimeZone(identifier: "UTC") ?? .current))
            sent += try CareKitJSON.encodeWire(.outcome(outcome)) + Data("\n".utf8)
        }
        let appFile = folder.appendingPathComponent("from-the-app.jsonl")
        try sent.write(to: appFile)
        let syncing = try CLIRunner.start(["sync", "--once", "--config", config, "--store", store])
        Thread.sleep(forTimeInterval: 0.2)
        let imported = try CLIRunner.run(["outcomes", "import", appFile.path, "--store", store])
        XCTAssertEqual(imported.status, 0, imported.stdout + imported.stderr)
        XCTAssertEqual(try syncing.wait().status, 0)
        let syncingAgain = try CLIRunner.start(["sync", "--once", "--config", config, "--store", store])
        try record(on: [tasks[2]], store: store)
        XCTAssertEqual(try syncingAgain.wait().status, 0)
        let last = try CLIRunner.run(["sync", "--once", "--config", config, "--store", store])
        XCTAssertEqual(last.status, 0, last.stdout + last.stderr)
        XCTAssertEqual(try exportedObservations(server.base).count, tasks.count, "each recorded outcome on the server once")
        let again = try CLIRunner.run(["sync", "--once", "--config", config, "--store", store])
        XCTAssertTrue(again.stdout.contains("pushed: 0 outcome(s)"), again.stdout)
    }

    /// Issue 27, item 2: the disk fills during a sync's import. The run stops with one message and
    /// moves no cursor; once there is room, the next run stores everything a direct import gives.
    func testAFullDiskDuringASyncMovesNoCursorAndTheRerunStoresEverything() throws {
        let files = Array(try Corpus.files(in: "synthea-r4", suffix: ".json").prefix(1))
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        try load(files, into: server)
        guard let disk = try smallDisk(megabytes: 40) else { return }
        let folder = try makeScratchFolder("sync-full-disk-config")
        let config = try writeConfig(server.base, in: folder)
        let store = disk.appendingPathComponent("care.sqlite").path
        // A store made first (Patients only), then the disk filled to 200 KB.
        let made = try CLIRunner.run(["import", Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path, "--store", store])
        XCTAssertEqual(made.status, 0, made.stderr)
        let filler = try fill(disk, leaving: 200 << 10)

        let full = try CLIRunner.run(["sync", "--once", "--config", config, "--store", store])
        XCTAssertEqual(full.status, 1, full.stdout + full.stderr)
        XCTAssertTrue(full.stderr.contains("the disk is full"), full.stderr)
        let reader = try SQLiteStore(path: store, mode: .readOnly)
        for type in SyncConfiguration.defaultResources {
            XCTAssertNil(try reader.checkpoint(server: server.base.absoluteString, resourceType: type), "\(type): no cursor moved")
        }

        try FileManager.default.removeItem(at: filler)
        let rerun = try CLIRunner.run(["sync", "--once", "--config", config, "--store", store])
        XCTAssertEqual(rerun.status, 0, rerun.stdout + rerun.stderr)
        let direct = folder.appendingPathComponent("direct.sqlite").path
        XCTAssertEqual(try CLIRunner.run(["import", Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path, "--store", direct]).status, 0)
        XCTAssertEqual(try CLIRunner.run(["import"] + files.map(\.path) + ["--time-zone", "America/Chicago", "--store", direct]).status, 0)
        assertSameContents(try contents(store), try contents(direct), "nothing lost after the rerun")
    }

    /// On each store, with a server of its own (the count of Observations is the store's).
    func testThroughAFaultyNetworkTheSameEndStateAndNoDuplicate() throws {
        let files = Array(try Corpus.files(in: "synthea-r4", suffix: ".json").sorted { $0.path < $1.path }.prefix(3))
        let direct = try makeScratchFolder("sync-faults-direct").appendingPathComponent("direct.sqlite").path
        XCTAssertEqual(try CLIRunner.run(["import"] + files.map(\.path) + ["--time-zone", "America/Chicago", "--store", direct]).status, 0)
        let expected = try contents(direct)
        try forEachStore(sqliteFile: true) { tested in
            let server = try FHIRServerProcess.start()
            defer { server.stop() }
            try load(files, into: server)
            let schedule = ["ok", "ok", "drop", "ok", "429", "ok", "ok", "500", "ok", "truncate", "ok", "ok", "drop", "ok", "ok", "ok", "ok", "ok", "ok", "ok"]
            let proxy = try FaultProxyProcess.start(upstream: server.base, schedule: schedule)
            defer { proxy.stop() }
            let folder = try makeScratchFolder("sync-faults")
            let config = try writeConfig(proxy.base, in: folder, pageSize: 50)
            let synced = try XCTUnwrap(tested.location)

            let first = try CLIRunner.run(["sync", "--once", "--config", config, "--store", synced])
            XCTAssertEqual(first.status, 0, "\(tested.kind): " + first.stdout + first.stderr)
            assertSameContents(try contents(of: tested.reopen()), expected, "\(tested.kind): nothing lost on the way in")
            let tasks = try plannedTasks(in: tested.reopen(), count: 3)
            try record(on: tasks, store: synced)
            let second = try CLIRunner.run(["sync", "--once", "--config", config, "--store", synced])
            XCTAssertEqual(second.status, 0, "\(tested.kind): " + second.stdout + second.stderr)
            XCTAssertTrue(second.stdout.contains("3 acknowledged"), "\(tested.kind): " + second.stdout)
            XCTAssertEqual(try observationCount(server.base), 3, "\(tested.kind): no duplicate on the server")
            let faults = try proxy.stats()
            for fault in ["drop", "429", "500", "truncate"] { XCTAssertGreaterThan(faults[fault] ?? 0, 0, "\(tested.kind): \(fault) happened: \(faults)") }
        }
    }

    /// SIGKILL at random moments, twenty times (ten while pulling into an empty store, ten while
    /// pushing), each time started again: the end state is that of one uninterrupted run.
    func testKilledTwentyTimesEndsAsOneUninterruptedRun() throws {
        let files = Array(try Corpus.files(in: "synthea-r4", suffix: ".json").sorted { $0.path < $1.path }.prefix(3))
        let server = try FHIRServerProcess.start()
        defer { server.stop() }
        try load(files, into: server)
        let folder = try makeScratchFolder("sync-kill")
        let config = try writeConfig(server.base, in: folder, pageSize: 50)
        let killed = folder.appendingPathComponent("killed.sqlite").path
        let direct = folder.appendingPathComponent("direct.sqlite").path
        var generator = SystemRandomNumberGenerator()

        func killAtRandom(_ times: Int, maximum: Double) throws {
            for _ in 0..<times {
                let run = try CLIRunner.start(["sync", "--once", "--config", config, "--store", killed])
                Thread.sleep(forTimeInterval: Double.random(in: 0.05...maximum, using: &generator))
                run.kill()
                _ = try? run.wait()
            }
        }
        try killAtRandom(10, maximum: 2.5)
        let pulled = try CLIRunner.run(["sync", "--once", "--config", config, "--store", killed])
        XCTAssertEqual(pulled.status, 0, pulled.stdout + pulled.stderr)
        XCTAssertEqual(try CLIRunner.run(["import"] + files.map(\.path) + ["--time-zone", "America/Chicago", "--store", direct]).status, 0)
        assertSameContents(try contents(killed), try contents(direct), "the killed runs left what one run leaves")
        XCTAssertEqual(try SQLiteStore(path: killed).integrityCheck(), [])

        let tasks = try plannedTasks(killed, count: 3)
        try record(on: tasks, store: killed)
        try killAtRandom(10, maximum: 1.5)
        let pushed = try CLIRunner.run(["sync", "--once", "--config", config, "--store", killed])
        XCTAssertEqual(pushed.status, 0, pushed.stdout + pushed.stderr)
        let store = try SQLiteStore(path: killed)
        XCTAssertEqual(try store.outboxEntries(in: .acknowledged).count, 3, "every outcome acknowledged")
        XCTAssertEqual(try store.outboxEntries(in: .pending).count + store.outboxEntries(in: .failed).count, 0)
        XCTAssertEqual(try observationCount(server.base), 3, "each outcome once on the server")
        XCTAssertEqual(try store.integrityCheck(), [])
    }
}
