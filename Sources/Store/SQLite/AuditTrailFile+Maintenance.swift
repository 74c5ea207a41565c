import Foundation
import GRDB

/// What keeps the audit trail bounded: refusals counted per minute rather than written one row each,
/// pruning past the retention, and its size, for `caregate audit --stats`.
extension AuditTrailFile {
    /// The most rows one pruning transaction deletes: the trail's write lock is never held long, so the
    /// server's audit commits wait for a short transaction at most.
    static let pruneBatch = 5_000

    /// Adds `counts` to the refusal counts, one transaction.
    func recordRefusals(_ counts: [AuditRefusalCount], lastStoreID: () throws -> Int64) throws {
        guard !counts.isEmpty else { return }
        let database = try writer(lastStoreID: lastStoreID)
        do {
            try database.write { db in
                let upsert = try db.cachedStatement(sql: """
                    INSERT INTO audit_refusals (minute, action, status, reason, count) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (minute, action, status, reason) DO UPDATE SET count = count + excluded.count
                    """)
                for count in counts {
                    try upsert.execute(arguments: [Int64(count.minute.timeIntervalSince1970), count.action, count.status, count.reason, count.count])
                }
            }
        } catch {
            throw failure(error)
        }
    }

    /// The latest `limit` refusal counts, newest minute first; none when the trail has no file (or an
    /// older one without counts).
    func refusals(limit: Int, lastStoreID: () throws -> Int64) throws -> [AuditRefusalCount] {
        guard let database = try reader(lastStoreID: lastStoreID) else { return [] }
        do {
            return try database.read { db in
                guard try db.tableExists("audit_refusals") else { return [] }
                return try Row.fetchAll(
                    db, sql: "SELECT * FROM audit_refusals ORDER BY minute DESC, action, status, reason LIMIT ?", arguments: [max(0, limit)]
                ).map { row in
                    AuditRefusalCount(
                        minute: Date(timeIntervalSince1970: TimeInterval(row["minute"] as Int64? ?? 0)), action: row["action"] ?? "",
                        status: row["status"] ?? 0, reason: row["reason"] ?? "", count: row["count"] ?? 0)
                }
            }
        } catch {
            throw failure(error)
        }
    }

    /// Deletes entries and refusal counts dated before `cutoff`, ``pruneBatch`` rows per transaction;
    /// returns how many rows went.
    func prune(before cutoff: Date, lastStoreID: () throws -> Int64) throws -> Int {
        let database = try writer(lastStoreID: lastStoreID)
        let seconds = cutoff.timeIntervalSince1970
        var deleted = 0
        do {
            for table in ["audit", "audit_refusals"] {
                while true {
                    let gone = try database.write { db -> Int in
                        if table == "audit" {
                            try db.execute(
                                sql: "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE date < ? ORDER BY date LIMIT ?)",
                                arguments: [seconds, Self.pruneBatch])
                        } else {
                            try db.execute(
                                sql: """
                                    DELETE FROM audit_refusals WHERE (minute, action, status, reason) IN
                                    (SELECT minute, action, status, reason FROM audit_refusals WHERE minute < ? ORDER BY minute LIMIT ?)
                                    """,
                                arguments: [Int64(seconds.rounded(.down)), Self.pruneBatch])
                        }
                        return db.changesCount
                    }
                    deleted += gone
                    if gone < Self.pruneBatch { break }
                }
            }
        } catch {
            throw failure(error)
        }
        return deleted
    }

    /// The file's rows, oldest and newest, and bytes on disk (file, WAL and shared memory).
    func statistics(lastStoreID: () throws -> Int64) throws -> AuditTrailStatistics {
        var statistics = AuditTrailStatistics(path: path)
        if path != ":memory:" {
            for file in [path, path + "-wal", path + "-shm"] {
                let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.int64Value ?? 0
                statistics.bytes += size
            }
        }
        guard let database = try reader(lastStoreID: lastStoreID) else { return statistics }
        do {
            try database.read { db in
                if let row = try Row.fetchOne(
                    db, sql: "SELECT count(*) AS n, coalesce(sum(status = ? AND action NOT LIKE 'caregate %'), 0) AS open, min(date) AS oldest, max(date) AS newest FROM audit",
                    arguments: [AuditEntry.unansweredStatus])
                {
                    statistics.entries = row["n"] ?? 0
                    statistics.unanswered = row["open"] ?? 0
                    statistics.oldest = (row["oldest"] as Double?).map(Date.init(timeIntervalSince1970:))
                    statistics.newest = (row["newest"] as Double?).map(Date.init(timeIntervalSince1970:))
                }
                guard try db.tableExists("audit_refusals") else { return }
                if let row = try Row.fetchOne(
                    db, sql: "SELECT count(*) AS n, coalesce(sum(count), 0) AS requests, min(minute) AS oldest, max(minute) AS newest FROM audit_refusals")
                {
                    statistics.refusalRows = row["n"] ?? 0
                    statistics.refusedRequests = row["requests"] ?? 0
                    statistics.oldestRefusal = (row["oldest"] as Int64?).map { Date(timeIntervalSince1970: TimeInterval($0)) }
                    statistics.newestRefusal = (row["newest"] as Int64?).map { Date(timeIntervalSince1970: TimeInterval($0)) }
                }
            }
        } catch {
            throw failure(error)
        }
        return statistics
    }
}
