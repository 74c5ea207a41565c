import AppServer
import CareModel
import DeviceSimulation
import FHIRCore
import Foundation
import Pipeline
import PostgresStore
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// An app's push while an import holds the store (a sync's import takes seconds to minutes): the push
/// waits only for the import's next safe point, not for its end, and the store ends as the push before
/// the import would leave it.
///
/// The import runs on a store object of its own on the same file, so that it holds the writer lease
/// and the append gate as another process would (`flock` locks belong to open files, not processes).
final class PushDuringImportTests: XCTestCase {
    func testAPushDuringAnImportIsStoredAtItsNextSafePointAndEndsAsThePushBeforeTheImport() async throws {
        let bundles = Array(try Corpus.files(in: "synthea-r4", suffix: ".json").prefix(2)).map(\.path)
        guard !bundles.isEmpty else { return }
        let folder = try makeScratchFolder("push-during-import")
        let before = try await pushAndImport(store: folder.appendingPathComponent("before.sqlite").path, bundles, pushDuring: nil)
        XCTAssertGreaterThan(before.dump.count, 100)
        // The import on a store object of its own (as another process), with the busy timeout 0 (the
        // import waits for the push under way all the same), and on the server's own store object.
        let cases: [(pass: ImportPass, importStore: ImportStore)] = [
            (.input, .ownObject(busyTimeout: 30)), (.entities, .ownObject(busyTimeout: 30)), (.outcomes, .ownObject(busyTimeout: 0)),
            (.outcomes, .serversObject),
        ]
        for (number, (pass, importStore)) in cases.enumerated() {
            let path = folder.appendingPathComponent("during-\(number).sqlite").path
            let during = try await pushAndImport(store: path, bundles, pushDuring: pass, importStore: importStore)
            let label = "\(pass), \(importStore)"
            XCTAssertTrue(during.pushedWhileImporting, "\(label): the push was answered before the import ended")
            if pass == .input { XCTAssertEqual(during.patientsWhenPushed, 2, "\(label): answered before the import wrote any entity") }
            XCTAssertEqual(during.dump, before.dump, "\(label): the store as the push, then the import, leave it")
            XCTAssertEqual(during.outcomes, before.outcomes, label)
            XCTAssertEqual(during.report, before.report, "\(label): the import reports the same either way")
        }
    }

    func testAWriteJobDoesNotGetInWhereAnImportLetsPushesIn() throws {
        try forEachStore(sqliteFile: true) { tested in
            // Three store objects on one store, as three processes would open it (a SQLite file's flock
            // locks belong to its open files; a PostgreSQL store's advisory locks to its sessions).
            let importing = tested.store
            let appending = try tested.reopen()
            let other = try tested.reopen()
            let order = OrderLog()
            let otherStarted = DispatchSemaphore(value: 0)
            let appended = DispatchSemaphore(value: 0)
            try importing.withWriterLease("first job") {
                order.add("job 1 starts")
                DispatchQueue.global().async {
                    otherStarted.signal()
                    try? other.withWriterLease("second job") { order.add("job 2") }
                }
                otherStarted.wait()
                XCTAssertFalse(importing.appendsAreWaiting(), "a write job waiting is no append")
                DispatchQueue.global().async {
                    try? appending.withAppendLease("push") { order.add("push") }
                    appended.signal()
                }
                let deadline = Date().addingTimeInterval(30)
                while !importing.appendsAreWaiting() && Date() < deadline { usleep(1_000) }
                XCTAssertTrue(importing.appendsAreWaiting())
                try importing.yieldToAppends()
                XCTAssertEqual(appended.wait(timeout: .now() + 30), .success)
                // The push ran; the other job still waits for the lease.
                XCTAssertEqual(order.entries, ["job 1 starts", "push"])
                order.add("job 1 ends")
            }
            let deadline = Date().addingTimeInterval(30)
            while order.entries.count < 4 && Date() < deadline { usleep(1_000) }
            XCTAssertEqual(order.entries, ["job 1 starts", "push", "job 1 ends", "job 2"])
        }
    }

