import CareModel
import Foundation
import Store

/// The real store, with a chance to act just before a batch is applied: what another process writing to
/// the same store file between an import's planning and its writing would do.
final class InterleavingStore: Store, @unchecked Sendable {
    let base: SQLiteStore
    /// Called with each batch before it is applied; called once, then cleared, when it returns true.
    var beforeApply: ((StoreBatch) throws -> Bool)?
    private let lock = NSLock()

    init(_ base: SQLiteStore) {
        self.base = base
    }

    func apply(_ batch: StoreBatch) throws -> BatchSummary {
        let hook = lock.withLock { beforeApply }
        if let hook, try hook(batch) { lock.withLock { beforeApply = nil } }
        return try base.apply(batch)
    }

    func withWriterLease<T>(_ job: String, _ body: () throws -> T) throws -> T { try base.withWriterLease(job, body) }
    func patients(_ query: EntityQuery) throws -> [Patient] { try base.patients(query) }
    func carePlans(_ query: EntityQuery) throws -> [CarePlan] { try base.carePlans(query) }
    func contacts(_ query: EntityQuery) throws -> [Contact] { try base.contacts(query) }
    func tasks(_ query: EntityQuery) throws -> [CareTask] { try base.tasks(query) }
    func outcomes(_ query: EntityQuery) throws -> [Outcome] { try base.outcomes(query) }
    func tasks(carePlanID: String, _ query: EntityQuery) throws -> [CareTask] { try base.tasks(carePlanID: carePlanID, query) }
    func history(_ kind: EntityKind, id: String) throws -> [CareEntity] { try base.history(kind, id: id) }
    func histories(_ kind: EntityKind, ids: [String]) throws -> [CareEntity] { try base.histories(kind, ids: ids) }
    func events(patientID: String, in interval: DateInterval) throws -> [Event] { try base.events(patientID: patientID, in: interval) }
    func lastOutcomeEventStarts(taskUUIDs: [UUID]) throws -> [UUID: Date] { try base.lastOutcomeEventStarts(taskUUIDs: taskUUIDs) }
    func links(resourceType: String, resourceID: String) throws -> [ResourceLink] { try base.links(resourceType: resourceType, resourceID: resourceID) }
    func links(ofResources resources: [(type: String, id: String)]) throws -> [ResourceLink] { try base.links(ofResources: resources) }
    func sourceResources(resourceType: String, resourceID: String) throws -> [SourceResource] {
        try base.sourceResources(resourceType: resourceType, resourceID: resourceID)
    }
    func activitiesWithDetail(resourceType: String, resourceID: String) throws -> [String]? {
        try base.activitiesWithDetail(resourceType: resourceType, resourceID: resourceID)
    }
    func checkpoint(server: String, resourceType: String) throws -> SyncCheckpoint? { try base.checkpoint(server: server, resourceType: resourceType) }
    func exportProgress(target: String) throws -> ExportProgress? { try base.exportProgress(target: target) }
    func reportStart(frequency: String) throws -> ReportStart? { try base.reportStart(frequency: frequency) }
    func outboxEntry(id: Int64) throws -> OutboxEntry? { try base.outboxEntry(id: id) }
    func outboxEntry(destination: String, entityUUID: UUID) throws -> OutboxEntry? { try base.outboxEntry(destination: destination, entityUUID: entityUUID) }
    func outboxEntries(destination: String, entityUUIDs: [UUID]) throws -> [OutboxEntry] {
        try base.outboxEntries(destination: destination, entityUUIDs: entityUUIDs)
    }
    func dueOutboxEntries(at now: Date, limit: Int) throws -> [OutboxEntry] { try base.dueOutboxEntries(at: now, limit: limit) }
    func outboxEntries(in state: OutboxState, limit: Int) throws -> [OutboxEntry] { try base.outboxEntries(in: state, limit: limit) }
    func deadLetters(limit: Int) throws -> [DeadLetter] { try base.deadLetters(limit: limit) }
    func statistics() throws -> StoreStatistics { try base.statistics() }
    func forEachEntity(_ kind: EntityKind, _ query: EntityQuery, _ body: (CareEntity) throws -> Void) throws {
        try base.forEachEntity(kind, query, body)
    }
    func forEachVersion(_ kind: EntityKind, _ body: (CareEntity) throws -> Void) throws { try base.forEachVersion(kind, body) }
    func integrityCheck() throws -> [String] { try base.integrityCheck() }
}
