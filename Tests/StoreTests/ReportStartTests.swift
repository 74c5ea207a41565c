import Foundation
import GRDB
@testable import Store
import StoreTestSupport
import TestSupport
import XCTest

/// The first day the reports of each frequency cover: recorded once (a second record leaves the first),
/// and carried over from the sync checkpoints stores before v16 kept it as.
final class ReportStartTests: XCTestCase {
    func testTheFirstRecordedStartOfAFrequencyStays() throws {
        try forEachStore { tested in
            let store = tested.store
            XCTAssertNil(try store.reportStart(frequency: "weekly"))

            let first = ReportStart(frequency: "weekly", firstDay: "2026-11-16", recordedDate: Date(timeIntervalSince1970: 100))
            var batch = StoreBatch()
            batch.recordReportStart(first)
            batch.recordReportStart(ReportStart(frequency: "monthly", firstDay: "2026-10-01", recordedDate: Date(timeIntervalSince1970: 100)))
            try store.apply(batch)
            var later = StoreBatch()
            later.recordReportStart(ReportStart(frequency: "weekly", firstDay: "2026-11-23", recordedDate: Date(timeIntervalSince1970: 200)))
            try store.apply(later)

            XCTAssertEqual(try store.reportStart(frequency: "weekly"), first, "a run that lost the race keeps the first start")
            XCTAssertEqual(try store.reportStart(frequency: "monthly")?.firstDay, "2026-10-01", "each frequency has its own")
            XCTAssertEqual(try store.statistics().checkpoints, 0, "a report's start is no sync checkpoint (\(tested.kind))")
        }
    }

    func testAnOldStoresReportCheckpointIsCarriedOver() throws {
        let folder = try makeScratchFolder("report-start-migration")
        let path = folder.appendingPathComponent("v15.sqlite").path
        do {
            let queue = try DatabaseQueue(path: path)
            try StoreSchema.migrator.migrate(queue, upTo: "v15 source resources by type and id")
            try queue.write { db in
                let insert = "INSERT INTO syncCheckpoint (server, resourceType, cursor, updatedDate) VALUES (?, ?, ?, ?)"
                try db.execute(sql: insert, arguments: ["caregate-reports", "weekly", "2026-11-16", 1_000])
                try db.execute(sql: insert, arguments: ["https://ehr.example.org/fhir", "Observation", "2026-11-01T00:00:00Z", 2_000])
            }
        }

        let store = try SQLiteStore(path: path, mode: .existingOnly)
        XCTAssertEqual(try store.integrityCheck(), [])
        XCTAssertEqual(
            try store.reportStart(frequency: "weekly"),
            ReportStart(frequency: "weekly", firstDay: "2026-11-16", recordedDate: Date(timeIntervalSince1970: 1_000)))
        XCTAssertEqual(try store.checkpoints().map(\.server), ["https://ehr.example.org/fhir"], "the reports' checkpoint moved; the pull's stayed")
    }
}
