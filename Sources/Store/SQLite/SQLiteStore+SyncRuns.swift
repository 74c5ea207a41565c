import Foundation
import GRDB

// The history of sync runs (``SyncRun``): one row per run that ended, the newest kept.
extension SQLiteStore: SyncRunStore {
    public func recordSyncRun(_ run: SyncRun, keeping: Int) throws -> Int64 {
        let report = run.report.map { $0.utf8.count <= SyncRun.maximumReportBytes ? $0 : #"{"note":"the report was longer than the store keeps"}"# }
        let error = run.error.map { String($0.prefix(SyncRun.maximumErrorBytes)) }
        let counts = run.counts
        return try writeTransaction { db in
            try db.execute(
                sql: """
                    INSERT INTO syncRun (runID, server, started, ended, result, pulled, imported, failed, pushed, acknowledged, refused,
                        deadLetters, problems, report, error)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    String(run.runID.prefix(64)), String(run.server.prefix(2_048)), run.started.storeSeconds, run.ended.storeSeconds,
                    run.result.rawValue, counts.pulled, counts.imported, counts.failed, counts.pushed, counts.acknowledged, counts.refused,
                    counts.deadLetters, counts.problems, report, error,
                ])
            let id = db.lastInsertedRowID
            try db.execute(sql: "DELETE FROM syncRun WHERE id <= ?", arguments: [id - Int64(max(1, keeping))])
            return id
        }
    }

    public func syncRuns(limit: Int) throws -> [SyncRun] {
        // A store opened for reading that an older CareGate made has no history yet.
        try readSnapshot { db in
            guard try db.tableExists("syncRun") else { return [] }
            return try Row.fetchAll(db, sql: "SELECT \(Self.syncRunColumns), NULL AS report FROM syncRun ORDER BY id DESC LIMIT ?", arguments: [max(0, limit)])
                .map(Self.syncRun(from:))
        }
    }

    public func syncRun(id: Int64) throws -> SyncRun? {
        try readSnapshot { db in
            guard try db.tableExists("syncRun") else { return nil }
            return try Row.fetchOne(db, sql: "SELECT \(Self.syncRunColumns), report FROM syncRun WHERE id = ?", arguments: [id]).map(Self.syncRun(from:))
        }
    }

    private static var syncRunColumns: String {
        "id, runID, server, started, ended, result, pulled, imported, failed, pushed, acknowledged, refused, deadLetters, problems, error"
    }

    private static func syncRun(from row: Row) -> SyncRun {
        SyncRun(
            id: row["id"], runID: row["runID"] ?? "", server: row["server"] ?? "",
            started: row.date("started") ?? Date(timeIntervalSince1970: 0), ended: row.date("ended") ?? Date(timeIntervalSince1970: 0),
            result: (row["result"] as String?).flatMap(SyncRun.Result.init(rawValue:)) ?? .failed,
            counts: SyncRun.Counts(
                pulled: row["pulled"] ?? 0, imported: row["imported"] ?? 0, failed: row["failed"] ?? 0, pushed: row["pushed"] ?? 0,
                acknowledged: row["acknowledged"] ?? 0, refused: row["refused"] ?? 0, deadLetters: row["deadLetters"] ?? 0,
                problems: row["problems"] ?? 0),
            report: row["report"], error: row["error"])
    }
}