    func testAPushWaitsForAJobThatLetsNoneInAndSaysWhoKeptItAfterTheBusyTimeout() throws {
        try forEachStore(sqliteFile: true) { tested in
            let importing = tested.store
            let appending = try reopen(tested, busyTimeout: 0.2)
            try importing.withWriterLease("caregate import") {
                XCTAssertThrowsError(try appending.withAppendLease("push") { XCTFail("ran inside the job") }) { error in
                    XCTAssertTrue("\(error)".contains("caregate import"), "\(error)")
                }
                // A job's own thread appends at once: it holds the store already.
                XCTAssertEqual(try importing.withAppendLease("nested") { 1 }, 1)
            }
            XCTAssertEqual(try appending.withAppendLease("push") { 2 }, 2, "once the job ended")
        }
    }

    // MARK: -

    /// A second store object on the store under test (as another process opens it) whose writers wait
    /// `busyTimeout` seconds for the writer lease.
    private func reopen(_ tested: TestStore, busyTimeout: TimeInterval) throws -> any Store {
        let location = try XCTUnwrap(tested.location)
        switch try StoreLocation.parse(location) {
        case .postgres(let postgres):
            let store = try PostgreSQLStore.open(location: postgres, creating: false, busyTimeout: busyTimeout)
            addTeardownBlock { store.close() }
            return store
        default:
            return try SQLiteStore(path: location, options: SQLiteStore.Options(busyTimeout: busyTimeout))
        }
    }

    private struct Run {
        var dump: [String]
        var outcomes: Int
        /// The import's counts and failures (its seconds left out).
        var report: String
        var pushedWhileImporting: Bool
        /// The patients in the store when the push was answered (the fixture's two before the import).
        var patientsWhenPushed: Int
    }

    /// Where an import meets the push: while it reads its input (held at its first safe point there), in
    /// its entity pass (held before its first entity chunk), or in its outcome pass (held as it writes its
    /// first outcome batch).
    private enum ImportPass: String, CustomStringConvertible {
        case input, entities, outcomes
        var description: String { rawValue }
    }

    /// The store object the import runs on.
    private enum ImportStore: CustomStringConvertible {
        /// Its own, on the same file (another process's lease), with this busy timeout.
        case ownObject(busyTimeout: TimeInterval)
        /// The server's (one process: the lease's in-process locks).
        case serversObject

        var description: String {
            switch self {
            case .ownObject(let timeout): "own store object, busy timeout \(Int(timeout)) s"
            case .serversObject: "the server's store object"
            }
        }
    }

