import CareModel
import Foundation
import Logging
import PostgresNIO
import Store

/// The bulk way to add outcomes (the SQLite store's BatchWriter+OutcomeRuns.swift, ported): a run of
/// consecutive `.add(.outcome)` changes checked in batch order, then written in a few statements.
extension PostgresBatchWriter {
    /// The shortest run the SQLite store writes task by task rather than in batch order: the same runs are
    /// ordered so here, so that both stores list outcomes (in stored order) alike.
    static let sortedRunMinimum = 256

    /// Adds the outcomes of a run of consecutive `.add(.outcome)` changes: every check in batch order, a
    /// refusal the one batch order meets first, then the rows, links, exports and revisions in bulk.
    func addOutcomes(_ run: ArraySlice<StoreChange>) async throws {
        var rows: [OutcomeRow] = []
        rows.reserveCapacity(run.count)
        for change in run {
            guard case .add(.outcome(let outcome)) = change else { continue }
            do {
                let (task, start) = try await ownedOccurrence(of: outcome)
                var stored = outcome
                stored.taskID = task.task.id
                setVersionFields(of: &stored, after: nil)
                rows.append(OutcomeRow(
                    outcome: stored, uuid: uuids.next(), taskID: task.task.id, eventStart: start, deletedDate: nil,
                    previousVersionUUID: nil, previousVersionUUIDs: nil, versionNumber: 0))
            } catch {
                // In batch order an earlier outcome of the run would have been refused on insert first.
                throw try await firstDuplicate(rows) ?? error
            }
        }
        if let duplicate = try await firstDuplicate(rows) { throw duplicate }
        // As the SQLite store: a long run task by task (the tasks in the order they first appear), each in
        // time order; a shorter one in batch order.
        var order = Array(rows.indices)
        if rows.count >= Self.sortedRunMinimum {
            var groups: [UUID: Int] = [:]
            for row in rows where groups[row.outcome.taskUUID] == nil { groups[row.outcome.taskUUID] = groups.count }
            order.sort { a, b in
                let (x, y) = (groups[rows[a].outcome.taskUUID] ?? 0, groups[rows[b].outcome.taskUUID] ?? 0)
                if x != y { return x < y }
                if rows[a].eventStart != rows[b].eventStart { return rows[a].eventStart < rows[b].eventStart }
                return a < b
            }
        }
        let written = order.map { rows[$0] }
        let rowIDs = try await insertFirstOutcomeRows(written)
        pendingLinks.append(
            contentsOf: written.compactMap { row in
                row.outcome.metadata.provenance.map {
                    ResourceLink(sourceSystem: $0.sourceSystem, resourceType: $0.fhirType, resourceID: $0.fhirID, entityKind: .outcome, entityID: row.outcome.id)
                }
            })
        summary.outboxEntryIDs += try await enqueueExports(
            written.filter { Self.queuesForProvider($0.outcome.metadata.provenance) }.map { ($0.outcome.id, $0.uuid) })
        for (row, rowID) in zip(written, rowIDs) {
            known.outcomeTips[KnownState.OutcomeKey(taskUUID: row.outcome.taskUUID, eventStart: row.eventStart.timeIntervalSince1970, occurrence: row.outcome.taskOccurrenceIndex)] =
                .present(Tip(rowID: rowID, uuid: row.uuid, effectiveDate: row.outcome.metadata.effectiveDate, deletedDate: nil, contentHash: row.outcome.metadata.provenance?.contentHash))
            try await revisions.append(.outcome, uuid: row.uuid, rowID: rowID, owner: outcomeOwner(row.outcome.taskUUID))
        }
        for row in rows { summary.file(.created, EntityKey(outcomeOf: row.outcome.taskUUID, occurrence: row.outcome.taskOccurrenceIndex)) }
        summary.versionUUIDs += rows.map(\.uuid)
    }

    /// The refusal batch order meets first among `rows` (checked outcomes of a run, in batch order): one
    /// whose outcome exists already, or comes earlier in the run.
    func firstDuplicate(_ rows: [OutcomeRow]) async throws -> StoreError? {
        guard !rows.isEmpty else { return nil }
        try await flushPending()
        struct Key: Hashable {
            let taskUUID: UUID
            let eventStart: Double
            let occurrence: Int
        }
        var existing = Set<Key>()
        for start in stride(from: 0, to: rows.count, by: Self.rowsPerStatement) {
            let chunk = rows[start..<min(start + Self.rowsPerStatement, rows.count)]
            let found = try await connection.query("""
                SELECT o.task_uuid, o.event_start, o.occurrence_index FROM outcome o
                JOIN unnest(\(chunk.map(\.outcome.taskUUID))::uuid[], \(chunk.map(\.eventStart.timeIntervalSince1970))::float8[],
                            \(chunk.map { Int64($0.outcome.taskOccurrenceIndex) })::int8[]) AS t(task_uuid, event_start, occurrence_index)
                  ON o.task_uuid = t.task_uuid AND o.event_start = t.event_start AND o.occurrence_index = t.occurrence_index AND o.version_number = 0
                """, logger: logger)
            for try await (task, start, occurrence) in found.decode((UUID, Double, Int64).self) {
                existing.insert(Key(taskUUID: task, eventStart: start, occurrence: Int(occurrence)))
            }
        }
        var seen = Set<Key>()
        for row in rows {
            let key = Key(taskUUID: row.outcome.taskUUID, eventStart: row.eventStart.timeIntervalSince1970, occurrence: row.outcome.taskOccurrenceIndex)
            if existing.contains(key) || !seen.insert(key).inserted { return StoreError.idAlreadyExists(kind: .outcome, id: row.outcome.id) }
        }
        return nil
    }

    /// Links FHIR resources to entities made from them (each once), in one statement per chunk.
    static func link(_ links: [ResourceLink], on connection: PostgresConnection, logger: Logger) async throws {
        for start in stride(from: 0, to: links.count, by: rowsPerStatement) {
            let chunk = links[start..<min(start + rowsPerStatement, links.count)]
            try await connection.finish("""
                INSERT INTO resource_link (resource_type, resource_id, source_system, entity_kind, entity_id)
                SELECT * FROM unnest(\(chunk.map(\.resourceType))::text[], \(chunk.map(\.resourceID))::text[], \(chunk.map(\.sourceSystem))::text[],
                                     \(chunk.map(\.entityKind.rawValue))::text[], \(chunk.map(\.entityID))::text[])
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }
    }
}
