import Foundation
import PostgresNIO
import Store

// OWNER: helper h-pgstaging.
// The reads of the staging records, as the SQLite store answers them (SQLiteStore+Staging.swift,
// +ExportProgress, +ReportStart, +DeadLetters, +OutboxSummary): the same entries, in the same order. A
// negative limit is no limit, as SQLite's `LIMIT -1`.
extension PostgreSQLStore {
    public func checkpoint(server: String, resourceType: String) throws -> SyncCheckpoint? {
        try pulls.checkpoint(server: server, resourceType: resourceType)
    }

    public func exportProgress(target: String) throws -> ExportProgress? {
        try database.run { client in
            let rows = try await client.query(
                "SELECT export_id, file, committed_date FROM export_progress WHERE target = \(target)", logger: Self.logger)
            var found: ExportProgress?
            for try await (exportID, file, committed) in rows.decode((String, String, Double).self) {
                found = ExportProgress(target: target, exportID: exportID, file: file, committedDate: Date(timeIntervalSince1970: committed))
            }
            return found
        }
    }

    public func reportStart(frequency: String) throws -> ReportStart? {
        try database.run { client in
            let rows = try await client.query(
                "SELECT first_day, recorded_date FROM report_start WHERE frequency = \(frequency)", logger: Self.logger)
            var found: ReportStart?
            for try await (firstDay, recorded) in rows.decode((String, Double).self) {
                found = ReportStart(frequency: frequency, firstDay: firstDay, recordedDate: Date(timeIntervalSince1970: recorded))
            }
            return found
        }
    }

    // MARK: The outbox

    public func outboxEntry(id: Int64) throws -> OutboxEntry? { try outbox.entry(id: id) }

    public func outboxEntry(destination: String, entityUUID: UUID) throws -> OutboxEntry? {
        try outbox.entry(destination: destination, entityUUID: entityUUID)
    }

    /// The entries of entity versions `entityUUIDs` for `destination` (each once), by version uuid.
    public func outboxEntries(destination: String, entityUUIDs: [UUID]) throws -> [OutboxEntry] {
        let unique = Array(Set(entityUUIDs)).sorted { $0.uuidString < $1.uuidString }
        var entries: [OutboxEntry] = []
        for start in stride(from: 0, to: unique.count, by: PostgresStagingChanges.idsPerStatement) {
            let chunk = Array(unique[start..<min(start + PostgresStagingChanges.idsPerStatement, unique.count)])
            entries += try outboxEntries("WHERE destination = \(destination) AND entity_uuid = ANY(\(chunk)::uuid[]) ORDER BY entity_uuid")
        }
        return entries
    }

    /// The entries to send now: pending ones, and failed ones whose retry time has come; oldest first;
    /// none of an outcome with several tips (filed in `outcome_conflict`: its export waits for one).
    public func dueOutboxEntries(at now: Date, limit: Int) throws -> [OutboxEntry] {
        try outboxEntries("""
            WHERE (state = 'pending' OR (state = 'failed' AND next_attempt_at IS NOT NULL AND next_attempt_at <= \(now.timeIntervalSince1970)))
              AND NOT EXISTS (SELECT 1 FROM outcome_conflict c WHERE c.outcome_id = outbox.entity_id AND outbox.entity_kind = 'outcome')
            ORDER BY id LIMIT \(Self.sqlLimit(limit))
            """)
    }

    public func outboxEntries(in state: OutboxState, limit: Int) throws -> [OutboxEntry] {
        try outboxEntries("WHERE state = \(state.rawValue) ORDER BY id LIMIT \(Self.sqlLimit(limit))")
    }

