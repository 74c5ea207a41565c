import Foundation
import GRDB

/// The migrations of the export's own records: its progress per file target (v10), which CarePlan
/// activities have a `detail` (v14), the index its reads of kept resources take (v15), and the first day
/// the care-team reports cover (v16); v17 drops the index of v15.
extension StoreSchema.Table {
    static let exportProgress = "exportProgress"
    static let reportStart = "reportStart"
}

extension StoreSchema {
    /// The checkpoint "server" under which stores before v10 kept each file target's last committed
    /// export, as the cursor `<export id> <file>`.
    static let exportCheckpointServer = "caregate-export"

    /// The last export committed to each file target (``ExportProgress``), in a table of its own rather
    /// than as a sync checkpoint under a made-up server name.
    ///
    /// The checkpoints stores before v10 kept for it move here, so that a partial file an export of an old
    /// store left is still renamed into place by the next run. An export id has no space, so the cursor's
    /// first space ends it (a file path may have spaces); a cursor with none could match no partial file
    /// and is dropped.
    static func createExportProgress(_ db: Database) throws {
        try db.create(table: Table.exportProgress, options: [.withoutRowID]) { t in
            t.column("target", .text).notNull().primaryKey()
            t.column("exportID", .text).notNull()
            t.column("file", .text).notNull()
            t.column("committedDate", .double).notNull()
        }
        try db.execute(
            sql: """
                INSERT INTO exportProgress (target, exportID, file, committedDate)
                    SELECT resourceType, substr(cursor, 1, instr(cursor, ' ') - 1), substr(cursor, instr(cursor, ' ') + 1), updatedDate
                    FROM syncCheckpoint WHERE server = ? AND instr(cursor, ' ') > 1;
                DELETE FROM syncCheckpoint WHERE server = ?;
                """,
            arguments: [exportCheckpointServer, exportCheckpointServer])
    }

    /// Which activities of each CarePlan kept have a `detail` (``SourceResource/activitiesWithDetail``),
    /// beside the CarePlan as received: the export's `detail.status` patch reads it instead of parsing the
    /// body. The paths, one per line; NULL where nothing was recorded (other resources, and CarePlans
    /// kept before v14, which the export answers from their body).
    static func addActivityDetails(_ db: Database) throws {
        try db.alter(table: Table.sourceResource) { t in
            t.add(column: "activitiesWithDetail", .text)
        }
    }

    /// The checkpoint "server" under which stores before v16 kept the first day the reports of each
    /// frequency cover, as the cursor `YYYY-MM-DD`.
    static let reportCheckpointServer = "caregate-reports"

    /// The first day the care-team reports of each frequency cover (``ReportStart``), in a table of its
    /// own rather than as a sync checkpoint under a made-up server name; those kept that way move here.
    static func createReportStart(_ db: Database) throws {
        try db.create(table: Table.reportStart, options: [.withoutRowID]) { t in
            t.column("frequency", .text).notNull().primaryKey()
            t.column("firstDay", .text).notNull()
            t.column("recordedDate", .double).notNull()
        }
        try db.execute(
            sql: """
                INSERT INTO reportStart (frequency, firstDay, recordedDate)
                    SELECT resourceType, cursor, updatedDate FROM syncCheckpoint WHERE server = ?;
                DELETE FROM syncCheckpoint WHERE server = ?;
                """,
            arguments: [reportCheckpointServer, reportCheckpointServer])
    }

    /// The export reads a resource's kept contents by type and id (a CarePlan's recorded activities, for
    /// every care plan an export patches); the unique key leads with the source system, so without an
    /// index each read scanned every resource ever kept. v17 drops it again: see
    /// ``dropSourceResourcesByTypeAndID(_:)``.
    static func indexSourceResourcesByTypeAndID(_ db: Database) throws {
        try db.create(index: "sourceResource_by_resource", on: Table.sourceResource, columns: ["resourceType", "resourceID"])
    }

    /// The index of v15 cost every import one more insert per resource kept, at a random place of a
    /// b-tree keyed by resource id (about 7% of a Synthea import's time, most of it on its writer thread),
    /// for a read an export makes a few times. Reads by type and id take the unique key instead, once per
    /// source system (``SQLiteStore/keptSourceSystems``).
    static func dropSourceResourcesByTypeAndID(_ db: Database) throws {
        try db.execute(sql: "DROP INDEX IF EXISTS sourceResource_by_resource")
    }
}
