import CareModel
import Foundation
import PostgresNIO
import Store

/// Versions as rows of their tables (``PostgresEntitySchema``): the body of a version, and a tombstone
/// copied from its tip (the other rows are written in bulk: WritePendingRows.swift).
extension PostgresBatchWriter {
    /// The body of `entity` (``PostgresEntityCodec/encode(_:)``), or the SQLite store's refusal.
    static func body(_ entity: CareEntity) throws -> ByteBuffer {
        do {
            return try PostgresEntityCodec.encode(entity).byteBuffer
        } catch {
            throw StoreError.invalidEntity(kind: entity.kind, id: entity.id, reason: "cannot be encoded: \(error)")
        }
    }

    /// Inserts the tombstone of the version at `rowID` of `kind`: a copy of it, in effect and deleted from
    /// `date`, after it; its row id.
    func insertTombstone(_ kind: EntityKind, copying rowID: Int64, uuid: UUID, date: Date) async throws -> Int64 {
        let table = PostgresEntitySchema.table(kind)
        var copied = ["source_system", "fhir_type", "fhir_id", "fhir_version_id", "fhir_last_updated", "content_hash", "body"]
        switch kind {
        case .patient: copied += ["id"]
        case .carePlan: copied += ["id", "patient_uuid", "patient_id"]
        case .contact, .task: copied += ["id", "care_plan_uuid", "care_plan_id", "linked_patient_id"]
        case .outcome: copied += ["task_uuid", "task_id", "occurrence_index", "event_start"]
        }
        let list = copied.joined(separator: ", ")
        let numbered = kind == .outcome ? (columns: ", version_number", values: ", version_number + 1") : (columns: "", values: "")
        let seconds = date.timeIntervalSince1970
        try await flushPending()
        // From the ids allocated ahead, as every version's: row ids follow the order versions are written.
        let newRowID = try await allocateRowID(kind)
        let query: PostgresQuery = """
            INSERT INTO \(unescaped: table) (row_id, uuid, effective_date, deleted_date, previous_version_uuid, created_date, updated_date, \(unescaped: list)\(unescaped: numbered.columns))
            OVERRIDING SYSTEM VALUE
            SELECT \(newRowID), \(uuid), \(seconds), \(seconds), uuid, \(now.timeIntervalSince1970), \(now.timeIntervalSince1970), \(unescaped: list)\(unescaped: numbered.values)
            FROM \(unescaped: table) WHERE row_id = \(rowID)
            RETURNING row_id
            """
        guard let inserted = try await connection.values(query, as: Int64.self, logger: logger).first else {
            throw StoreError.database(message: "the tombstone of a \(kind) version found no row to copy")
        }
        return inserted
    }

    /// One outcome row, as ``insertOutcomeRows(_:)`` writes it.
    struct OutcomeRow {
        var outcome: Outcome
        var uuid: UUID
        var taskID: String
        var eventStart: Date
        var deletedDate: Date?
        var previousVersionUUID: UUID?
        var previousVersionUUIDs: [UUID]?
        var versionNumber: Int
    }

    /// Rows per bulk statement: a bound on one statement's arrays.
    static let rowsPerStatement = 2_000
    /// The shortest run of outcome adds written in bulk.
    static let bulkRunMinimum = 16
}

