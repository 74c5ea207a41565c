import Foundation
import GRDB

// The first day the reports of each frequency cover (``ReportStart``), kept by their first run.
extension SQLiteStore {
    /// Records `start` unless one is kept for its frequency: the first run's start stays, whichever of
    /// two runs at once commits second.
    static func recordReportStart(_ start: ReportStart, in db: Database) throws {
        try db.execute(
            sql: "INSERT INTO reportStart (frequency, firstDay, recordedDate) VALUES (?, ?, ?) ON CONFLICT (frequency) DO NOTHING",
            arguments: [start.frequency, start.firstDay, start.recordedDate.storeSeconds])
    }

    /// The first day the reports of `frequency` cover, if their first run recorded one.
    public func reportStart(frequency: String) throws -> ReportStart? {
        try readSnapshot { db in
            try Row.fetchOne(db, sql: "SELECT * FROM reportStart WHERE frequency = ?", arguments: [frequency]).map { row in
                ReportStart(frequency: row["frequency"], firstDay: row["firstDay"], recordedDate: row.date("recordedDate") ?? Date(timeIntervalSince1970: 0))
            }
        }
    }
}
