import CareModel
import Foundation
import Store

/// The claims of several sync workers, in the store protocols' terms: the sync job's push claims whole
/// groups of outbox entries (``PostgresOutbox/claimGroups(worker:kinds:after:limit:leaseFor:dueAt:)``) and
/// records their answers with claim-checked steps; its pulls claim partitions and move their cursors only
/// under those claims (``PostgresPullPartitions``). Every claim made here lasts only while its worker is
/// present (``PostgresWorkerPresence``: a lock on this store's session of its own, announced before the
/// first claim), so a worker whose process dies leaves its claims free at once, not after their lease.
extension PostgreSQLStore: OutboxClaimingStore, PullPartitionStore {
    public func claimOutboxEntries(worker: String, kinds: [EntityKind], after: Int64, limit: Int, leaseFor lease: Duration, dueAt: Date) throws -> [OutboxEntry] {
        try presence.announce(worker)
        return try outbox.claimGroups(worker: worker, kinds: kinds, after: after, limit: limit, leaseFor: lease, dueAt: dueAt, presence: true)
    }

    public func transitionClaimed(_ ids: [Int64], _ step: OutboxTransition, worker: String) throws -> OutboxClaimStepResult {
        try outbox.transition(ids, step, worker: worker).claimStepResult
    }

    public func acknowledgeClaimed(_ receipts: [(id: Int64, server: ServerVersion?)], worker: String, at date: Date) throws -> OutboxClaimStepResult {
        try outbox.acknowledge(receipts, worker: worker, at: date).claimStepResult
    }

    public func claimPullPartitions(_ partitions: [String], worker: String, leaseFor lease: Duration) throws -> [String] {
        try presence.announce(worker)
        return try pulls.claim(partitions, worker: worker, leaseFor: lease, presence: true)
    }

    public func releasePullPartitions(_ partitions: [String], worker: String) throws {
        try pulls.release(partitions, worker: worker)
    }

    public func setCheckpoints(_ checkpoints: [SyncCheckpoint], underClaimsOf worker: String) throws {
        let lost = try pulls.setCheckpoints(checkpoints, worker: worker)
        guard lost.isEmpty else { throw PullPartitionClaimLost(partitions: lost, worker: worker) }
    }
}
