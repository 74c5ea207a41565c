import Foundation
import PostgresNIO
import Store

// The audit trail in the store's database, shared by every `caregate serve` instance on it: the same
// entries, completion by id, refusal counts, retention and statistics as the SQLite store's trail file
// (AuditTrailFile.swift). Its writes take no lock of the store's writers: a row insert never waits for an
// import.
extension PostgreSQLStore: AuditTrailStore {
    /// Rows deleted per transaction when pruning.
    static let pruneBatch: Int64 = 5_000

    @discardableResult
    public func recordAudit(_ entries: [AuditEntry]) throws -> [Int64] {
        guard !entries.isEmpty else { return [] }
        return try database.run { client in
            try await client.withTransaction(logger: Self.logger) { connection in
                var ids: [Int64] = []
                for entry in entries {
                    let (date, status) = (entry.date.timeIntervalSince1970, Int64(entry.status))
                    if let id = entry.id {
                        try await connection.finish("UPDATE audit SET date = \(date), status = \(status), detail = \(entry.detail) WHERE id = \(id)", logger: Self.logger)
                        ids.append(id)
                    } else {
                        let address = entry.clientAddress.map { String($0.prefix(Self.maximumAddressLength)) }
                        let rows = try await connection.query("""
                            INSERT INTO audit (date, subject, patient_id, action, status, detail, client_address)
                            VALUES (\(date), \(entry.subject), \(entry.patientID), \(entry.action), \(status), \(entry.detail), \(address))
                            RETURNING id
                            """, logger: Self.logger)
                        for try await id in rows.decode(Int64.self) { ids.append(id) }
                    }
                }
                return ids
            }
        }
    }

    public func prepareAuditTrail(retentionDays: Int) throws {
        auditRetentionDays.withLock { $0 = min(max(1, retentionDays), AuditRetention.maximumDays) }
        try pruneAuditTrail(now: Date())
    }

    public func recordRefusals(_ counts: [AuditRefusalCount]) throws {
        guard !counts.isEmpty else { return }
        // One order for every writer (several servers add to the same rows): no deadlock between them.
        let sorted = counts.sorted { ($0.minute, $0.action, $0.status, $0.reason) < ($1.minute, $1.action, $1.status, $1.reason) }
        try database.run { client in
            try await client.withTransaction(logger: Self.logger) { connection in
                for count in sorted {
                    try await connection.finish("""
                        INSERT INTO audit_refusals (minute, action, status, reason, count)
                        VALUES (\(Int64(count.minute.timeIntervalSince1970)), \(count.action), \(Int64(count.status)), \(count.reason), \(Int64(count.count)))
                        ON CONFLICT (minute, action, status, reason) DO UPDATE SET count = audit_refusals.count + excluded.count
                        """, logger: Self.logger)
                }
            }
        }
    }

    public func auditRefusals(limit: Int) throws -> [AuditRefusalCount] {
        let limit = Int64(max(0, limit))
        return try database.run { client in
            var counts: [AuditRefusalCount] = []
            let rows = try await client.query(
                "SELECT minute, action, status, reason, count FROM audit_refusals ORDER BY minute DESC, action, status, reason LIMIT \(limit)",
                logger: Self.logger)
            for try await (minute, action, status, reason, count) in rows.decode((Int64, String, Int64, String, Int64).self) {
                counts.append(AuditRefusalCount(
                    minute: Date(timeIntervalSince1970: TimeInterval(minute)), action: action, status: Int(status), reason: reason, count: Int(count)))
            }
            return counts
        }
    }

    @discardableResult
    public func pruneAuditTrail(now: Date) throws -> Int {
        let cutoff = now.addingTimeInterval(-Double(auditRetentionDays.withLock { $0 }) * 86_400).timeIntervalSince1970
        let minute = Int64(cutoff.rounded(.down))
        let batch = Self.pruneBatch
        return try database.run { client in
            var deleted = 0
            // Bounded batches, each its own transaction: a long trail is pruned without one long lock.
            for statement: PostgresQuery in [
                """
                WITH gone AS (DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE date < \(cutoff) ORDER BY date LIMIT \(batch)) RETURNING 1)
                SELECT count(*) FROM gone
                """,
                """
                WITH gone AS (DELETE FROM audit_refusals WHERE (minute, action, status, reason) IN
                    (SELECT minute, action, status, reason FROM audit_refusals WHERE minute < \(minute) ORDER BY minute LIMIT \(batch)) RETURNING 1)
                SELECT count(*) FROM gone
                """,
            ] {
                while true {
                    var gone: Int64 = 0
                    for try await count in try await client.query(statement, logger: Self.logger).decode(Int64.self) { gone = count }
                    deleted += Int(gone)
                    if gone < batch { break }
                }
            }
            return deleted
        }
    }

    public func auditStatistics() throws -> AuditTrailStatistics {
        let path = database.location.redacted + " (tables audit, audit_refusals)"
        let unanswered = Int64(AuditEntry.unansweredStatus)
        let prefix = AuditEntry.commandPrefix + "%"
        return try database.run { client in
            var statistics = AuditTrailStatistics(path: path)
            let entries = try await client.query("""
                SELECT count(*), count(*) FILTER (WHERE status = \(unanswered) AND action NOT LIKE \(prefix)), min(date), max(date),
                    pg_total_relation_size('audit') + pg_total_relation_size('audit_refusals')
                FROM audit
                """, logger: Self.logger)
            for try await (count, open, oldest, newest, bytes) in entries.decode((Int64, Int64, Double?, Double?, Int64).self) {
                statistics.entries = Int(count)
                statistics.unanswered = Int(open)
                statistics.oldest = oldest.map(Date.init(timeIntervalSince1970:))
                statistics.newest = newest.map(Date.init(timeIntervalSince1970:))
                statistics.bytes = bytes
            }
            let refusals = try await client.query(
                "SELECT count(*), coalesce(sum(count), 0)::bigint, min(minute), max(minute) FROM audit_refusals", logger: Self.logger)
            for try await (rows, requests, oldest, newest) in refusals.decode((Int64, Int64, Int64?, Int64?).self) {
                statistics.refusalRows = Int(rows)
                statistics.refusedRequests = Int(requests)
                statistics.oldestRefusal = oldest.map { Date(timeIntervalSince1970: TimeInterval($0)) }
                statistics.newestRefusal = newest.map { Date(timeIntervalSince1970: TimeInterval($0)) }
            }
            return statistics
        }
    }

    public func auditEntries(patientID: String?, limit: Int) throws -> [AuditEntry] {
        let limit = Int64(max(0, limit))
        return try database.run { client in
            let columns = "id, date, subject, patient_id, action, status, detail, client_address"
            let query: PostgresQuery = if let patientID {
                "SELECT \(unescaped: columns) FROM audit WHERE patient_id = \(patientID) ORDER BY id DESC LIMIT \(limit)"
            } else {
                "SELECT \(unescaped: columns) FROM audit ORDER BY id DESC LIMIT \(limit)"
            }
            let rows = try await client.query(query, logger: Self.logger)
            var entries: [AuditEntry] = []
            for try await (id, date, subject, patient, action, status, detail, address) in rows.decode(
                (Int64, Double, String?, String?, String, Int64, String?, String?).self)
            {
                entries.append(AuditEntry(
                    id: id, date: Date(timeIntervalSince1970: date), subject: subject, patientID: patient, action: action, status: Int(status),
                    detail: detail, clientAddress: address))
            }
            return entries
        }
    }

    /// The longest client address kept (an IPv6 address with a zone fits).
    static let maximumAddressLength = 64

}