    /// Pat-1's device records an outcome and pushes it; `bundles` (other patients) are imported in small
    /// chunks and batches, for many safe points. The push is sent once the import has reached `pushDuring`
    /// and the import is held there until the push waits; or, without `pushDuring`, before the import.
    private func pushAndImport(
        store path: String, _ bundles: [String], pushDuring: ImportPass?, importStore: ImportStore = .ownObject(busyTimeout: 30)
    ) async throws -> Run {
        let fixture = try AppServerFixture(path: path)
        let headers = fixture.bearer(try fixture.token())
        let importing: InterleavingStore
        switch importStore {
        case .ownObject(let timeout): importing = InterleavingStore(try SQLiteStore(path: path, options: SQLiteStore.Options(busyTimeout: timeout)))
        case .serversObject: importing = InterleavingStore(try XCTUnwrap(fixture.sqlite))
        }
        let importer = try Gateway(store: importing, options: Gateway.Options(timeZone: AppServerFixture.utc)).importer {
            $0.entityChunkSize = 3
            $0.outcomeBatchSize = 50
        }
        let watch = ImportWatch()
        // Signalled once the test has looked at the store after the push's answer: until then the import
        // neither ends nor (held at its input) writes an entity, whatever the machine's speed.
        let looked = DispatchSemaphore(value: 0)
        @Sendable func waitUntilTheTestHasLooked() {
            _ = looked.wait(timeout: .now() + 60)
            looked.signal()
        }
        func holdUntilThePushWaits() {
            let deadline = Date().addingTimeInterval(60)
            while !importing.base.appendsAreWaiting() && Date() < deadline { usleep(1_000) }
        }
        switch pushDuring {
        case .input?:
            importing.beforeYieldingToAppends = { if watch.start() { holdUntilThePushWaits() } }
            importing.beforeApply = { _ in
                guard watch.started else { return false }
                waitUntilTheTestHasLooked()
                return true
            }
        case .entities?:
            importer.progress = { _ in if watch.start() { holdUntilThePushWaits() } }
        case .outcomes?:
            importing.beforeApply = { batch in
                let outcomes = batch.changes.contains { change in
                    switch change {
                    case .add(let entity), .update(let entity), .upsert(let entity, _): entity.kind == .outcome
                    case .delete(let kind, _, _, _): kind == .outcome
                    default: false
                    }
                }
                guard outcomes else { return false }
                if watch.start() { holdUntilThePushWaits() }
                return true
            }
        case nil:
            break
        }
        let job = UncheckedSendable(importer)
        let imported = DispatchSemaphore(value: 0)
        @Sendable func startImport() {
            DispatchQueue.global().async {
                let result = Result { try job.value.run(FHIRInput.sources(for: bundles)) }
                if pushDuring != nil { waitUntilTheTestHasLooked() }
                watch.finish(result)
                imported.signal()
            }
        }
        let pushedWhileImporting = UncheckedSendable(false)
        let patientsWhenPushed = UncheckedSendable(0)
        try await fixture.test { client in
            let transport = SyncTransport(client: client, headers: headers)
            let device = SimulatedDevice(name: "phone", start: AppServerFixture.day0.addingTimeInterval(3 * 86_400))
            try await device.synchronize(transport)
            let task = try XCTUnwrap(device.tasks().first)
            _ = device.record(task, occurrence: 1, value: 72.5)
            if pushDuring != nil {
                startImport()
                while !watch.started { try await Task.sleep(nanoseconds: 1_000_000) }
            }
            try await device.synchronize(transport)
            XCTAssertEqual(device.refusedPushes, 0)
            pushedWhileImporting.value = pushDuring != nil && !watch.ended
            patientsWhenPushed.value = try fixture.store.patients(.current).count
            looked.signal()
        }
        if pushDuring == nil { startImport() }
        imported.wait()
        var report = try XCTUnwrap(try watch.result?.get())
        report.seconds = 0
        XCTAssertGreaterThan(report.entitiesAdded, 100)
        var outcomes = 0
        try importing.forEachVersion(.outcome) { _ in outcomes += 1 }
        return Run(
            dump: try Self.normalizedDump(importing.base), outcomes: outcomes,
            report: "\(report.byType.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }) \(report.failures.map(\.message))",
            pushedWhileImporting: pushedWhileImporting.value, patientsWhenPushed: patientsWhenPushed.value)
    }

    /// The text dump's lines, version uuids taken out, sorted.
    private static func normalizedDump(_ store: SQLiteStore) throws -> [String] {
        var text = Data()
        try StoreDumper(store: store, format: .text).dump { text.append($0) }
        return try NormalizedDump.lines(of: String(decoding: text, as: UTF8.self))
    }
}

/// When the import started and ended, and how.
private final class ImportWatch: @unchecked Sendable {
    private let lock = NSLock()
    private var isStarted = false
    private var isEnded = false
    private(set) var result: Result<ImportReport, any Error>?

    var started: Bool { lock.withLock { isStarted } }
    var ended: Bool { lock.withLock { isEnded } }

    /// Marks the start; true the first time only.
    func start() -> Bool {
        lock.withLock {
            defer { isStarted = true }
            return !isStarted
        }
    }

    func finish(_ result: Result<ImportReport, any Error>) {
        lock.withLock {
            self.result = result
            isEnded = true
        }
    }
}

/// The order things happened in, across threads.
private final class OrderLog: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []

    var entries: [String] { lock.withLock { list } }
    func add(_ entry: String) { lock.withLock { list.append(entry) } }
}

/// A value handed between the test's threads, which take turns with it.
private final class UncheckedSendable<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
