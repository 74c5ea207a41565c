import CareModel
import Foundation
import Logging
import PostgresNIO
import Store

/// Claims of whole groups, for the sync job's push (``OutboxClaimingStore``): an entity's due entries for
/// one destination (its older versions, which go out as its newest) are held by one worker, so that two
/// workers never send two versions of one outcome at once (the older could land last).
extension PostgresOutbox {
    /// The advisory lock that serializes group claims ("CGCLAIMG" in ASCII): each claim's statement then
    /// sees every claim committed before it, so no entity's group is split between two claims made at
    /// the same moment. A claim is one short statement: workers wait for each other only that long.
    static let groupClaimKey: Int64 = 0x4347_434C_4149_4D47

    /// Claims for `worker`, until the database's clock plus `lease`, the due entries of the first `limit`
    /// entities of `kinds` (per destination) whose first due entry has an id above `after`, in the order
    /// of those ids: an entity's due entries together. An entity any of whose open entries a live claim
    /// holds (another worker's, or this one's) is passed over, and so is one with a due entry at or below
    /// `after` (a run that walks the outbox never takes again what it answered). Due: pending; failed
    /// with a retry time at or before `dueAt`; sent under a claim that lapsed (its worker died before
    /// recording the answer), which the claim moves to failed, as ``claim(worker:limit:leaseFor:now:)``
    /// does. A sent entry that no claim ever held (written to a file by an export) is never due, nor is
    /// an outcome with several tips (filed in `outcome_conflict`: its export waits for one, as
    /// ``PostgreSQLStore/dueOutboxEntries(at:limit:)`` and the SQLite store's wait). Returns
    /// the claimed entries in id order.
    ///
    /// With `presence`, the claims last only while `worker`'s presence lock is held as well
    /// (``PostgresWorkerPresence``: the caller announces it first), so that they are free as soon as its
    /// process dies.
    public func claimGroups(
        worker: String, kinds: [EntityKind], after: Int64, limit: Int, leaseFor lease: Duration, dueAt: Date, presence: Bool = false
    ) throws -> [OutboxEntry] {
        try Self.check(worker: worker)
        guard (1...Self.claimLimits.entries).contains(limit) else {
            throw PostgresOutboxRequestError(reason: "a claim takes 1 to \(Self.claimLimits.entries) entries, not \(limit)")
        }
        guard lease > .zero, lease <= Self.claimLimits.lease else {
            throw PostgresOutboxRequestError(reason: "a claim's lease lasts more than 0 seconds and at most \(Self.claimLimits.lease), not \(lease)")
        }
        let kindNames = kinds.map(\.rawValue)
        let seconds = lease.inSeconds
        let due = dueAt.timeIntervalSince1970
        let url = database.location.redacted
        let logger = Self.logger
        return try database.run { client in
            try await client.withTransaction(logger: logger) { connection in
                try await connection.finish("SELECT pg_advisory_xact_lock(\(Self.groupClaimKey))", logger: logger)
                // A new statement: its snapshot holds every claim committed before the lock was granted.
                // `heads` walks the claimable entries in id order from `after` (the partial index
                // `outbox_claimable`), each checked against its entity's other open entries
                // (`outbox_open_by_entity`): a claim reads about as many rows as it takes.
                let rows = try await connection.query("""
                    WITH clock AS (
                        SELECT seconds, to_timestamp(seconds) AS now
                        FROM (SELECT extract(epoch FROM clock_timestamp())::float8 AS seconds) AS given
                    ),
                    present AS MATERIALIZED (\(unescaped: PostgresWorkerPresence.presentSQL)),
                    heads AS MATERIALIZED (
                        SELECT o.destination, o.entity_kind, o.entity_id FROM outbox o, clock
                        WHERE o.id > \(after) AND o.state IN ('pending', 'sent', 'failed') AND o.entity_kind = ANY(\(kindNames)::text[])
                          AND (o.claimed_until IS NULL OR NOT \(unescaped: PostgresWorkerPresence.liveSQL("o", now: "clock.now")))
                          AND (o.state <> 'failed' OR o.next_attempt_at <= \(due)::float8)
                          AND (o.state <> 'sent' OR o.claimed_until IS NOT NULL)
                          AND NOT (o.entity_kind = 'outcome' AND EXISTS (SELECT 1 FROM outcome_conflict c WHERE c.outcome_id = o.entity_id))
                          AND NOT EXISTS (
                              SELECT 1 FROM outbox h
                              WHERE h.destination = o.destination AND h.entity_kind = o.entity_kind AND h.entity_id = o.entity_id
                                AND h.state IN ('pending', 'sent', 'failed') AND \(unescaped: PostgresWorkerPresence.liveSQL("h", now: "clock.now")))
                          AND NOT EXISTS (
                              SELECT 1 FROM outbox e
                              WHERE e.destination = o.destination AND e.entity_kind = o.entity_kind AND e.entity_id = o.entity_id
                                AND e.id < o.id AND e.state IN ('pending', 'sent', 'failed')
                                AND (e.state <> 'failed' OR e.next_attempt_at <= \(due)::float8)
                                AND (e.state <> 'sent' OR e.claimed_until IS NOT NULL))
                        ORDER BY o.id
                        LIMIT \(limit)
                    ),
                    due AS MATERIALIZED (
                        SELECT o.id FROM outbox o, heads, clock
                        WHERE o.destination = heads.destination AND o.entity_kind = heads.entity_kind AND o.entity_id = heads.entity_id
                          AND o.state IN ('pending', 'sent', 'failed')
                          AND (o.claimed_until IS NULL OR NOT \(unescaped: PostgresWorkerPresence.liveSQL("o", now: "clock.now")))
                          AND (o.state <> 'failed' OR o.next_attempt_at <= \(due)::float8)
                          AND (o.state <> 'sent' OR o.claimed_until IS NOT NULL)
                        ORDER BY o.id
                        FOR UPDATE OF o SKIP LOCKED
                    )
                    UPDATE outbox o SET
                        claimed_by = \(worker),
                        claimed_until = clock.now + make_interval(secs => \(seconds)),
                        claimed_presence = \(presence),
                        \(unescaped: Self.takeoverSQL)
                    FROM due, clock
                    WHERE o.id = due.id
                    RETURNING \(unescaped: PostgresOutboxRow.columns(of: "o"))
                    """, logger: logger)
                var entries: [OutboxEntry] = []
                for try await values in rows.decode(PostgresOutboxRow.Columns.self) {
                    entries.append(try PostgresOutboxRow(values, url: url).entry)
                }
                return entries.sorted { ($0.id ?? 0) < ($1.id ?? 0) }
            }
        }
    }
}

extension PostgresOutboxStepResult {
    /// The same result in the store protocol's terms (``OutboxClaimStepResult``).
    var claimStepResult: OutboxClaimStepResult {
        OutboxClaimStepResult(moved: moved, refused: refused.map { OutboxClaimRefusal(id: $0.id, reason: $0.description) })
    }
}
