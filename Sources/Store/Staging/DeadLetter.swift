import Foundation

/// Something CareGate gave up on (a resource it could not map, an export the server keeps refusing),
/// kept with the reason so a person can look at it; nothing is silently dropped.
///
/// A dead letter waits for a person until a replay settles it (``DeadLetterSettlement``): one that
/// imports cleanly is resolved (``resolvedDate``, ``resolution``) and leaves the list, but is kept; one
/// that fails again stays, with the new reason and ``replayedDate``.
public struct DeadLetter: Equatable, Sendable {
    /// Assigned by the store; `nil` before it is stored.
    public var id: Int64?
    /// The system involved: the source of an import, the destination of an export.
    public var system: String
    /// The FHIR resource type concerned, when known.
    public var resourceType: String?
    /// The FHIR resource id concerned, when known.
    public var resourceID: String?
    /// The outbox entry that ended here, for an export.
    public var outboxEntryID: Int64?
    /// Why it was given up: a short, stable phrase (`mapping failed`, `rejected by server`).
    public var reason: String
    /// The details: the error message, the server's OperationOutcome.
    public var detail: String?
    /// The data involved, as bytes (the resource received, the resource that could not be sent).
    public var payload: Data?
    public var createdDate: Date
    /// When a replay last changed it (resolved it, or failed with a new reason); nil when never replayed.
    public var replayedDate: Date?
    /// When a replay resolved it: it then leaves the list of what waits for a person.
    public var resolvedDate: Date?
    /// How it was resolved (`imported`, `superseded by a later import`, `outbox entry #12 requeued`).
    public var resolution: String?

    /// Whether it still waits for a person.
    public var isWaiting: Bool { resolvedDate == nil }

    public init(
        id: Int64? = nil, system: String, resourceType: String? = nil, resourceID: String? = nil,
        outboxEntryID: Int64? = nil, reason: String, detail: String? = nil, payload: Data? = nil,
        createdDate: Date = Date(), replayedDate: Date? = nil, resolvedDate: Date? = nil, resolution: String? = nil
    ) {
        self.id = id
        self.system = system
        self.resourceType = resourceType
        self.resourceID = resourceID
        self.outboxEntryID = outboxEntryID
        self.reason = reason
        self.detail = detail
        self.payload = payload
        self.createdDate = createdDate
        self.replayedDate = replayedDate
        self.resolvedDate = resolvedDate
        self.resolution = resolution
    }
}

/// What a replay of a dead letter came to (``StoreBatch/settleDeadLetter(_:_:)``), dated by its batch.
public enum DeadLetterSettlement: Equatable, Sendable {
    /// It imported, or no longer needs to (`resolution` says which): it leaves the list, and is kept.
    case resolved(resolution: String)
    /// It failed again: it stays, with this reason, and this detail (the one it has when nil).
    case failedAgain(reason: String, detail: String?)
}
