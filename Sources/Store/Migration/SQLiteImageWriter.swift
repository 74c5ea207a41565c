import CareModel
import Foundation
import GRDB

/// Writes a store image into a new, empty SQLite store as rows, as they are: versions with the uuids,
/// links, dates and derived columns they had (none of the batch writer's versioning runs), the revision
/// log with each row's version found by its uuid, the audit trail into the store's `-audit.sqlite` file,
/// ids kept.
final class SQLiteImageWriter: StoreImageWriter {
    private(set) var store: SQLiteStore?
    private let codec = EntityRowCodec()
    private var indexedOutcomeUUIDs = false

    init(store: SQLiteStore) {
        self.store = store
    }

    func write(_ section: StoreImageSection, _ records: [StoreImageRecord]) async throws {
        try writeNow(section, records)
    }

    func writeNow(_ section: StoreImageSection, _ records: [StoreImageRecord]) throws {
        guard let store, !records.isEmpty else { return }
        let fields = section.fields
        for record in records where record.values.count != fields.count {
            throw StoreMigrationError.unwritable(section: section.title, reason: "a record has \(record.values.count) fields, not \(fields.count)")
        }
        if let kind = section.entityKind {
            try store.writeTransaction { db in try insertVersions(kind, records, db) }
            return
        }
        switch section {
        case .syncClock:
            try store.writeTransaction { db in
                try db.execute(
                    sql: "UPDATE syncClock SET processUUID = ?, clock = ? WHERE singleton = 1",
                    arguments: [records[0][0].uuid, records[0][1].integer])
            }
        case .revisions:
            try store.writeTransaction { db in try insertRevisions(records, db) }
        case .idSequences:
            try continueSequences(records, store)
        case .audit, .auditRefusals:
            let table = section == .audit ? "audit" : "audit_refusals"
            let trail = try store.auditTrail.writer(lastStoreID: store.lastAuditIDInStore)
            do {
                try trail.write { db in try insert(table, fields, records, db) }
            } catch {
                throw store.auditTrail.failure(error)
            }
        default:
            guard let table = SQLiteImageTable.of(section) else { return }
            try store.writeTransaction { db in try insert(table.name, fields, records, db) }
        }
    }

    /// Inserts `records` into `table`, one column per field.
    private func insert(_ table: String, _ fields: [StoreImageField], _ records: [StoreImageRecord], _ db: Database) throws {
        let columns = fields.map { "\"\($0.name)\"" }.joined(separator: ", ")
        let statement = try db.cachedStatement(sql: "INSERT INTO \(table) (\(columns)) VALUES (\(SQLText.placeholders(fields.count)))")
        for record in records {
            try statement.execute(arguments: StatementArguments(record.values.map(SQLiteImageTable.argument)))
        }
    }

    /// Inserts entity versions as their rows, outcome values beyond the first in `outcomeValue`.
    private func insertVersions(_ kind: EntityKind, _ records: [StoreImageRecord], _ db: Database) throws {
        var columns = EntityRowCodec.commonColumns + EntityRowCodec.specificColumns(kind) + ["nextVersionUUID", "nextEffectiveDate"]
        if kind == .outcome { columns.append("previousVersionUUIDs") }
        let statement = try db.cachedStatement(
            sql: "INSERT INTO \(StoreSchema.Table.entity(kind)) (\(columns.joined(separator: ", "))) VALUES (\(SQLText.placeholders(columns.count)))")
        let valueStatement = try db.cachedStatement(sql: EntityRowCodec.insertValuesSQL())
        let previousAt = EntityRowCodec.commonColumns.firstIndex(of: "previousVersionUUID")!
        let specificAt = EntityRowCodec.commonColumns.count
        for record in records {
            guard case .entity(let entity) = record[0], entity.kind == kind else {
                throw StoreMigrationError.unwritable(section: StoreImageSection.versions(kind).title, reason: "a record holds no \(kind) version")
            }
            let metadata = entity.metadata
            var values = codec.commonValues(metadata, payload: try codec.payload(entity))
            // As the batch writer: the first version a version names (all of them in previousVersionUUIDs).
            values[previousAt] = metadata.previousVersionUUIDs.first
            values += EntityRowCodec.specificValues(entity, eventStart: nil)
            if kind == .outcome {
                values[specificAt + 3] = record[2].real
                values[specificAt + 5] = record[3].integer ?? 0
            }
            values += [metadata.nextVersionUUIDs.first, record[1].real]
            if kind == .outcome {
                values.append(metadata.previousVersionUUIDs.count > 1 ? EntityRowCodec.packed(metadata.previousVersionUUIDs) : nil)
            }
            try statement.execute(arguments: StatementArguments(values))
            guard case .outcome(let outcome) = entity, outcome.values.count > 1 else { continue }
            let rowID = db.lastInsertedRowID
            for (position, value) in outcome.values.enumerated().dropFirst() {
                try valueStatement.execute(arguments: [
                    rowID, position, value.type.rawValue, EntityRowCodec.valueColumn(value.value), value.units, value.kind, value.index,
                    value.createdDate?.storeSeconds, value.timezone == .gmt ? nil : value.timezone.identifier,
                ])
            }
        }
    }

