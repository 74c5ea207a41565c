import Foundation
import Logging
import PostgresNIO
import Store

/// The one statement behind every claimant's step (``PostgresOutbox/transition(_:_:worker:)``,
/// ``PostgresOutbox/acknowledge(_:worker:at:)``).
extension PostgresOutbox {
    /// Moves `entries` (an id and, for an acknowledgement, the server's version) by `step` where `worker`
    /// holds the claim and the state allows it; returns what moved and what was refused, and why.
    ///
    /// Each statement first locks its rows in id order (`SELECT ... ORDER BY id FOR UPDATE`): every
    /// statement that writes several entries takes its locks in that one order, so two workers (or a
    /// worker and a claim taking over) wait for each other at most, never in a cycle. The checks read the
    /// locked rows, so they see the latest claim, not the statement's snapshot.
    func apply(_ step: OutboxTransition, to entries: [(id: Int64, server: ServerVersion?)], worker: String) throws -> PostgresOutboxStepResult {
        try Self.check(worker: worker)
        var firstOfID: [Int64: ServerVersion?] = [:]
        for (id, server) in entries where firstOfID[id] == nil { firstOfID[id] = server }
        let ids = firstOfID.keys.sorted()
        var result = PostgresOutboxStepResult()
        for start in stride(from: 0, to: ids.count, by: Self.idsPerStatement) {
            let chunk = Array(ids[start..<min(start + Self.idsPerStatement, ids.count)])
            let part = try applyOnce(step, to: chunk.map { ($0, firstOfID[$0] ?? nil) }, worker: worker)
            result.moved += part.moved
            result.refused += part.refused
        }
        return result
    }

    private func applyOnce(_ step: OutboxTransition, to entries: [(id: Int64, server: ServerVersion?)], worker: String) throws -> PostgresOutboxStepResult {
        let target = step.targetState
        let sources = OutboxState.allCases.filter { $0.allows(target) }.map(\.rawValue)
        let change = Change(step)
        let ids = entries.map(\.id)
        // postgres-nio binds no NULL inside an array: an absent server id or version is '' (a server's id
        // is never empty: ServerVersion(location:) refuses one).
        let serverIDs = entries.map { $0.server?.id ?? "" }
        let serverVersions = entries.map { $0.server?.version ?? "" }
        let query: PostgresQuery = """
            WITH locked AS MATERIALIZED (
                SELECT id, state, claimed_by, claimed_until FROM outbox WHERE id = ANY(\(ids)::bigint[]) ORDER BY id FOR UPDATE
            ),
            moved AS (
                UPDATE outbox o SET
                    state = \(target.rawValue),
                    attempts = o.attempts + \(change.addsAttempt ? 1 : 0),
                    last_error = CASE WHEN \(change.keepsError) THEN o.last_error ELSE \(change.error)::text END,
                    next_attempt_at = \(change.retryAt?.timeIntervalSince1970)::float8,
                    server_id = CASE WHEN \(change.setsServer) THEN NULLIF(a.server_id, '') ELSE o.server_id END,
                    server_version = CASE WHEN \(change.setsServer) THEN NULLIF(a.server_version, '') ELSE o.server_version END,
                    updated_at = \(change.date.timeIntervalSince1970),
                    claimed_until = CASE WHEN \(change.releasesClaim) THEN NULL ELSE o.claimed_until END
                FROM locked
                JOIN unnest(\(ids)::bigint[], \(serverIDs)::text[], \(serverVersions)::text[]) AS a(id, server_id, server_version) ON a.id = locked.id
                WHERE o.id = locked.id AND locked.claimed_by = \(worker) AND locked.claimed_until IS NOT NULL
                  AND locked.state = ANY(\(sources)::text[])
                RETURNING o.id
            )
            SELECT locked.id, locked.state, locked.claimed_by, locked.claimed_until IS NOT NULL, moved.id IS NOT NULL
            FROM locked LEFT JOIN moved ON moved.id = locked.id ORDER BY locked.id
            """
        let url = database.location.redacted
        return try database.run { client in
            var result = PostgresOutboxStepResult()
            var seen = Set<Int64>()
            let rows = try await client.query(query, logger: Self.logger)
            for try await (id, stateText, claimedBy, held, moved) in rows.decode((Int64, String, String?, Bool, Bool).self) {
                seen.insert(id)
                if moved {
                    result.moved.append(id)
                    continue
                }
                guard let state = OutboxState(rawValue: stateText) else {
                    throw PostgresStoreError.server(url: url, problem: "outbox entry \(id) has an unknown state (\(stateText))")
                }
                result.refused.append(Self.refusal(id: id, state: state, holder: held ? claimedBy : nil, worker: worker, target: target))
            }
            result.refused += ids.filter { !seen.contains($0) }.map { .notFound(id: $0) }
            result.refused.sort { $0.id < $1.id }
            return result
        }
    }

    /// Why entry `id` (in `state`, its live claim held by `holder`) did not move to `target` for `worker`:
    /// a claim another holds first (the usual case of a late answer: the entry was taken over), then the
    /// state's rules, then a claim nobody holds.
    static func refusal(id: Int64, state: OutboxState, holder: String?, worker: String, target: OutboxState) -> PostgresOutboxRefusal {
        if let holder, holder != worker { return .claimNotHeld(id: id, worker: worker, holder: holder) }
        if !state.allows(target) { return .invalidTransition(id: id, from: state, to: target) }
        return .claimNotHeld(id: id, worker: worker, holder: nil)
    }

    /// What a step writes, column by column (the SQLite store's UPDATE for each step, plus the claim).
    private struct Change {
        var addsAttempt = false
        var keepsError = true
        var error: String?
        var retryAt: Date?
        var setsServer = false
        var releasesClaim = false
        var date: Date

        init(_ step: OutboxTransition) {
            switch step {
            case .sent(let at):
                date = at
                addsAttempt = true
            case .acknowledged(let at, _):
                date = at
                keepsError = false
                setsServer = true
                releasesClaim = true
            case .failed(let error, let retryAt, let at):
                date = at
                keepsError = false
                self.error = error
                self.retryAt = retryAt
                releasesClaim = true
            }
        }
    }
}
