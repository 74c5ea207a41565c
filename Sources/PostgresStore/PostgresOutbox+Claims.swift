import Foundation
import Logging
import PostgresNIO
import Store

/// The workers' side of ``PostgresOutbox``: claims with a lease, and the steps only a claimant may take.
extension PostgresOutbox {
    /// The most entries one claim takes, and the longest lease: bounds on what a caller may ask.
    public static let claimLimits = (entries: 10_000, lease: Duration.seconds(86_400))
    /// Ids per statement of a step: a bound on one statement's arrays.
    static let idsPerStatement = 10_000

    /// Claims up to `limit` due entries for `worker` until `now + lease`, oldest first, and returns them as
    /// they stand after the claim.
    ///
    /// Due: pending entries, failed ones whose retry time has come (as the SQLite store's
    /// `dueOutboxEntries`), that no live claim holds; and entries whose claim lapsed after they were
    /// marked sent (their worker died before recording the answer), which the claim moves to failed,
    /// due now, with a last error saying so: the server may hold them, and the next send must be a
    /// conditional one, as every send of the sync job is.
    ///
    /// One statement, its own transaction: `SELECT ... ORDER BY id LIMIT ... FOR UPDATE SKIP LOCKED`
    /// passes over rows another claim is taking at that moment, so concurrent claims never wait for each
    /// other and never take the same entry. `now` is the database's clock when nil (one clock for every
    /// worker, whatever their machines' clocks say); tests give it.
    ///
    /// `worker` names the claimant in the database (host and process make a good one: ``workerName()``);
    /// it must differ between live workers, for a claim is theirs by name.
    public func claim(worker: String, limit: Int, leaseFor lease: Duration, now: Date? = nil) throws -> [PostgresOutboxClaim] {
        try Self.check(worker: worker)
        guard (1...Self.claimLimits.entries).contains(limit) else {
            throw PostgresOutboxRequestError(reason: "a claim takes 1 to \(Self.claimLimits.entries) entries, not \(limit)")
        }
        guard lease > .zero, lease <= Self.claimLimits.lease else {
            throw PostgresOutboxRequestError(reason: "a claim's lease lasts more than 0 seconds and at most \(Self.claimLimits.lease), not \(lease)")
        }
        let seconds = lease.inSeconds
        let url = database.location.redacted
        // `due` is MATERIALIZED: the locking SELECT runs once, never folded into the UPDATE's join,
        // where it could be rescanned and lock rows it does not return.
        return try database.run { client in
            let rows = try await client.query("""
                WITH clock AS (
                    SELECT seconds, to_timestamp(seconds) AS now
                    FROM (SELECT COALESCE(\(now?.timeIntervalSince1970)::float8, extract(epoch FROM clock_timestamp())::float8) AS seconds) AS given
                ),
                present AS MATERIALIZED (\(unescaped: PostgresWorkerPresence.presentSQL)),
                due AS MATERIALIZED (
                    SELECT o.id FROM outbox o, clock
                    WHERE o.state IN ('pending', 'sent', 'failed')
                      AND (o.claimed_until IS NULL OR NOT \(unescaped: PostgresWorkerPresence.liveSQL("o", now: "clock.now")))
                      AND (o.state <> 'failed' OR o.next_attempt_at <= clock.seconds)
                    ORDER BY o.id
                    LIMIT \(limit)
                    FOR UPDATE OF o SKIP LOCKED
                )
                UPDATE outbox o SET
                    claimed_by = \(worker),
                    claimed_until = clock.now + make_interval(secs => \(seconds)),
                    claimed_presence = false,
                    \(unescaped: Self.takeoverSQL)
                FROM due, clock
                WHERE o.id = due.id
                RETURNING \(unescaped: PostgresOutboxRow.columns(of: "o"))
                """, logger: Self.logger)
            var claims: [PostgresOutboxClaim] = []
            for try await values in rows.decode(PostgresOutboxRow.Columns.self) {
                let row = try PostgresOutboxRow(values, url: url)
                claims.append(PostgresOutboxClaim(entry: row.entry, worker: worker, until: row.claimedUntil ?? Date.distantPast))
            }
            return claims.sorted { ($0.entry.id ?? 0) < ($1.entry.id ?? 0) }
        }
    }

    /// Moves entries `ids` by `step` for their claimant `worker`, as the SQLite store's transition does
    /// (the same ``OutboxState/allows(_:)`` rules), in one statement per ``idsPerStatement`` ids: those
    /// `worker` holds and whose state allows it move; the others are refused, each with its reason.
    /// `sent` keeps the claim; `acknowledged` and `failed` release it (a failed entry is due again at its
    /// retry time, for any worker).
    public func transition(_ ids: [Int64], _ step: OutboxTransition, worker: String) throws -> PostgresOutboxStepResult {
        let server: ServerVersion? = if case .acknowledged(_, let server) = step { server } else { nil }
        return try apply(step, to: ids.map { ($0, server) }, worker: worker)
    }

    /// Moves entry `id` by `step` for its claimant `worker`; throws the ``PostgresOutboxRefusal`` when
    /// refused (nothing changed then).
    public func transition(_ id: Int64, _ step: OutboxTransition, worker: String) throws {
        if let refusal = try transition([id], step, worker: worker).refused.first { throw refusal }
    }

    /// Acknowledges entries for their claimant `worker`, each with the id and version the server gave it
    /// (`nil` when it said none), in one statement per ``idsPerStatement`` entries. An entry is
    /// acknowledged once: a second acknowledgement, or one by a worker whose claim was taken over, is
    /// refused and reported.
    public func acknowledge(_ receipts: [(id: Int64, server: ServerVersion?)], worker: String, at date: Date = Date()) throws -> PostgresOutboxStepResult {
        try apply(.acknowledged(at: date), to: receipts.map { ($0.id, $0.server) }, worker: worker)
    }

    /// Acknowledges entry `id` for its claimant `worker`; throws the ``PostgresOutboxRefusal`` when refused.
    public func acknowledge(_ id: Int64, worker: String, server: ServerVersion?, at date: Date = Date()) throws {
        if let refusal = try acknowledge([(id, server)], worker: worker, at: date).refused.first { throw refusal }
    }

    /// A worker name unique to this process: the host's name, the process id and a random part.
    public static func workerName() -> String {
        ClaimWorker.name()
    }

    /// SQL: the columns a claim sets beside its claimant and lease, in an `UPDATE outbox o ... FROM clock`
    /// whose `clock` has `seconds`: an entry taken over after it was sent under a claim that lapsed comes
    /// back failed, due now, its last error saying whose claim lapsed.
    static let takeoverSQL = """
        state = CASE WHEN o.state = 'sent' THEN 'failed' ELSE o.state END,
        last_error = CASE WHEN o.state = 'sent'
            THEN 'sent under the claim of ' || COALESCE(o.claimed_by, 'a worker') || ', which lapsed before the answer was recorded'
            ELSE o.last_error END,
        next_attempt_at = CASE WHEN o.state = 'sent' THEN clock.seconds ELSE o.next_attempt_at END,
        updated_at = CASE WHEN o.state = 'sent' THEN clock.seconds ELSE o.updated_at END
        """

    static func check(worker: String) throws {
        guard !worker.isEmpty, worker.utf8.count <= 200 else {
            throw PostgresOutboxRequestError(reason: "a worker's name has 1 to 200 bytes")
        }
    }
}

/// A request to the outbox that cannot be served as asked (a claim too large, an empty worker name).
public struct PostgresOutboxRequestError: Error, Equatable, Sendable, CustomStringConvertible {
    public let reason: String
    public var description: String { reason }
}