    /// Inserts revisions, each version's row found by its kind and uuid (outcome uuids through an index
    /// made for the migration and dropped at its end).
    private func insertRevisions(_ records: [StoreImageRecord], _ db: Database) throws {
        if !indexedOutcomeUUIDs {
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS migration_outcome_by_uuid ON outcome (uuid)")
            indexedOutcomeUUIDs = true
        }
        var statements: [EntityKind: Statement] = [:]
        for record in records {
            guard let name = record[2].text, let kind = EntityKind(rawValue: name), let uuid = record[3].uuid else {
                throw StoreMigrationError.unwritable(section: "revisions", reason: "a revision names no entity kind and uuid")
            }
            let statement = try statements[kind] ?? db.cachedStatement(sql: """
                INSERT INTO revision (patientID, serverClock, entityKind, entityUUID, entityRowID)
                SELECT ?, ?, ?, ?, rowID FROM \(StoreSchema.Table.entity(kind)) WHERE uuid = ? ORDER BY rowID LIMIT 1
                """)
            statements[kind] = statement
            try statement.execute(arguments: [record[0].text, record[1].integer, name, uuid, uuid])
            guard db.changesCount == 1 else {
                throw StoreMigrationError.unwritable(section: "revisions", reason: "a revision names a \(kind) version (\(uuid.uuidString)) the store does not hold")
            }
        }
    }

    /// Sets each numbered table's last id to the source's (never lower than the ids copied).
    private func continueSequences(_ records: [StoreImageRecord], _ store: SQLiteStore) throws {
        for record in records {
            guard let name = record[0].text, let section = StoreImageSection(rawValue: name), StoreImageSection.numbered.contains(section) else {
                throw StoreMigrationError.unwritable(section: "id sequences", reason: "a record names no numbered section")
            }
            guard let last = record[1].integer, last > 0 else { continue }
            let table = SQLiteImageTable.numberedTable(section)
            let write: (Database) throws -> Void = { db in
                try db.execute(
                    sql: "INSERT INTO sqlite_sequence (name, seq) SELECT ?, 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)",
                    arguments: [table, table])
                try db.execute(sql: "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", arguments: [last, table])
            }
            if section == .audit {
                let trail = try store.auditTrail.writer(lastStoreID: store.lastAuditIDInStore)
                do { try trail.write(write) } catch { throw store.auditTrail.failure(error) }
            } else {
                try store.writeTransaction(write)
            }
        }
    }

    /// Drops what the migration added for itself, writes the WAL into the file and closes the store.
    func finish() throws {
        guard let store else { return }
        try store.writeTransaction { db in try db.execute(sql: "DROP INDEX IF EXISTS migration_outcome_by_uuid") }
        _ = try store.writer.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        if let trail = try store.auditTrail.reader(lastStoreID: store.lastAuditIDInStore) as? any DatabaseWriter {
            _ = try trail.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        }
        // Closed here, before the file is renamed into place, not whenever the last reference goes.
        store.close()
        self.store = nil
    }
}
