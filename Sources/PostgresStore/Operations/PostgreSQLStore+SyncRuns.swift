import Foundation
import PostgresNIO
import Store

// The history of sync runs (``SyncRun``), as the SQLite store keeps it: one row per run, the newest kept.
extension PostgreSQLStore: SyncRunStore {
    public func recordSyncRun(_ run: SyncRun, keeping: Int) throws -> Int64 {
        let report = run.report.map { $0.utf8.count <= SyncRun.maximumReportBytes ? $0 : #"{"note":"the report was longer than the store keeps"}"# }
        let error = run.error.map { String($0.prefix(SyncRun.maximumErrorBytes)) }
        let counts = run.counts
        let (runID, server) = (String(run.runID.prefix(64)), String(run.server.prefix(2_048)))
        let (started, ended, result) = (run.started.timeIntervalSince1970, run.ended.timeIntervalSince1970, run.result.rawValue)
        let kept = Int64(max(1, keeping))
        return try database.run { client in
            try await client.withTransaction(logger: Self.logger) { connection in
                // Recorders one at a time (runs end seldom): each prune then sees every run committed before
                // it, so several workers never leave more than `kept`.
                try await connection.finish("SELECT pg_advisory_xact_lock(\(Self.syncRunLockKey))", logger: Self.logger)
                let rows = try await connection.query("""
                    INSERT INTO sync_run (run_id, server, started, ended, result, pulled, imported, failed, pushed, acknowledged, refused,
                        dead_letters, problems, report, error)
                    VALUES (\(runID), \(server), \(started), \(ended), \(result), \(Int64(counts.pulled)), \(Int64(counts.imported)),
                        \(Int64(counts.failed)), \(Int64(counts.pushed)), \(Int64(counts.acknowledged)), \(Int64(counts.refused)),
                        \(Int64(counts.deadLetters)), \(Int64(counts.problems)), \(report), \(error))
                    RETURNING id
                    """, logger: Self.logger)
                var id: Int64 = 0
                for try await value in rows.decode(Int64.self) { id = value }
                // Ids are not dense (a rolled-back insert uses one): keep the newest `kept` by id, not by arithmetic.
                try await connection.finish(
                    "DELETE FROM sync_run WHERE id < (SELECT min(id) FROM (SELECT id FROM sync_run ORDER BY id DESC LIMIT \(kept)) AS newest)",
                    logger: Self.logger)
                return id
            }
        }
    }

    public func syncRuns(limit: Int) throws -> [SyncRun] {
        let limit = Int64(max(0, limit))
        return try database.run { client in
            try await Self.runs(client.query("SELECT \(unescaped: Self.columns), NULL::text FROM sync_run ORDER BY id DESC LIMIT \(limit)", logger: Self.logger))
        }
    }

    public func syncRun(id: Int64) throws -> SyncRun? {
        try database.run { client in
            try await Self.runs(client.query("SELECT \(unescaped: Self.columns), report FROM sync_run WHERE id = \(id)", logger: Self.logger)).first
        }
    }

    /// The transaction-scoped advisory lock of recorders ("CGSYNCRN" in ASCII).
    static let syncRunLockKey: Int64 = 0x4347_5359_4E43_524E

    private static let columns =
        "id, run_id, server, started, ended, result, pulled, imported, failed, pushed, acknowledged, refused, dead_letters, problems, error"

    private static func runs(_ rows: PostgresRowSequence) async throws -> [SyncRun] {
        var runs: [SyncRun] = []
        for try await row in rows {
            let (id, runID, server, started, ended, result, pulled, imported, failed, pushed, acknowledged, refused, deadLetters, problems, error, report) =
                try row.decode((Int64, String, String, Double, Double, String, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, String?, String?).self)
            runs.append(SyncRun(
                id: id, runID: runID, server: server, started: Date(timeIntervalSince1970: started), ended: Date(timeIntervalSince1970: ended),
                result: SyncRun.Result(rawValue: result) ?? .failed,
                counts: SyncRun.Counts(
                    pulled: Int(pulled), imported: Int(imported), failed: Int(failed), pushed: Int(pushed), acknowledged: Int(acknowledged),
                    refused: Int(refused), deadLetters: Int(deadLetters), problems: Int(problems)),
                report: report, error: error))
        }
        return runs
    }
}