    /// ``OutboxSummary`` in one snapshot (one statement): a count per state and two small aggregates.
    public func outboxSummary() throws -> OutboxSummary {
        try database.run { client in
            let rows = try await client.query("""
                SELECT
                    count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'sent'),
                    count(*) FILTER (WHERE state = 'acknowledged'), count(*) FILTER (WHERE state = 'failed'),
                    min(created_at) FILTER (WHERE state = 'pending' OR (state = 'failed' AND next_attempt_at IS NOT NULL)),
                    (SELECT count(*) FROM dead_letter WHERE resolved_date IS NULL)
                FROM outbox
                """, logger: Self.logger)
            var summary = OutboxSummary(entries: Dictionary(uniqueKeysWithValues: OutboxState.allCases.map { ($0, 0) }), oldestWaiting: nil, deadLetters: 0)
            for try await (pending, sent, acknowledged, failed, oldest, letters) in rows.decode((Int64, Int64, Int64, Int64, Double?, Int64).self) {
                summary = OutboxSummary(
                    entries: [.pending: Int(pending), .sent: Int(sent), .acknowledged: Int(acknowledged), .failed: Int(failed)],
                    oldestWaiting: oldest.map(Date.init(timeIntervalSince1970:)), deadLetters: Int(letters))
            }
            return summary
        }
    }

    /// The entries a condition (`WHERE ...`, with its binds) picks, in its order.
    private func outboxEntries(_ condition: PostgresQuery) throws -> [OutboxEntry] {
        try outbox.read(condition).map(\.entry)
    }

    // MARK: Dead letters

    /// Dead letters, newest first: those waiting for a person, or all of them; only those kept from `since`
    /// on when it is given.
    public func deadLetters(limit: Int, includingResolved: Bool, since: Date?) throws -> [DeadLetter] {
        let since = since?.timeIntervalSince1970
        return try deadLetters("""
            WHERE (\(includingResolved) OR resolved_date IS NULL) AND (\(since)::float8 IS NULL OR created_date >= \(since)::float8)
            ORDER BY id DESC LIMIT \(Self.sqlLimit(limit))
            """)
    }

    /// Dead letter `id`, waiting or resolved, with its payload.
    public func deadLetter(id: Int64) throws -> DeadLetter? {
        try deadLetters("WHERE id = \(id)").first
    }

    public func waitingDeadLetterCount() throws -> Int {
        try database.run { client in
            var count: Int64 = 0
            for try await value in try await client.query("SELECT count(*) FROM dead_letter WHERE resolved_date IS NULL", logger: Self.logger).decode(Int64.self) {
                count = value
            }
            return Int(count)
        }
    }

    /// The letters a condition (`WHERE ...`, with its binds) picks, in its order.
    private func deadLetters(_ condition: PostgresQuery) throws -> [DeadLetter] {
        let columns = "id, system, resource_type, resource_id, outbox_entry_id, reason, detail, payload, created_date, replayed_date, resolved_date, resolution"
        let query = PostgresQuery(unsafeSQL: "SELECT \(columns) FROM dead_letter " + condition.sql, binds: condition.binds)
        return try database.run { client in
            var letters: [DeadLetter] = []
            let rows = try await client.query(query, logger: Self.logger)
            for try await (id, system, type, resourceID, entryID, reason, detail, payload, created, replayed, resolved, resolution) in rows.decode(
                (Int64, String, String?, String?, Int64?, String, String?, ByteBuffer?, Double, Double?, Double?, String?).self)
            {
                letters.append(DeadLetter(
                    id: id, system: system, resourceType: type, resourceID: resourceID, outboxEntryID: entryID, reason: reason, detail: detail,
                    payload: payload.map { Data($0.readableBytesView) }, createdDate: Date(timeIntervalSince1970: created),
                    replayedDate: replayed.map(Date.init(timeIntervalSince1970:)), resolvedDate: resolved.map(Date.init(timeIntervalSince1970:)),
                    resolution: resolution))
            }
            return letters
        }
    }

    /// A read's limit as SQL takes it: a negative one is no limit (NULL), as SQLite's `LIMIT -1`.
    static func sqlLimit(_ limit: Int) -> Int64? {
        limit < 0 ? nil : Int64(limit)
    }
}
