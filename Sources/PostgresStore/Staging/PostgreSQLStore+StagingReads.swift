import Foundation
import Store

// OWNER: helper h-pgstaging. Stubs until the staging reads land.
extension PostgreSQLStore {
    public func checkpoint(server: String, resourceType: String) throws -> SyncCheckpoint? { try pulls.checkpoint(server: server, resourceType: resourceType) }
    public func exportProgress(target: String) throws -> ExportProgress? { throw PostgresStoreError.unavailable(feature: "export progress") }
    public func reportStart(frequency: String) throws -> ReportStart? { throw PostgresStoreError.unavailable(feature: "report starts") }
    public func outboxEntry(id: Int64) throws -> OutboxEntry? { try outbox.entry(id: id) }
    public func outboxEntry(destination: String, entityUUID: UUID) throws -> OutboxEntry? { try outbox.entry(destination: destination, entityUUID: entityUUID) }
    public func outboxEntries(destination: String, entityUUIDs: [UUID]) throws -> [OutboxEntry] { throw PostgresStoreError.unavailable(feature: "outbox reads") }
    public func dueOutboxEntries(at now: Date, limit: Int) throws -> [OutboxEntry] { throw PostgresStoreError.unavailable(feature: "outbox reads") }
    public func outboxEntries(in state: OutboxState, limit: Int) throws -> [OutboxEntry] { try outbox.entries(in: state, limit: limit) }
    public func deadLetters(limit: Int, includingResolved: Bool, since: Date?) throws -> [DeadLetter] { throw PostgresStoreError.unavailable(feature: "dead letters") }
    public func deadLetter(id: Int64) throws -> DeadLetter? { throw PostgresStoreError.unavailable(feature: "dead letters") }
    public func waitingDeadLetterCount() throws -> Int { throw PostgresStoreError.unavailable(feature: "dead letters") }
    public func outboxSummary() throws -> OutboxSummary { throw PostgresStoreError.unavailable(feature: "the outbox summary") }
}
