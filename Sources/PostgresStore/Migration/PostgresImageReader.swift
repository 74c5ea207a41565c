import CareModel
import Foundation
import Logging
import PostgresNIO
import Store

/// Reads a PostgreSQL store's image (``StoreImage``), a page at a time, on the database's pool: entity
/// versions decoded as the store's reads decode them (``PostgresEntityCodec``) with their derived columns,
/// revisions naming their version by kind and uuid, the other sections' rows as they are
/// (``PostgresImageTable``). Text keys are ordered byte by byte (`COLLATE "C"`), as SQLite orders them.
public struct PostgresImageReader: StoreImageReader {
    public let database: PostgresDatabase
    private static let logger = Logger(label: "caregate.postgres.migration")

    public init(database: PostgresDatabase) {
        self.database = database
    }

    public var storeDescription: String { database.location.redacted }

    public func page(_ section: StoreImageSection, after cursor: StoreImageCursor?, limit: Int) async throws -> StoreImagePage {
        do {
            return try await read(section, after: cursor, limit: max(1, limit))
        } catch let error as PSQLError {
            throw PostgresStoreError.server(url: database.location.redacted, problem: PostgresDatabase.message(error))
        }
    }

    private func read(_ section: StoreImageSection, after cursor: StoreImageCursor?, limit: Int) async throws -> StoreImagePage {
        if let kind = section.entityKind { return try await versions(kind, after: cursor?.position ?? 0, limit: limit) }
        if section == .revisions { return try await revisions(after: cursor?.position ?? 0, limit: limit) }
        if section == .idSequences { return StoreImagePage.slice(try await idSequences(), after: cursor, limit: limit) }
        guard let table = PostgresImageTable.of(section) else { return StoreImagePage(records: [], next: nil) }
        let fields = section.fields
        var sql = "SELECT " + fields.map(table.selectExpression).joined(separator: ", ")
        var bindings = PostgresBindings()
        if let order = table.storedOrder {
            bindings.append(cursor?.position ?? Int64.min)
            bindings.append(Int64(limit))
            sql += ", \(order)::int8 FROM \(table.name) WHERE \(order) > $1 ORDER BY \(order) LIMIT $2"
        } else {
            let keyFields = (section.orderKey ?? []).map { fields[$0] }
            let key = keyFields.map { field in
                "\"\(table.column(field))\"" + (field.kind == .text ? " COLLATE \"C\"" : "")
            }
            sql += " FROM \(table.name)"
            if let last = cursor?.key, !key.isEmpty {
                for (value, field) in zip(last, keyFields) { PostgresImageTable.bind(value, field.kind, to: &bindings) }
                sql += " WHERE (\(key.joined(separator: ", "))) > (\((1...key.count).map { "$\($0)" }.joined(separator: ", ")))"
            }
            bindings.append(Int64(limit))
            sql += (key.isEmpty ? "" : " ORDER BY \(key.joined(separator: ", "))") + " LIMIT $\(bindings.count)"
        }
        var records: [StoreImageRecord] = []
        var lastPosition: Int64?
        for try await row in try await database.client.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: Self.logger) {
            let cells = row.makeRandomAccess()
            var values: [StoreImageValue] = []
            for (index, field) in fields.enumerated() { values.append(try table.value(cells[index], field, section: section)) }
            records.append(StoreImageRecord(values))
            if table.storedOrder != nil { lastPosition = try cells[fields.count].decode(Int64.self) }
        }
        guard records.count == limit, let last = records.last else { return StoreImagePage(records: records, next: nil) }
        if let lastPosition { return StoreImagePage(records: records, next: StoreImageCursor(position: lastPosition)) }
        return StoreImagePage(records: records, next: StoreImageCursor(key: (section.orderKey ?? []).map { last[$0] }))
    }

    /// Versions of `kind` after row `rowID`, in stored order, with their derived columns.
    private func versions(_ kind: EntityKind, after rowID: Int64, limit: Int) async throws -> StoreImagePage {
        let table = PostgresEntitySchema.table(kind)
        let extra = kind == .outcome ? "next_effective_date, event_start, version_number::int8" : "next_effective_date, NULL::float8, NULL::int8"
        let sql = "SELECT \(PostgresEntityCodec.selectList(kind)), \(extra) FROM \(table) WHERE row_id > $1 ORDER BY row_id LIMIT $2"
        var bindings = PostgresBindings()
        bindings.append(rowID)
        bindings.append(Int64(limit))
        var records: [StoreImageRecord] = []
        var last: Int64 = rowID
        for try await row in try await database.client.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: Self.logger) {
            let (stored, entity) = try PostgresEntityCodec.decode(kind: kind, row: row)
            let cells = row.makeRandomAccess()
            records.append(StoreImageRecord([
                .entity(entity), StoreImageValue(try cells[11].decode(Double?.self)), StoreImageValue(try cells[12].decode(Double?.self)),
                StoreImageValue(try cells[13].decode(Int64?.self)),
            ]))
            last = stored
        }
        return StoreImagePage(records: records, next: records.count == limit ? StoreImageCursor(position: last) : nil)
    }

    /// Revisions after row `rowID`, in stored order, each naming its version by kind and uuid.
    private func revisions(after rowID: Int64, limit: Int) async throws -> StoreImagePage {
        let query: PostgresQuery = """
            SELECT patient_id, server_clock, entity_kind, entity_uuid, row_id FROM revision WHERE row_id > \(rowID) ORDER BY row_id LIMIT \(Int64(limit))
            """
        var records: [StoreImageRecord] = []
        var last = rowID
        for try await (patient, clock, kind, uuid, row) in try await database.client.query(query, logger: Self.logger).decode((String, Int64, String, UUID, Int64).self) {
            records.append(StoreImageRecord([.text(patient), .integer(clock), .text(kind), .uuid(uuid)]))
            last = row
        }
        return StoreImagePage(records: records, next: records.count == limit ? StoreImageCursor(position: last) : nil)
    }

    /// The last id each numbered section's identity sequence gave.
    private func idSequences() async throws -> [StoreImageRecord] {
        try await database.client.withConnection { connection in
            var records: [StoreImageRecord] = []
            for section in StoreImageSection.numbered {
                guard let table = PostgresImageTable.of(section), let identity = table.identity else { continue }
                let (_, last) = try await PostgresImageTable.lastID(table.name, identity, connection, logger: Self.logger)
                records.append(StoreImageRecord([.text(section.rawValue), .integer(last)]))
            }
            return records
        }
    }
}
