import CareModel
import Foundation
import PostgresNIO
import Store

/// Versions as rows of their tables (``PostgresEntitySchema``): one row, a tombstone copied from its tip,
/// and many outcome rows in one statement.
extension PostgresBatchWriter {
    /// The body of `entity` (``PostgresEntityCodec/encode(_:)``), or the SQLite store's refusal.
    static func body(_ entity: CareEntity) throws -> ByteBuffer {
        do {
            return try PostgresEntityCodec.encode(entity).byteBuffer
        } catch {
            throw StoreError.invalidEntity(kind: entity.kind, id: entity.id, reason: "cannot be encoded: \(error)")
        }
    }

    /// Inserts the version `entity` (not an outcome) whose metadata is the stored one; its row id.
    func insertRow(_ entity: CareEntity) async throws -> Int64 {
        let m = entity.metadata
        let p = m.provenance
        var row = RowValues()
        try row.add("uuid", m.uuid)
        try row.add("effective_date", m.effectiveDate.timeIntervalSince1970)
        try row.add("deleted_date", m.deletedDate?.timeIntervalSince1970)
        try row.add("previous_version_uuid", m.previousVersionUUIDs.last)
        try row.add("created_date", m.createdDate?.timeIntervalSince1970)
        try row.add("updated_date", m.updatedDate?.timeIntervalSince1970)
        try row.add("source_system", p?.sourceSystem)
        try row.add("fhir_type", p?.fhirType)
        try row.add("fhir_id", p?.fhirID)
        try row.add("fhir_version_id", p?.versionID)
        try row.add("fhir_last_updated", p?.lastUpdated?.timeIntervalSince1970)
        try row.add("content_hash", p?.contentHash)
        try row.add("body", try Self.body(entity))
        try row.add("id", entity.id)
        switch entity {
        case .patient: break
        case .carePlan(let plan):
            try row.add("patient_uuid", plan.patientUUID)
            try row.add("patient_id", plan.patientID)
        case .contact(let contact):
            try row.add("care_plan_uuid", contact.carePlanUUID)
            try row.add("care_plan_id", contact.carePlanID)
            try row.add("linked_patient_id", contact.metadata.linkage.patientID)
        case .task(let task):
            try row.add("care_plan_uuid", task.carePlanUUID)
            try row.add("care_plan_id", task.carePlanID)
            try row.add("linked_patient_id", task.metadata.linkage.patientID)
        case .outcome:
            throw StoreError.database(message: "an outcome is written by insertOutcomeRow")
        }
        guard let rowID = try await connection.values(row.insert(into: PostgresEntitySchema.table(entity.kind)), as: Int64.self, logger: logger).first else {
            throw StoreError.database(message: "the insert of a \(entity.kind) version returned no row")
        }
        return rowID
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
        let query: PostgresQuery = """
            INSERT INTO \(unescaped: table) (uuid, effective_date, deleted_date, previous_version_uuid, created_date, updated_date, \(unescaped: list)\(unescaped: numbered.columns))
            SELECT \(uuid), \(seconds), \(seconds), uuid, \(now.timeIntervalSince1970), \(now.timeIntervalSince1970), \(unescaped: list)\(unescaped: numbered.values)
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

    static let outcomeColumns = """
        uuid, effective_date, deleted_date, previous_version_uuid, created_date, updated_date, source_system, fhir_type, fhir_id,
        fhir_version_id, fhir_last_updated, content_hash, body, task_uuid, task_id, occurrence_index, event_start, version_number
        """

    /// Inserts one outcome version; its row id. A second first version of an outcome is refused
    /// (``StoreError/idAlreadyExists(kind:id:)``) by the unique index, as in the SQLite store.
    func insertOutcomeRow(_ row: OutcomeRow) async throws -> Int64 {
        var stored = row.outcome
        stored.metadata.uuid = row.uuid
        stored.taskID = row.taskID
        let p = stored.metadata.provenance
        let body = try Self.body(.outcome(stored))
        let now = now.timeIntervalSince1970
        let query: PostgresQuery = """
            INSERT INTO outcome (\(unescaped: Self.outcomeColumns), previous_version_uuids)
            VALUES (\(row.uuid), \(stored.metadata.effectiveDate.timeIntervalSince1970), \(row.deletedDate?.timeIntervalSince1970), \(row.previousVersionUUID),
                    \(now), \(now), \(p?.sourceSystem), \(p?.fhirType), \(p?.fhirID), \(p?.versionID), \(p?.lastUpdated?.timeIntervalSince1970),
                    \(p?.contentHash), \(body), \(stored.taskUUID), \(row.taskID), \(stored.taskOccurrenceIndex), \(row.eventStart.timeIntervalSince1970),
                    \(Int32(row.versionNumber)), \(row.previousVersionUUIDs))
            RETURNING row_id
            """
        do {
            guard let rowID = try await connection.values(query, as: Int64.self, logger: logger).first else {
                throw StoreError.database(message: "the insert of an outcome version returned no row")
            }
            return rowID
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw StoreError.idAlreadyExists(kind: .outcome, id: stored.id)
        }
    }

    /// Inserts first versions of outcomes (no deletion, no predecessor) in one statement per chunk; their
    /// row ids in the order given.
    func insertFirstOutcomeRows(_ rows: [OutcomeRow]) async throws -> [Int64] {
        var rowIDs: [Int64] = []
        rowIDs.reserveCapacity(rows.count)
        for start in stride(from: 0, to: rows.count, by: Self.rowsPerStatement) {
            let chunk = rows[start..<min(start + Self.rowsPerStatement, rows.count)]
            var bodies: [ByteBuffer] = []
            bodies.reserveCapacity(chunk.count)
            for row in chunk {
                var stored = row.outcome
                stored.metadata.uuid = row.uuid
                stored.taskID = row.taskID
                bodies.append(try Self.body(.outcome(stored)))
            }
            let p = chunk.map(\.outcome.metadata.provenance)
            let query: PostgresQuery = """
                INSERT INTO outcome (\(unescaped: Self.outcomeColumns))
                SELECT uuid, effective_date, NULL, NULL, \(now.timeIntervalSince1970), \(now.timeIntervalSince1970), source_system, fhir_type, fhir_id,
                       fhir_version_id, fhir_last_updated, content_hash, body, task_uuid, task_id, occurrence_index, event_start, 0
                FROM unnest(\(chunk.map(\.uuid))::uuid[], \(chunk.map(\.outcome.metadata.effectiveDate.timeIntervalSince1970))::float8[],
                            \(NullableArray(p.map { $0?.sourceSystem }))::text[], \(NullableArray(p.map { $0?.fhirType }))::text[],
                            \(NullableArray(p.map { $0?.fhirID }))::text[], \(NullableArray(p.map { $0?.versionID }))::text[],
                            \(NullableArray(p.map { $0?.lastUpdated?.timeIntervalSince1970 }))::float8[], \(NullableArray(p.map { $0?.contentHash }))::text[],
                            \(bodies)::bytea[], \(chunk.map(\.outcome.taskUUID))::uuid[], \(chunk.map(\.taskID))::text[],
                            \(chunk.map { Int64($0.outcome.taskOccurrenceIndex) })::int8[], \(chunk.map(\.eventStart.timeIntervalSince1970))::float8[])
                     WITH ORDINALITY AS t(uuid, effective_date, source_system, fhir_type, fhir_id, fhir_version_id, fhir_last_updated, content_hash,
                                          body, task_uuid, task_id, occurrence_index, event_start, position)
                ORDER BY position
                RETURNING row_id, uuid
                """
            var byUUID: [UUID: Int64] = [:]
            do {
                for try await (rowID, uuid) in try await connection.query(query, logger: logger).decode((Int64, UUID).self) { byUUID[uuid] = rowID }
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
                // Checked before the insert: only a concurrent writer outside the lease gets here.
                throw StoreError.idAlreadyExists(kind: .outcome, id: chunk.first?.outcome.id ?? "")
            }
            for row in chunk {
                guard let rowID = byUUID[row.uuid] else { throw StoreError.database(message: "an outcome inserted in bulk returned no row") }
                rowIDs.append(rowID)
            }
        }
        return rowIDs
    }

    /// Rows per bulk statement: a bound on one statement's arrays.
    static let rowsPerStatement = 2_000
    /// The shortest run of outcome adds written in bulk.
    static let bulkRunMinimum = 16
}

/// The columns and bound values of one row to insert.
struct RowValues {
    private var columns: [String] = []
    private var binds = PostgresBindings()

    mutating func add<Value: PostgresThrowingDynamicTypeEncodable>(_ column: String, _ value: Value?) throws {
        columns.append(column)
        if let value { try binds.append(value, context: .default) } else { binds.appendNull() }
    }

    /// `INSERT INTO table (columns) VALUES ($1, ...) RETURNING row_id`.
    func insert(into table: String) -> PostgresQuery {
        let placeholders = (1...max(1, columns.count)).map { "$\($0)" }.joined(separator: ", ")
        return PostgresQuery(
            unsafeSQL: "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(placeholders)) RETURNING row_id", binds: binds)
    }
}
