import Foundation
import GRDB
@testable import Store
import StoreTestSupport
import TestSupport
import XCTest

/// What the store keeps for an operator to look back on: the history of sync runs (bounded, newest
/// first, reports read one at a time) and the last import's coverage (one record, bounded).
final class OperationsHistoryTests: XCTestCase {
    private func run(_ number: Int, result: SyncRun.Result = .ok) -> SyncRun {
        SyncRun(
            runID: "run\(number)", server: "https://ehr.example/fhir", started: Date(timeIntervalSince1970: Double(number) * 60),
            ended: Date(timeIntervalSince1970: Double(number) * 60 + 2.5), result: result,
            counts: SyncRun.Counts(pulled: number, imported: 1, failed: 0, pushed: 2, acknowledged: 2, refused: 0, deadLetters: 0, problems: 0),
            report: #"{"server":"https://ehr.example/fhir","n":\#(number)}"#)
    }

    func testRunsAreListedNewestFirstWithoutReportsAndOnlyTheNewestAreKept() throws {
        try forEachStore { tested in
            let store = tested.store
            XCTAssertEqual(try store.syncRuns(limit: 10), [])
            var ids: [Int64] = []
            for number in 1...7 { ids.append(try store.recordSyncRun(run(number), keeping: 5)) }
            let listed = try store.syncRuns(limit: 10)
            XCTAssertEqual(listed.map(\.runID), ["run7", "run6", "run5", "run4", "run3"], "the newest 5 kept, newest first")
            XCTAssertTrue(listed.allSatisfy { $0.report == nil }, "a list carries no reports")
            XCTAssertEqual(listed.first?.seconds, 2.5)
            XCTAssertNil(try store.syncRun(id: ids[0]), "pruned in the same transaction")
            let last = try XCTUnwrap(store.syncRun(id: ids[6]))
            XCTAssertEqual(last, { var expected = run(7); expected.id = ids[6]; return expected }())
            XCTAssertEqual(try store.syncRuns(limit: 2).count, 2)
        }
    }

    func testAFailedRunKeepsItsErrorAndAnOverlongReportIsReplacedByANote() throws {
        try forEachStore { tested in
            let store = tested.store
            let failed = SyncRun(runID: "f", server: "s", started: Date(), ended: Date(), result: .failed, error: String(repeating: "e", count: 10_000))
            let id = try store.recordSyncRun(failed)
            XCTAssertEqual(try store.syncRun(id: id)?.error?.count, SyncRun.maximumErrorBytes)
            XCTAssertEqual(try store.syncRun(id: id)?.result, .failed)
            var long = run(1)
            long.report = String(repeating: "x", count: SyncRun.maximumReportBytes + 1)
            let longID = try store.recordSyncRun(long)
            XCTAssertEqual(try store.syncRun(id: longID)?.report, #"{"note":"the report was longer than the store keeps"}"#)
        }
    }

    func testTheLastImportCoverageReplacesTheOneBeforeAndIsBounded() throws {
        try forEachStore(sqliteFile: true) { tested in
            let store = tested.store
            XCTAssertNil(try store.lastImportCoverage())
            let first = ImportCoverageRecord(resourcesRead: 3, counts: ["created": 3], seconds: 0.5, coverage: ["Patient": ["Patient.photo": 2]])
            try store.recordImportCoverage(first)
            var paths: [String: Int] = [:]
            for index in 0..<(ImportCoverageRecord.maximumPaths + 10) { paths["Observation.extension\(index)"] = index == 0 ? 1_000 : 1 }
            let second = ImportCoverageRecord(resourcesRead: 9, counts: ["created": 9], seconds: 1, coverage: ["Observation": paths])
            XCTAssertEqual(second.pathCount, ImportCoverageRecord.maximumPaths)
            XCTAssertEqual(second.omittedPaths, 10)
            XCTAssertEqual(second.coverage["Observation"]?["Observation.extension0"], 1_000, "the most frequent paths are kept")
            try store.recordImportCoverage(second)
            let reopened = try StoreFixtures.reopenedForReading(tested)
            let kept = try XCTUnwrap(reopened.lastImportCoverage())
            XCTAssertEqual(kept.resourcesRead, 9)
            XCTAssertEqual(kept.coverage, second.coverage)
            XCTAssertEqual(try reopened.syncRunHistory?.syncRuns(limit: 5), [])
        }
    }

    func testAStoreMadeByAnOlderCareGateIsReadWithoutHistoryAndMigratedWhenOpenedForWriting() throws {
        let folder = try makeScratchFolder("operations-migration")
        let path = folder.appendingPathComponent("old.sqlite").path
        do {
            let queue = try DatabaseQueue(path: path)
            try StoreSchema.migrator.migrate(queue, upTo: "consent decisions")
        }
        let reader = try SQLiteStore(path: path, mode: .readOnly)
        XCTAssertEqual(try reader.syncRuns(limit: 5), [])
        XCTAssertNil(try reader.lastImportCoverage())
        let writer = try SQLiteStore(path: path, mode: .existingOnly)
        XCTAssertEqual(try writer.recordSyncRun(run(1)), 1)
        XCTAssertEqual(try writer.integrityCheck(), [])
    }
}
