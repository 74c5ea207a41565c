import Foundation
import Store

/// The partitions of the pulls one run holds on a store whose sync workers split the pulls
/// (``PullPartitionStore``: PostgreSQL): a partition per server and resource type
/// (``PullPartition/name(server:resourceType:patient:)``), claimed before the type is pulled, renewed while
/// the run pulls and imports, released when the run is done with its pulls (or fails).
///
/// A lost claim (it lapsed and another worker took it over) is noted, and the type's cursor stays where
/// it was: its holder moves it.
final class PullClaims {
    let store: any PullPartitionStore
    let worker: String
    /// How long a claim lasts without renewal: a dead worker's types wait this long for another.
    let lease: Duration
    /// The partitions claimed, in the order claimed.
    private(set) var claimed: [String] = []
    /// Those of ``claimed`` whose claim a renewal found lost.
    private(set) var lost: Set<String> = []
    private var lastRenewal = ContinuousClock.now

    /// Five minutes, renewed every quarter of it while the run pulls: longer than a page and an import.
    static let defaultLease = Duration.seconds(300)

    init(store: any PullPartitionStore, worker: String, lease: Duration = PullClaims.defaultLease) {
        self.store = store
        self.worker = worker
        self.lease = lease
    }

    /// Claims `partition`; false when another live worker holds it.
    func claim(_ partition: String) throws -> Bool {
        guard try store.claimPullPartitions([partition], worker: worker, leaseFor: lease).contains(partition) else { return false }
        claimed.append(partition)
        return true
    }

    /// Whether the run still holds `partition` as far as its last renewal knows.
    func holds(_ partition: String) -> Bool {
        claimed.contains(partition) && !lost.contains(partition)
    }

    /// ``renew()`` when a quarter of the lease has passed since the last renewal (a page costs no round
    /// trip to the store otherwise).
    func renewIfDue() throws {
        if ContinuousClock.now - lastRenewal >= lease / 4 { try renew() }
    }

    /// Renews every claim held; one another worker took over meanwhile is lost.
    func renew() throws {
        let live = claimed.filter { !lost.contains($0) }
        lastRenewal = ContinuousClock.now
        guard !live.isEmpty else { return }
        let renewed = Set(try store.claimPullPartitions(live, worker: worker, leaseFor: lease))
        lost.formUnion(live.filter { !renewed.contains($0) })
    }

    /// Gives back every claim (another worker may take them at once); a store that cannot be reached
    /// now leaves them to lapse.
    func releaseAll() {
        guard !claimed.isEmpty else { return }
        try? store.releasePullPartitions(claimed, worker: worker)
        claimed = []
    }
}

extension SyncJob {
    /// The claims of this run's pulls, on a store whose workers split them (none in a dry run, which
    /// writes nothing, nor on a SQLite store, whose runs take turns under the writer lease).
    func pullClaims() -> PullClaims? {
        guard !dryRun, let store = store as? any PullPartitionStore else { return nil }
        return PullClaims(store: store, worker: workerName, lease: pullLease)
    }

    /// Claims the partition of `type` before its pull; false when another worker holds it, or held one of
    /// the types before it. The types are claimed in the configured order, and a run stops claiming at the
    /// first held by another worker: a type's import needs the types before it (an Observation's outcome
    /// needs its task, made from a CarePlan or MedicationRequest), which one worker's run imports together,
    /// so a run never imports a type while another worker may still be importing those it depends on.
    func claimPull(of type: String, claims: PullClaims?, skipping: inout Bool) throws -> Bool {
        guard let claims else { return true }
        if !skipping, try claims.claim(PullPartition.name(server: checkpointServer, resourceType: type)) { return true }
        skipping = true
        return false
    }

    /// Moves the cursors the run's pulls reached, and `cohort` (the cohort's members) when the run had
    /// no problem: on a store whose workers split the pulls, the types' cursors only where the run still
    /// holds their claims, in the transaction that checks them
    /// (``PullPartitionStore/setCheckpoints(_:underClaimsOf:)``), after renewing the claims (an import may
    /// have taken long), a lost claim leaving its type's cursor with a problem in the report; then
    /// `cohort`. Elsewhere, every cursor in one batch, as the run always moved them.
    func moveCursors(_ checkpoints: [SyncCheckpoint], cohort: SyncCheckpoint?, claims: PullClaims?, into report: inout SyncReport) throws {
        guard !dryRun else { return }
        guard let claims else {
            var batch = StoreBatch()
            for checkpoint in checkpoints { batch.setCheckpoint(checkpoint) }
            if let cohort, report.problems.isEmpty { batch.setCheckpoint(cohort) }
            if !batch.isEmpty { try store.apply(batch) }
            return
        }
        try claims.renew()
        var held: [SyncCheckpoint] = []
        for checkpoint in checkpoints {
            if claims.holds(PullPartition.name(server: checkpoint.server, resourceType: checkpoint.resourceType)) {
                held.append(checkpoint)
            } else {
                report.problems.append("pulling \(checkpoint.resourceType): another worker took over its pull while this run held it; its cursor stays for that worker to move")
            }
        }
        if !held.isEmpty {
            do {
                try claims.store.setCheckpoints(held, underClaimsOf: claims.worker)
            } catch let lost as PullPartitionClaimLost {
                report.problems.append("pulling: \(lost)")
            }
        }
        if let cohort, report.problems.isEmpty {
            var batch = StoreBatch()
            batch.setCheckpoint(cohort)
            try store.apply(batch)
        }
    }
}
