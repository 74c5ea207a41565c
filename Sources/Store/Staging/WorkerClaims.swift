import CareModel
import Foundation

/// A store whose outbox several workers, on one machine or several, push side by side: each takes due
/// entries by a claim with a lease, and moves only the entries it holds (issue 47, item 2). The PostgreSQL
/// store offers it; the SQLite store does not (one machine: its pushes take turns under the writer lease,
/// ``Store/withWriterLease(_:_:)``).
///
/// A claim lapses at the end of its lease, or sooner when the store sees that its worker's process ended
/// (PostgreSQL: a presence lock on a session of the worker's own): a worker that died leaves its entries
/// to the next claim of another. A step of a worker whose claim lapsed and was taken over is refused, not applied, so that an
/// entry is acknowledged once.
public protocol OutboxClaimingStore: Store {
    /// Claims for `worker`, until the store's clock plus `lease`, whole groups of due entries of `kinds`:
    /// every due entry of the first `limit` entities (per destination) whose oldest due entry has an id
    /// above `after`, in the order of those ids (an entity's older versions go out as its newest, so one
    /// worker holds them all). An entity any of whose open entries a live claim holds is passed over, and
    /// so is one with a due entry at or below `after`: a push that walks the outbox, each claim after the
    /// oldest ids of the last, never takes again what it answered (an outcome held for consent is due
    /// again at once). Due as ``Store/dueOutboxEntries(at:limit:)`` says at `dueAt` (pending, or failed
    /// and due again), plus entries whose claim lapsed after they were sent (their worker died before
    /// recording the answer: they come back as failed). Returns the entries as they stand after the
    /// claim, in id order.
    func claimOutboxEntries(worker: String, kinds: [EntityKind], after: Int64, limit: Int, leaseFor lease: Duration, dueAt: Date) throws -> [OutboxEntry]

    /// Moves entries `ids` by `step` (sent, or failed) where `worker` holds their claim and their state
    /// allows it; the others are refused, each with its reason. A failure releases the claim.
    func transitionClaimed(_ ids: [Int64], _ step: OutboxTransition, worker: String) throws -> OutboxClaimStepResult

    /// Acknowledges entries where `worker` holds their claim, each with the id and version the server gave
    /// it; releases the claim. An entry already acknowledged, or whose claim another took over, is refused.
    func acknowledgeClaimed(_ receipts: [(id: Int64, server: ServerVersion?)], worker: String, at date: Date) throws -> OutboxClaimStepResult
}

/// What a claim-checked step on several outbox entries did: those it moved, and those it refused.
public struct OutboxClaimStepResult: Equatable, Sendable {
    public var moved: [Int64]
    public var refused: [OutboxClaimRefusal]

    public init(moved: [Int64] = [], refused: [OutboxClaimRefusal] = []) {
        self.moved = moved
        self.refused = refused
    }
}

/// Why a claim-checked step on outbox entry ``id`` was refused (nothing of it changed).
public struct OutboxClaimRefusal: Equatable, Sendable, CustomStringConvertible {
    public var id: Int64
    /// The store's explanation, naming the entry (and the worker holding it, when another took it over).
    public var reason: String

    public init(id: Int64, reason: String) {
        self.id = id
        self.reason = reason
    }

    public var description: String { reason }
}

/// A store whose pulls several sync workers split by *partitions* (a server and resource type: one worker
/// pulls and imports it at a time), claimed with a lease, the cursor of each moved only while its
/// partition's claim is held (issue 47, item 2). The PostgreSQL store offers it; the SQLite store does
/// not (one machine: its sync runs take turns under the writer lease).
public protocol PullPartitionStore: Store {
    /// Claims for `worker`, until the store's clock plus `lease`, those of `partitions` that no other live
    /// claim holds; those `worker` holds already are renewed. Returns what it holds now.
    func claimPullPartitions(_ partitions: [String], worker: String, leaseFor lease: Duration) throws -> [String]

    /// Gives back `worker`'s claims of `partitions`: another worker may take them at once.
    func releasePullPartitions(_ partitions: [String], worker: String) throws

    /// Moves the cursors `checkpoints`, in one transaction, only while `worker` holds the partition of each
    /// (``PullPartition/name(server:resourceType:)``): the partitions' claims are locked and checked in that
    /// transaction, so no takeover comes between the check and the commit. When any claim lapsed or was
    /// taken over, nothing moves and ``PullPartitionClaimLost`` is thrown.
    func setCheckpoints(_ checkpoints: [SyncCheckpoint], underClaimsOf worker: String) throws
}

/// The partitions of the pulls (``PullPartitionStore``).
public enum PullPartition {
    /// The partition of the pulls of `resourceType` from `server`, or of one patient's.
    public static func name(server: String, resourceType: String, patient: String? = nil) -> String {
        [server, resourceType, patient].compactMap { $0 }.joined(separator: "|")
    }
}

/// A cursor batch refused because the worker no longer held the claims it names: none of its cursors moved.
public struct PullPartitionClaimLost: Error, Equatable, Sendable, CustomStringConvertible {
    /// The partitions whose claims `worker` did not hold (lapsed, or taken over by another worker).
    public var partitions: [String]
    public var worker: String

    public init(partitions: [String], worker: String) {
        self.partitions = partitions
        self.worker = worker
    }

    public var description: String {
        "the cursors were not moved: \(worker) no longer holds the claim of \(partitions.joined(separator: ", ")) (it lapsed, or another worker took it over)"
    }
}

/// Names of workers that share a store.
public enum ClaimWorker {
    /// A worker name unique to this process: the host's name, the process id and a random part.
    public static func name() -> String {
        "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UUID().uuidString.prefix(8).lowercased())"
    }
}
