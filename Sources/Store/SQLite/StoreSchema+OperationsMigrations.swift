import GRDB

// What an operator looks back on (issue 48): the sync runs and the last import's coverage.
extension StoreSchema {
    /// The history of sync runs (``SyncRun``; the newest kept, pruned as each is recorded) and the last
    /// import's coverage (``ImportCoverageRecord``, one row).
    static func createSyncRunsAndImportCoverage(_ db: Database) throws {
        try db.create(table: "syncRun") { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("runID", .text).notNull()
            t.column("server", .text).notNull()
            t.column("started", .double).notNull()
            t.column("ended", .double).notNull()
            t.column("result", .text).notNull()
            for count in ["pulled", "imported", "failed", "pushed", "acknowledged", "refused", "deadLetters", "problems"] {
                t.column(count, .integer).notNull().defaults(to: 0)
            }
            t.column("report", .text)
            t.column("error", .text)
        }
        try db.create(table: "lastImportCoverage") { t in
            t.column("slot", .integer).primaryKey()
            t.column("recordedDate", .double).notNull()
            t.column("record", .text).notNull()
        }
    }
}
