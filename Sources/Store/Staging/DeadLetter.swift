import Foundation

/// Something CareGate gave up on (a resource it could not map, an export the server keeps refusing),
/// kept with the reason so a person can look at it; nothing is silently dropped.
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

    public init(
        id: Int64? = nil, system: String, resourceType: String? = nil, resourceID: String? = nil,
        outboxEntryID: Int64? = nil, reason: String, detail: String? = nil, payload: Data? = nil,
        createdDate: Date = Date()
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
    }
}
