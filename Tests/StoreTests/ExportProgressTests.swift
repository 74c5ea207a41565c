import Foundation
import GRDB
@testable import Store
import StoreTestSupport
import TestSupport
import XCTest

/// The last export committed to each file target: recorded by a batch, replaced by the next, and carried
/// over from the sync checkpoints stores before v10 kept it as.
final class ExportProgressTests: XCTestCase {
    func testTheLastCommittedExportPerTargetIsKeptAndReplaced() throws {
        try forEachStore { tested in
            let store = tested.store
            XCTAssertNil(try store.exportProgress(target: "/out"))

            let first = ExportProgress(target: "/out", exportID: "a1", file: "/out/export-1.json", committedDate: Date(timeIntervalSince1970: 100))
            var batch = StoreBatch()
            batch.recordExportProgress(first)
            batch.recordExportProgress(ExportProgress(target: "/other.json", exportID: "b1", file: "/other.json", committedDate: Date(timeIntervalSince1970: 100)))
            try store.apply(batch)
            XCTAssertEqual(try store.exportProgress(target: "/out"), first)

            let second = ExportProgress(target: "/out", exportID: "a2", file: "/out/export-2.json", committedDate: Date(timeIntervalSince1970: 200))
            var next = StoreBatch()
            next.recordExportProgress(second)
            try store.apply(next)
            XCTAssertEqual(try store.exportProgress(target: "/out"), second)
            XCTAssertEqual(try store.exportProgress(target: "/other.json")?.exportID, "b1", "each target has its own")
            XCTAssertEqual(try store.statistics().checkpoints, 0, "an export's progress is no sync checkpoint (\(tested.kind))")
        }
    }

    /// A store that an export of an older CareGate was killed in after its commit: its progress, kept as
    /// the checkpoint `<export id> <file>` of the server `caregate-export`, is found where the export now
    /// looks, so that the next run still renames its partial file into place. Pull checkpoints stay.
    func testAnOldStoresExportCheckpointIsCarriedOver() throws {
        let folder = try makeScratchFolder("export-progress-migration")
        let path = folder.appendingPathComponent("v9.sqlite").path
        let exportID = "0c5d2a8e-6f41-4c1e-9a7b-3e2f1d0c9b8a"
        let file = "/data/exports of the ward/export-20261126184700-0c5d2a8e.json"
        do {
            let queue = try DatabaseQueue(path: path)
            try StoreSchema.migrator.migrate(queue, upTo: "v9 tasks of no care plan in their patient's log")
            try queue.write { db in
                let insert = "INSERT INTO syncCheckpoint (server, resourceType, cursor, updatedDate) VALUES (?, ?, ?, ?)"
                try db.execute(sql: insert, arguments: ["caregate-export", "/data/exports of the ward", "\(exportID) \(file)", 1_000])
                try db.execute(sql: insert, arguments: ["caregate-export", "/data/broken.json", "no-space", 1_000])
                try db.execute(sql: insert, arguments: ["https://ehr.example.org/fhir", "Observation", "2026-11-01T00:00:00Z", 2_000])
            }
        }

        let store = try SQLiteStore(path: path, mode: .existingOnly)
        XCTAssertEqual(try store.integrityCheck(), [])
        XCTAssertEqual(
            try store.exportProgress(target: "/data/exports of the ward"),
            ExportProgress(target: "/data/exports of the ward", exportID: exportID, file: file, committedDate: Date(timeIntervalSince1970: 1_000)))
        XCTAssertNil(try store.exportProgress(target: "/data/broken.json"), "a cursor no partial file could match is dropped")
        XCTAssertEqual(try store.checkpoints().map(\.server), ["https://ehr.example.org/fhir"], "the export's checkpoints moved; the pull's stayed")
    }
}
