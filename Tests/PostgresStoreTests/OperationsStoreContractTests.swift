import Foundation
import PostgresStore
import Store
import Synchronization
import TestSupport
import XCTest

/// The operations history (sync runs, the last import's coverage) behaves the same on SQLite and on a
/// real PostgreSQL server (``PostgresServerProcess``): one contract, run on both stores.
final class OperationsStoreContractTests: XCTestCase {
    private lazy var both = BothStores(for: self)

    override func tearDown() {
        both.stop()
    }

    private func stores() throws -> [(name: String, store: any SyncRunStore & ImportCoverageStore)] {
        [("SQLite", try both.sqlite("operations-contract")), ("PostgreSQL", try both.postgres())]
    }

    private func run(_ number: Int, result: SyncRun.Result = .ok) -> SyncRun {
        SyncRun(
            runID: "run\(number)", server: "https://ehr.example/fhir", started: Date(timeIntervalSince1970: 1_790_000_000.123456 + Double(number) * 60),
            ended: Date(timeIntervalSince1970: 1_790_000_002.623456 + Double(number) * 60), result: result,
            counts: SyncRun.Counts(pulled: number, imported: 1, failed: 0, pushed: 2, acknowledged: 2, refused: 0, deadLetters: 0, problems: 0),
            report: #"{"server":"https://ehr.example/fhir","n":\#(number)}"#)
    }

    func testSyncRunsAreKeptListedAndPrunedAlikeOnBothStores() throws {
        for (name, store) in try stores() {
            XCTAssertEqual(try store.syncRuns(limit: 10), [], name)
            var ids: [Int64] = []
            for number in 1...7 { ids.append(try store.recordSyncRun(run(number), keeping: 5)) }
            let listed = try store.syncRuns(limit: 10)
            XCTAssertEqual(listed.map(\.runID), ["run7", "run6", "run5", "run4", "run3"], "\(name): the newest 5 kept, newest first")
            XCTAssertTrue(listed.allSatisfy { $0.report == nil }, "\(name): a list carries no reports")
            XCTAssertNil(try store.syncRun(id: ids[0]), "\(name): pruned in the same transaction")
            var expected = run(7)
            expected.id = ids[6]
            XCTAssertEqual(try store.syncRun(id: ids[6]), expected, "\(name): dates and counts read back exactly")

            let failed = SyncRun(runID: "f", server: "s", started: Date(), ended: Date(), result: .failed, error: String(repeating: "e", count: 10_000))
            XCTAssertEqual(try store.syncRun(id: store.recordSyncRun(failed, keeping: 5))?.error?.count, SyncRun.maximumErrorBytes, name)
            var long = run(8)
            long.report = String(repeating: "x", count: SyncRun.maximumReportBytes + 1)
            XCTAssertEqual(try store.syncRun(id: store.recordSyncRun(long, keeping: 5))?.report, #"{"note":"the report was longer than the store keeps"}"#, name)
        }
    }

    func testTheLastImportCoverageIsReplacedAlikeOnBothStores() throws {
        for (name, store) in try stores() {
            XCTAssertNil(try store.lastImportCoverage(), name)
            let first = ImportCoverageRecord(
                recordedDate: Date(timeIntervalSince1970: 1_790_000_000.5), resourcesRead: 3, counts: ["created": 3], seconds: 0.5,
                coverage: ["Patient": ["Patient.photo": 2]])
            try store.recordImportCoverage(first)
            XCTAssertEqual(try store.lastImportCoverage(), first, name)
            let second = ImportCoverageRecord(
                recordedDate: Date(timeIntervalSince1970: 1_790_000_100.25), resourcesRead: 9, counts: ["created": 9], seconds: 1,
                coverage: ["Observation": ["Observation.method": 4]])
            try store.recordImportCoverage(second)
            XCTAssertEqual(try store.lastImportCoverage(), second, "\(name): the next record replaces the last")
        }
    }

    /// Several writers on one PostgreSQL store (as several `caregate sync` workers are): every run is
    /// recorded once, and pruning by id keeps exactly the newest, whatever order the commits came in.
    func testConcurrentRecordersOnOnePostgresStoreKeepTheNewest() throws {
        let name = "ops_concurrent"
        let stores = try [both.postgres(database: name)] + (1..<4).map { _ in try both.postgres(database: name, create: false) }
        let ids = Mutex<[Int64]>([])
        let runs = (0..<40).map { run($0) }
        DispatchQueue.concurrentPerform(iterations: 40) { index in
            let id = try? stores[index % stores.count].recordSyncRun(runs[index], keeping: 10)
            ids.withLock { $0.append(id ?? -1) }
        }
        let recorded = ids.withLock { $0 }
        XCTAssertFalse(recorded.contains(-1), "every run was recorded")
        XCTAssertEqual(Set(recorded).count, 40, "each under its own id")
        XCTAssertEqual(try stores[0].syncRuns(limit: 100).map(\.id), recorded.sorted(by: >).prefix(10).map { Optional($0) }, "the 10 newest ids kept")
    }
}
