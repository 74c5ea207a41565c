import CareModel
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Store

/// Writes a store image into an empty PostgreSQL store, on one connection inside the target's one
/// transaction (``PostgresImageTarget``): rows as they are, many per statement; versions with their
/// uuids, links, dates and derived columns (none of the batch writer's versioning runs), in stored order
/// so that `row_id` keeps it; revisions with each version's row found by kind and uuid; ids of the outbox,
/// dead letters, audit entries and sync runs kept, their sequences set past the largest copied.
final class PostgresImageWriter: StoreImageWriter {
    private let connection: PostgresConnection
    private static let logger = Logger(label: "caregate.postgres.migration")
    /// Bound values per statement, well under PostgreSQL's 65,535.
    private static let bindsPerStatement = 30_000

    init(connection: PostgresConnection) {
        self.connection = connection
    }

    func write(_ section: StoreImageSection, _ records: [StoreImageRecord]) async throws {
        guard !records.isEmpty else { return }
        let fields = section.fields
        for record in records where record.values.count != fields.count {
            throw StoreMigrationError.unwritable(section: section.title, reason: "a record has \(record.values.count) fields, not \(fields.count)")
        }
        if let kind = section.entityKind { return try await insertVersions(kind, records) }
        if section == .revisions { return try await insertRevisions(records) }
        if section == .idSequences { return try await continueSequences(records) }
        guard let table = PostgresImageTable.of(section) else { return }
        if table.singleton {
            var bindings = PostgresBindings()
            let sets = try fields.enumerated().map { index, field in
                try table.bind(records[0][index], field, to: &bindings, section: section)
                return "\(table.column(field)) = $\(index + 1)"
            }
            try await connection.finish(PostgresQuery(unsafeSQL: "UPDATE \(table.name) SET \(sets.joined(separator: ", "))", binds: bindings), logger: Self.logger)
            return
        }
        let columns = fields.map { "\"\(table.column($0))\"" }.joined(separator: ", ")
        let overriding = table.identity == nil ? "" : " OVERRIDING SYSTEM VALUE"
        try await insert(records, columns: fields.count, prefix: "INSERT INTO \(table.name) (\(columns))\(overriding) VALUES ") { record, bindings in
            for (index, field) in fields.enumerated() { try table.bind(record[index], field, to: &bindings, section: section) }
        }
    }

    /// Inserts `records` in statements of many rows: `prefix` then one `($n, ...)` group per record of
    /// `columns` values, which `bind` appends.
    private func insert(
        _ records: [StoreImageRecord], columns: Int, prefix: String, suffix: String = "",
        bind: (StoreImageRecord, inout PostgresBindings) throws -> Void
    ) async throws {
        let perStatement = max(1, Self.bindsPerStatement / columns)
        for start in stride(from: 0, to: records.count, by: perStatement) {
            let chunk = records[start..<min(records.count, start + perStatement)]
            var bindings = PostgresBindings(capacity: chunk.count * columns)
            var groups: [String] = []
            groups.reserveCapacity(chunk.count)
            for record in chunk {
                let first = bindings.count + 1
                try bind(record, &bindings)
                guard bindings.count - first + 1 == columns else {
                    throw StoreMigrationError.unwritable(section: prefix, reason: "a record gave \(bindings.count - first + 1) values, not \(columns)")
                }
                groups.append("(" + (first..<(first + columns)).map { "$\($0)" }.joined(separator: ", ") + ")")
            }
            let sql = prefix + groups.joined(separator: ", ") + suffix
            try await connection.finish(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: Self.logger)
        }
    }

    /// The columns of a version row of `kind`, in the order ``bindVersion(_:_:to:)`` binds them.
    static func versionColumns(_ kind: EntityKind) -> [String] {
        let common = [
            "uuid", "effective_date", "deleted_date", "previous_version_uuid", "next_version_uuid", "next_effective_date", "created_date",
            "updated_date", "source_system", "fhir_type", "fhir_id", "fhir_version_id", "fhir_last_updated", "content_hash", "body",
        ]
        switch kind {
        case .patient: return common + ["id"]
        case .carePlan: return common + ["id", "patient_uuid", "patient_id"]
        case .contact, .task: return common + ["id", "care_plan_uuid", "care_plan_id", "linked_patient_id"]
        case .outcome: return common + ["task_uuid", "task_id", "occurrence_index", "event_start", "version_number", "previous_version_uuids"]
        }
    }

    private func insertVersions(_ kind: EntityKind, _ records: [StoreImageRecord]) async throws {
        let columns = Self.versionColumns(kind)
        let prefix = "INSERT INTO \(PostgresEntitySchema.table(kind)) (\(columns.joined(separator: ", "))) VALUES "
        try await insert(records, columns: columns.count, prefix: prefix) { record, bindings in
            guard case .entity(let entity) = record[0], entity.kind == kind else {
                throw StoreMigrationError.unwritable(section: StoreImageSection.versions(kind).title, reason: "a record holds no \(kind) version")
            }
            try Self.bindVersion(entity, record, to: &bindings)
        }
    }

