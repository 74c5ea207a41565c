import CareModel
import Foundation

/// Where an export stands on its way to the provider's server.
///
/// `pending` → `sent` → `acknowledged`; a send that fails goes to `failed` and, when a retry is
/// planned, comes back through `sent` at `nextAttemptDate`. `acknowledged` is final.
public enum OutboxState: String, CaseIterable, Codable, Sendable, CustomStringConvertible {
    case pending
    case sent
    case acknowledged
    case failed

    public var description: String { rawValue }

    /// Whether an entry in this state may move to `next`.
    public func allows(_ next: OutboxState) -> Bool {
        switch (self, next) {
        case (.pending, .sent), (.failed, .sent): return true
        case (.sent, .acknowledged): return true
        case (.pending, .failed), (.sent, .failed): return true
        case (.failed, .failed): return true
        default: return false
        }
    }
}

/// One export waiting for, or done with, the provider's server: which entity version, which
/// destination, what to send, and how the attempts went.
///
/// Enqueueing the same entity version for the same destination twice keeps one entry, so a re-run
/// export never sends twice.
public struct OutboxEntry: Equatable, Sendable {
    /// The destination of the store's own change feed: the provider system the care data came from.
    /// The export and the sync job send its entries to wherever they are pointed.
    public static let provider = "provider"

    /// Assigned by the store; `nil` before it is stored.
    public var id: Int64?
    /// The server it goes to.
    public var destination: String
    public var entityKind: EntityKind
    public var entityID: String
    /// The entity version exported.
    public var entityUUID: UUID
    /// The FHIR resource to send, when already made (the sync job may make it at send time instead).
    public var payload: Data?
    public var state: OutboxState
    /// How many times it was sent.
    public var attempts: Int
    /// The error of the last failed attempt.
    public var lastError: String?
    /// When a failed entry may be sent again; `nil` for a failed entry means no retry is planned.
    public var nextAttemptDate: Date?
    /// The id and version the server gave the resource, once acknowledged (when it said).
    public var server: ServerVersion?
    public var createdDate: Date
    public var updatedDate: Date

    /// Whether the destination has, or may have, what this entry carries: it was sent at least once
    /// (a send that got no answer counts: the server may have stored it), or acknowledged.
    public var mayHaveReachedDestination: Bool {
        attempts > 0 || state == .sent || state == .acknowledged
    }

    public init(
        id: Int64? = nil, destination: String, entityKind: EntityKind, entityID: String, entityUUID: UUID,
        payload: Data? = nil, state: OutboxState = .pending, attempts: Int = 0, lastError: String? = nil,
        nextAttemptDate: Date? = nil, server: ServerVersion? = nil, createdDate: Date = Date(), updatedDate: Date? = nil
    ) {
        self.id = id
        self.destination = destination
        self.entityKind = entityKind
        self.entityID = entityID
        self.entityUUID = entityUUID
        self.payload = payload
        self.state = state
        self.attempts = attempts
        self.lastError = lastError
        self.nextAttemptDate = nextAttemptDate
        self.server = server
        self.createdDate = createdDate
        self.updatedDate = updatedDate ?? createdDate
    }
}
