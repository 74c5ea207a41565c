import Foundation
import Store

/// Why a worker's step on an outbox entry was refused (``PostgresOutbox``): the entry is not there, its
/// state does not allow the step (the rules of ``OutboxState/allows(_:)``, as in the SQLite store), or the
/// worker does not hold its claim (another took it over after the claim lapsed, or it was released by
/// an earlier acknowledgement or failure). A refused step changes nothing.
public enum PostgresOutboxRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// No outbox entry `id`.
    case notFound(id: Int64)
    /// Entry `id` is in state `from`, which cannot go to `to`.
    case invalidTransition(id: Int64, from: OutboxState, to: OutboxState)
    /// `worker` does not hold entry `id`'s claim: `holder` does (a takeover after `worker`'s claim lapsed),
    /// or nobody (`nil`: no claim was taken, or it was released).
    case claimNotHeld(id: Int64, worker: String, holder: String?)

    /// The entry refused.
    public var id: Int64 {
        switch self {
        case .notFound(let id), .invalidTransition(let id, _, _), .claimNotHeld(let id, _, _): id
        }
    }

    /// The SQLite store's error for the same refusal, where it has one (a claim is PostgreSQL's alone).
    public var storeError: StoreError? {
        switch self {
        case .notFound(let id): .outboxEntryNotFound(id: id)
        case .invalidTransition(let id, let from, let to): .invalidOutboxTransition(id: id, from: from, to: to)
        case .claimNotHeld: nil
        }
    }

    public var description: String {
        switch self {
        case .notFound, .invalidTransition: storeError.map { "\($0)" } ?? ""
        case .claimNotHeld(let id, let worker, let holder?):
            "outbox entry \(id) is claimed by \(holder), not by \(worker): its claim lapsed and was taken over"
        case .claimNotHeld(let id, let worker, nil):
            "outbox entry \(id) is not claimed by \(worker): claim it first"
        }
    }
}

/// What a step on several outbox entries did (``PostgresOutbox/transition(_:_:worker:)``): the entries it
/// moved, in id order, and those it refused, with the reason for each. One statement moves all it can:
/// a refusal of one does not hold back the others, which the worker still holds.
public struct PostgresOutboxStepResult: Equatable, Sendable {
    public var moved: [Int64]
    public var refused: [PostgresOutboxRefusal]

    public init(moved: [Int64] = [], refused: [PostgresOutboxRefusal] = []) {
        self.moved = moved
        self.refused = refused
    }
}

/// An outbox entry a worker claimed: the entry as it stands after the claim, and the claim.
public struct PostgresOutboxClaim: Equatable, Sendable {
    public var entry: OutboxEntry
    /// The worker that holds it.
    public var worker: String
    /// When the claim lapses: after it, another worker may take the entry over.
    public var until: Date

    /// The entry's id (a claimed entry is always stored).
    public var id: Int64 { entry.id ?? 0 }

    public init(entry: OutboxEntry, worker: String, until: Date) {
        self.entry = entry
        self.worker = worker
        self.until = until
    }
}
