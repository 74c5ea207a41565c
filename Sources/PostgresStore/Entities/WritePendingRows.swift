import CareModel
import Foundation
import NIOCore
import PostgresNIO
import Store

/// New versions written in bulk: each gets its row id at once, from ids allocated ahead from its table's
/// identity (so that tips, links and revisions name it as SQLite's would, in the order written), and its
/// row waits in memory until the writer next reads or changes an entity table (``flushPending()``), which
/// then inserts every waiting row of a table in one statement. Every statement of the writer other than
/// these inserts, the outbox's and the revision log's own tables runs after a flush, so nothing it reads
/// misses a version the batch wrote.
extension PostgresBatchWriter {
    /// A row id of `kind`'s table, from the ids allocated ahead (``allocationSize`` at a time).
    func allocateRowID(_ kind: EntityKind) async throws -> Int64 {
        if let next = rowIDPool[kind]?.popLast() { return next }
        let table = PostgresEntitySchema.table(kind)
        let ids = try await connection.values(
            "SELECT nextval(pg_get_serial_sequence(\(table), 'row_id')) FROM generate_series(1, \(Int64(allocationSize)))", as: Int64.self, logger: logger)
        guard !ids.isEmpty else { throw StoreError.database(message: "no row id could be allocated for \(kind)") }
        var pool = ids.sorted(by: >)
        let first = pool.removeLast()
        rowIDPool[kind] = pool
        return first
    }

    /// Writes the version `entity` (not an outcome) whose metadata is the stored one, at the next flush;
    /// its row id.
    func insertRow(_ entity: CareEntity) async throws -> Int64 {
        let body = try Self.body(entity)  // refused now, as the SQLite store refuses it, not at the flush
        let rowID = try await allocateRowID(entity.kind)
        pendingEntities[entity.kind, default: []].append((rowID, entity, body))
        return rowID
    }

    /// Writes one outcome version at the next flush; its row id. (A second first version of an outcome is
    /// refused before: ``add(_:)`` checks its tip.)
    func insertOutcomeRow(_ row: OutcomeRow) async throws -> Int64 {
        let rowID = try await allocateRowID(.outcome)
        pendingOutcomes.append((rowID, row))
        return rowID
    }

    /// Writes first versions of outcomes at the next flush; their row ids, in the order given.
    func insertFirstOutcomeRows(_ rows: [OutcomeRow]) async throws -> [Int64] {
        var rowIDs: [Int64] = []
        rowIDs.reserveCapacity(rows.count)
        for row in rows { rowIDs.append(try await insertOutcomeRow(row)) }
        return rowIDs
    }

    /// Inserts every waiting row, a statement per table and chunk.
    func flushPending() async throws {
        for kind in [EntityKind.patient, .carePlan, .contact, .task] {
            guard let rows = pendingEntities[kind], !rows.isEmpty else { continue }
            pendingEntities[kind] = nil
            for start in stride(from: 0, to: rows.count, by: Self.rowsPerStatement) {
                try await insertEntities(kind, Array(rows[start..<min(start + Self.rowsPerStatement, rows.count)]))
            }
        }
        guard !pendingOutcomes.isEmpty else { return }
        let rows = pendingOutcomes
        pendingOutcomes = []
        for start in stride(from: 0, to: rows.count, by: Self.rowsPerStatement) {
            try await insertOutcomes(Array(rows[start..<min(start + Self.rowsPerStatement, rows.count)]))
        }
    }

