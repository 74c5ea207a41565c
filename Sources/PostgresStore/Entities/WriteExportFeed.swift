import CareModel
import Foundation
import PostgresNIO
import Store

/// The change feed of write-back (the SQLite store's BatchWriter+ExportFeed.swift, ported): a version of
/// an outcome the patient recorded (no provenance) is queued for the provider; so is the tombstone of an
/// outcome that has such a version (exported as entered-in-error), however it is deleted.
extension PostgresBatchWriter {
    /// Whether a version with `provenance` is queued for the provider: only what no provider's resource made.
    static func queuesForProvider(_ provenance: Provenance?) -> Bool {
        provenance == nil
    }

    /// Whether the tombstone of an outcome whose stored version is at `rowID` is queued: when the patient
    /// wrote a version of it (no provenance, not a tombstone).
    func queuesTombstoneForProvider(outcomeRow rowID: Int64) async throws -> Bool {
        try await flushPending()
        return try await connection.values("""
            SELECT EXISTS (
                SELECT 1 FROM outcome AS version, outcome AS deleted
                WHERE deleted.row_id = \(rowID) AND version.task_uuid = deleted.task_uuid AND version.event_start = deleted.event_start
                  AND version.occurrence_index = deleted.occurrence_index AND version.fhir_type IS NULL AND version.deleted_date IS NULL)
            """, as: Bool.self, logger: logger).first ?? false
    }

    /// Whether a device's version of an outcome is queued: by ``queuesForProvider(_:)``; a tombstone
    /// (`deleting`) only when the patient wrote a version of the outcome.
    static func queuesAppendedVersionForProvider(_ provenance: Provenance?, deleting: Bool, patientWroteAVersion: Bool) -> Bool {
        queuesForProvider(provenance) && (!deleting || patientWroteAVersion)
    }

    /// Queues version `uuid` of outcome `outcomeID` for export to the provider.
    func enqueueExport(outcomeID: String, uuid: UUID) async throws {
        summary.outboxEntryIDs += try await enqueueExports([(outcomeID, uuid)])
    }

    /// Queues versions of outcomes for export to the provider, each once (a version already queued keeps
    /// its entry); the entries' ids in the order given.
    func enqueueExports(_ versions: [(outcomeID: String, uuid: UUID)]) async throws -> [Int64] {
        guard !versions.isEmpty else { return [] }
        var ids: [UUID: Int64] = [:]
        for start in stride(from: 0, to: versions.count, by: Self.rowsPerStatement) {
            let chunk = versions[start..<min(start + Self.rowsPerStatement, versions.count)]
            let rows = try await connection.query("""
                INSERT INTO outbox (destination, entity_kind, entity_id, entity_uuid, created_at, updated_at)
                SELECT \(OutboxEntry.provider), \(EntityKind.outcome.rawValue), entity_id, entity_uuid, \(now), \(now)
                FROM unnest(\(chunk.map(\.outcomeID))::text[], \(chunk.map(\.uuid))::uuid[]) WITH ORDINALITY AS t(entity_id, entity_uuid, position)
                ORDER BY position
                ON CONFLICT (destination, entity_uuid) DO NOTHING
                RETURNING id, entity_uuid
                """, logger: logger)
            for try await (id, uuid) in rows.decode((Int64, UUID).self) { ids[uuid] = id }
            let missing = chunk.map(\.uuid).filter { ids[$0] == nil }
            if !missing.isEmpty {
                let existing = try await connection.query(
                    "SELECT id, entity_uuid FROM outbox WHERE destination = \(OutboxEntry.provider) AND entity_uuid = ANY(\(missing)::uuid[])", logger: logger)
                for try await (id, uuid) in existing.decode((Int64, UUID).self) { ids[uuid] = id }
            }
        }
        return try versions.map { version in
            guard let id = ids[version.uuid] else { throw StoreError.database(message: "an outbox entry was not found after its insert") }
            return id
        }
    }
}
