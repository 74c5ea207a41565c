import Foundation
import GRDB

// The last export committed to each file target (``ExportProgress``): written inside the transaction of
// the batch that marks the export's entries sent, read by the next export to the same target.
extension SQLiteStore {
    static func recordExportProgress(_ progress: ExportProgress, in db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO exportProgress (target, exportID, file, committedDate) VALUES (?, ?, ?, ?)
                ON CONFLICT (target) DO UPDATE SET exportID = excluded.exportID, file = excluded.file, committedDate = excluded.committedDate
                """,
            arguments: [progress.target, progress.exportID, progress.file, progress.committedDate.storeSeconds])
    }

    /// The last export committed to `target`, if one was.
    public func exportProgress(target: String) throws -> ExportProgress? {
        try readSnapshot { db in
            try Row.fetchOne(db, sql: "SELECT * FROM exportProgress WHERE target = ?", arguments: [target]).map { row in
                ExportProgress(
                    target: row["target"], exportID: row["exportID"], file: row["file"],
                    committedDate: row.date("committedDate") ?? Date(timeIntervalSince1970: 0))
            }
        }
    }
}