    /// Binds the columns of version `entity` (with the derived fields of its `record`).
    static func bindVersion(_ entity: CareEntity, _ record: StoreImageRecord, to bindings: inout PostgresBindings) throws {
        let m = entity.metadata
        let p = m.provenance
        let body: Data
        do {
            body = try PostgresEntityCodec.encode(entity)
        } catch {
            throw StoreMigrationError.unwritable(section: "\(entity.kind) versions", reason: "version \(m.uuid.uuidString) cannot be encoded")
        }
        bindings.append(m.uuid)
        bindings.append(m.effectiveDate.timeIntervalSince1970)
        bindings.append(m.deletedDate?.timeIntervalSince1970)
        bindings.append(m.previousVersionUUIDs.last)
        bindings.append(m.nextVersionUUIDs.first)
        bindings.append(record[1].real)
        bindings.append(m.createdDate?.timeIntervalSince1970)
        bindings.append(m.updatedDate?.timeIntervalSince1970)
        bindings.append(p?.sourceSystem)
        bindings.append(p?.fhirType)
        bindings.append(p?.fhirID)
        bindings.append(p?.versionID)
        bindings.append(p?.lastUpdated?.timeIntervalSince1970)
        bindings.append(p?.contentHash)
        bindings.append(ByteBuffer(bytes: body))
        switch entity {
        case .patient(let patient):
            bindings.append(patient.id)
        case .carePlan(let plan):
            bindings.append(plan.id)
            bindings.append(plan.patientUUID)
            bindings.append(plan.patientID)
        case .contact(let contact):
            bindings.append(contact.id)
            bindings.append(contact.carePlanUUID)
            bindings.append(contact.carePlanID)
            bindings.append(m.linkage.patientID)
        case .task(let task):
            bindings.append(task.id)
            bindings.append(task.carePlanUUID)
            bindings.append(task.carePlanID)
            bindings.append(m.linkage.patientID)
        case .outcome(let outcome):
            guard let eventStart = record[2].real else {
                throw StoreMigrationError.unwritable(section: "outcome versions", reason: "version \(m.uuid.uuidString) has no event start")
            }
            bindings.append(outcome.taskUUID)
            bindings.append(outcome.taskID)
            bindings.append(Int64(outcome.taskOccurrenceIndex))
            bindings.append(eventStart)
            bindings.append(Int32(clamping: record[3].integer ?? 0))
            bindings.append(m.previousVersionUUIDs.count > 1 ? m.previousVersionUUIDs : nil)
        }
    }

    /// Inserts revisions in stream order (so `row_id` keeps it), each with the row of the version it names.
    private func insertRevisions(_ records: [StoreImageRecord]) async throws {
        let rowOf = EntityKind.allCases.map { kind in
            "WHEN '\(kind.rawValue)' THEN (SELECT row_id FROM \(PostgresEntitySchema.table(kind)) WHERE uuid = v.u ORDER BY row_id LIMIT 1)"
        }.joined(separator: " ")
        var number: Int64 = 0
        for start in stride(from: 0, to: records.count, by: Self.bindsPerStatement / 5) {
            let chunk = Array(records[start..<min(records.count, start + Self.bindsPerStatement / 5)])
            for record in chunk {
                guard let name = record[2].text, EntityKind(rawValue: name) != nil, record[3].uuid != nil else {
                    throw StoreMigrationError.unwritable(section: "revisions", reason: "a revision names no entity kind and uuid")
                }
            }
            let prefix = "INSERT INTO revision (patient_id, server_clock, entity_kind, entity_uuid, entity_row_id) "
                + "SELECT v.p, v.c, v.k, v.u, CASE v.k \(rowOf) END FROM (VALUES "
            let suffix = ") AS v(p, c, k, u, n) ORDER BY v.n"
            do {
                try await insert(chunk, columns: 5, prefix: prefix, suffix: suffix) { record, bindings in
                    bindings.append(record[0].text)
                    bindings.append(record[1].integer)
                    bindings.append(record[2].text)
                    bindings.append(record[3].uuid)
                    number += 1
                    bindings.append(number)
                }
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23502" {
                throw StoreMigrationError.unwritable(section: "revisions", reason: "a revision names a version the store does not hold")
            }
        }
    }

    /// Sets each numbered table's sequence to the source's last id (never lower than the ids copied).
    private func continueSequences(_ records: [StoreImageRecord]) async throws {
        for record in records {
            guard let name = record[0].text, let section = StoreImageSection(rawValue: name), StoreImageSection.numbered.contains(section),
                let table = PostgresImageTable.of(section), let identity = table.identity
            else {
                throw StoreMigrationError.unwritable(section: "id sequences", reason: "a record names no numbered section")
            }
            try await raise(table.name, identity, to: record[1].integer ?? 0)
        }
    }

    /// Sets the sequence of `table`'s `identity` to `last` when it gave less, so that its next id follows.
    private func raise(_ table: String, _ identity: String, to last: Int64) async throws {
        let (sequence, current) = try await PostgresImageTable.lastID(table, identity, connection, logger: Self.logger)
        guard last > current else { return }
        try await connection.finish("SELECT setval(\(sequence)::regclass, \(last))", logger: Self.logger)
    }

    /// Sets the sequences of the tables whose ids were copied past the largest id copied, where the
    /// image's id sequences did not already.
    func finish() async throws {
        for section in StoreImageSection.numbered {
            guard let table = PostgresImageTable.of(section), let identity = table.identity else { continue }
            let largest = try await connection.values(
                PostgresQuery(unsafeSQL: "SELECT coalesce(max(\(identity)), 0)::int8 FROM \(table.name)"), as: Int64.self, logger: Self.logger)
            try await raise(table.name, identity, to: largest.first ?? 0)
        }
    }
}
