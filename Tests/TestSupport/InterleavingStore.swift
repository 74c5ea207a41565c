import CareModel
import Foundation
import Store

/// The real store, with a chance to act just before a batch is applied: what another process writing to
/// the same store file between an import's planning and its writing would do.
public final class InterleavingStore: Store, @unchecked Sendable {
    public let base: SQLiteStore
    /// Called each time a job reaches a safe point where a waiting push may run (``yieldToAppends()``).
    public var beforeYieldingToAppends: (() -> Void)?
    /// Called with each batch before it is applied; called once, then cleared, when it returns true.
    public var beforeApply: ((StoreBatch) throws -> Bool)?
    private let lock = NSLock()

    public init(_ base: SQLiteStore) {
        self.base = base
    }

    public func apply(_ batch: StoreBatch) throws -> BatchSummary {
        let hook = lock.withLock { beforeApply }
        if let hook, try hook(batch) { lock.withLock { beforeApply = nil } }
        return try base.apply(batch)
    }

    public func withWriterLease<T>(_ job: String, _ body: () throws -> T) throws -> T { try base.withWriterLease(job, body) }
    public func withAppendLease<T>(_ job: String, _ body: () throws -> T) throws -> T { try base.withAppendLease(job, body) }
    public func appendsAreWaiting() -> Bool { base.appendsAreWaiting() }
    public func yieldToAppends() throws {
        lock.withLock { beforeYieldingToAppends }?()
        try base.yieldToAppends()
    }
    public func patients(_ query: EntityQuery) throws -> [Patient] { try base.patients(query) }
    public func carePlans(_ query: EntityQuery) throws -> [CarePlan] { try base.carePlans(query) }
    public func contacts(_ query: EntityQuery) throws -> [Contact] { try base.contacts(query) }
    public func tasks(_ query: EntityQuery) throws -> [CareTask] { try base.tasks(query) }
    public func outcomes(_ query: EntityQuery) throws -> [Outcome] { try base.outcomes(query) }
    public func tasks(carePlanID: String, _ query: EntityQuery) throws -> [CareTask] { try base.tasks(carePlanID: carePlanID, query) }
    public func history(_ kind: EntityKind, id: String) throws -> [CareEntity] { try base.history(kind, id: id) }
    public func histories(_ kind: EntityKind, ids: [String]) throws -> [CareEntity] { try base.histories(kind, ids: ids) }
    public func events(patientID: String, in interval: DateInterval) throws -> [Event] { try base.events(patientID: patientID, in: interval) }
    public func lastOutcomeEventStarts(taskUUIDs: [UUID]) throws -> [UUID: Date] { try base.lastOutcomeEventStarts(taskUUIDs: taskUUIDs) }
    public func links(resourceType: String, resourceID: String) throws -> [ResourceLink] { try base.links(resourceType: resourceType, resourceID: resourceID) }
    public func links(ofResources resources: [(type: String, id: String)]) throws -> [ResourceLink] { try base.links(ofResources: resources) }
    public func sourceResources(resourceType: String, resourceID: String) throws -> [SourceResource] {
        try base.sourceResources(resourceType: resourceType, resourceID: resourceID)
    }
    public func activitiesWithDetail(resourceType: String, resourceID: String) throws -> [String]? {
        try base.activitiesWithDetail(resourceType: resourceType, resourceID: resourceID)
    }
    public func checkpoint(server: String, resourceType: String) throws -> SyncCheckpoint? { try base.checkpoint(server: server, resourceType: resourceType) }
    public func exportProgress(target: String) throws -> ExportProgress? { try base.exportProgress(target: target) }
    public func reportStart(frequency: String) throws -> ReportStart? { try base.reportStart(frequency: frequency) }
    public func outboxEntry(id: Int64) throws -> OutboxEntry? { try base.outboxEntry(id: id) }
    public func outboxEntry(destination: String, entityUUID: UUID) throws -> OutboxEntry? { try base.outboxEntry(destination: destination, entityUUID: entityUUID) }
    public func outboxEntries(destination: String, entityUUIDs: [UUID]) throws -> [OutboxEntry] {
        try base.outboxEntries(destination: destination, entityUUIDs: entityUUIDs)
    }
    public func dueOutboxEntries(at now: Date, limit: Int) throws -> [OutboxEntry] { try base.dueOutboxEntries(at: now, limit: limit) }
    public func outboxEntries(in state: OutboxState, limit: Int) throws -> [OutboxEntry] { try base.outboxEntries(in: state, limit: limit) }
    public func deadLetters(limit: Int, includingResolved: Bool, since: Date?) throws -> [DeadLetter] {
        try base.deadLetters(limit: limit, includingResolved: includingResolved, since: since)
    }
    public func deadLetter(id: Int64) throws -> DeadLetter? { try base.deadLetter(id: id) }
    public func waitingDeadLetterCount() throws -> Int { try base.waitingDeadLetterCount() }
    public func statistics() throws -> StoreStatistics { try base.statistics() }
    public func outboxSummary() throws -> OutboxSummary { try base.outboxSummary() }
    public func forEachEntity(_ kind: EntityKind, _ query: EntityQuery, _ body: (CareEntity) throws -> Void) throws {
        try base.forEachEntity(kind, query, body)
    }
    public func forEachVersion(_ kind: EntityKind, _ body: (CareEntity) throws -> Void) throws { try base.forEachVersion(kind, body) }
    public func integrityCheck() throws -> [String] { try base.integrityCheck() }
}