    private func insertEntities(_ kind: EntityKind, _ rows: [(rowID: Int64, entity: CareEntity, body: ByteBuffer)]) async throws {
        let m = rows.map(\.entity.metadata)
        let p = m.map(\.provenance)
        let bodies = rows.map(\.body)
        // The columns of the kind beyond the common ones: care plans name their patient, tasks and contacts their care plan.
        var references: [(uuid: UUID?, id: String?, linked: String?)] = []
        for row in rows {
            switch row.entity {
            case .carePlan(let plan): references.append((plan.patientUUID, plan.patientID, nil))
            case .task(let task): references.append((task.carePlanUUID, task.carePlanID, task.metadata.linkage.patientID))
            case .contact(let contact): references.append((contact.carePlanUUID, contact.carePlanID, contact.metadata.linkage.patientID))
            case .patient, .outcome: references.append((nil, nil, nil))
            }
        }
        let specific: (columns: String, values: String) = switch kind {
        case .carePlan: (", patient_uuid, patient_id", ", reference_uuid, reference_id")
        case .task, .contact: (", care_plan_uuid, care_plan_id, linked_patient_id", ", reference_uuid, reference_id, linked_patient_id")
        default: ("", "")
        }
        try await connection.finish("""
            INSERT INTO \(unescaped: PostgresEntitySchema.table(kind))
                (row_id, uuid, effective_date, deleted_date, previous_version_uuid, created_date, updated_date, source_system, fhir_type, fhir_id,
                 fhir_version_id, fhir_last_updated, content_hash, body, id\(unescaped: specific.columns))
            OVERRIDING SYSTEM VALUE
            SELECT row_id, uuid, effective_date, deleted_date, previous_version_uuid, created_date, updated_date, source_system, fhir_type, fhir_id,
                   fhir_version_id, fhir_last_updated, content_hash, body, id\(unescaped: specific.values)
            FROM unnest(\(rows.map(\.rowID))::int8[], \(m.map(\.uuid))::uuid[], \(m.map(\.effectiveDate.timeIntervalSince1970))::float8[],
                        \(NullableArray(m.map { $0.deletedDate?.timeIntervalSince1970 }))::float8[], \(NullableArray(m.map(\.previousVersionUUIDs.last)))::uuid[],
                        \(NullableArray(m.map { $0.createdDate?.timeIntervalSince1970 }))::float8[],
                        \(NullableArray(m.map { $0.updatedDate?.timeIntervalSince1970 }))::float8[],
                        \(NullableArray(p.map { $0?.sourceSystem }))::text[], \(NullableArray(p.map { $0?.fhirType }))::text[],
                        \(NullableArray(p.map { $0?.fhirID }))::text[], \(NullableArray(p.map { $0?.versionID }))::text[],
                        \(NullableArray(p.map { $0?.lastUpdated?.timeIntervalSince1970 }))::float8[], \(NullableArray(p.map { $0?.contentHash }))::text[],
                        \(bodies)::bytea[], \(rows.map(\.entity.id))::text[], \(NullableArray(references.map(\.uuid)))::uuid[],
                        \(NullableArray(references.map(\.id)))::text[], \(NullableArray(references.map(\.linked)))::text[])
                 AS t(row_id, uuid, effective_date, deleted_date, previous_version_uuid, created_date, updated_date, source_system, fhir_type, fhir_id,
                      fhir_version_id, fhir_last_updated, content_hash, body, id, reference_uuid, reference_id, linked_patient_id)
            ORDER BY row_id
            """, logger: logger)
    }

    private func insertOutcomes(_ rows: [(rowID: Int64, row: OutcomeRow)]) async throws {
        var bodies: [ByteBuffer] = []
        bodies.reserveCapacity(rows.count)
        for (_, row) in rows {
            var stored = row.outcome
            stored.metadata.uuid = row.uuid
            stored.taskID = row.taskID
            bodies.append(try Self.body(.outcome(stored)))
        }
        let o = rows.map(\.row)
        let p = o.map(\.outcome.metadata.provenance)
        let now = now.timeIntervalSince1970
        do {
            try await connection.finish("""
                INSERT INTO outcome
                    (row_id, uuid, effective_date, deleted_date, previous_version_uuid, created_date, updated_date, source_system, fhir_type, fhir_id,
                     fhir_version_id, fhir_last_updated, content_hash, body, task_uuid, task_id, occurrence_index, event_start, version_number)
                OVERRIDING SYSTEM VALUE
                SELECT row_id, uuid, effective_date, deleted_date, previous_version_uuid, \(now), \(now), source_system, fhir_type, fhir_id,
                       fhir_version_id, fhir_last_updated, content_hash, body, task_uuid, task_id, occurrence_index, event_start, version_number
                FROM unnest(\(rows.map(\.rowID))::int8[], \(o.map(\.uuid))::uuid[], \(o.map(\.outcome.metadata.effectiveDate.timeIntervalSince1970))::float8[],
                            \(NullableArray(o.map { $0.deletedDate?.timeIntervalSince1970 }))::float8[], \(NullableArray(o.map(\.previousVersionUUID)))::uuid[],
                            \(NullableArray(p.map { $0?.sourceSystem }))::text[], \(NullableArray(p.map { $0?.fhirType }))::text[],
                            \(NullableArray(p.map { $0?.fhirID }))::text[], \(NullableArray(p.map { $0?.versionID }))::text[],
                            \(NullableArray(p.map { $0?.lastUpdated?.timeIntervalSince1970 }))::float8[], \(NullableArray(p.map { $0?.contentHash }))::text[],
                            \(bodies)::bytea[], \(o.map(\.outcome.taskUUID))::uuid[], \(o.map(\.taskID))::text[],
                            \(o.map { Int64($0.outcome.taskOccurrenceIndex) })::int8[], \(o.map(\.eventStart.timeIntervalSince1970))::float8[],
                            \(o.map { Int32($0.versionNumber) })::int4[])
                     AS t(row_id, uuid, effective_date, deleted_date, previous_version_uuid, source_system, fhir_type, fhir_id, fhir_version_id,
                          fhir_last_updated, content_hash, body, task_uuid, task_id, occurrence_index, event_start, version_number)
                ORDER BY row_id
                """, logger: logger)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            // Checked before (add looks at the tip; a run at its duplicates): only a writer outside the batch lock gets here.
            throw StoreError.idAlreadyExists(kind: .outcome, id: rows.first?.row.outcome.id ?? "")
        }
    }
}
