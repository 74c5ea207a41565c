import CareModel
import Foundation
import GRDB

/// Reads a SQLite store's image (``StoreImage``), a page at a time: its rows as they are, entity
/// versions decoded as the store's own reads decode them (``EntityRowCodec``) with their derived columns,
/// revisions naming their version by kind and uuid, and the audit trail of the `-audit.sqlite` file beside
/// the store together with any entries of the store's own older `audit` table.
public struct SQLiteImageReader: StoreImageReader {
    public let store: SQLiteStore

    public init(store: SQLiteStore) {
        self.store = store
    }

    public var storeDescription: String { store.path }

    public func page(_ section: StoreImageSection, after cursor: StoreImageCursor?, limit: Int) async throws -> StoreImagePage {
        try pageNow(section, after: cursor, limit: max(1, limit))
    }

    /// The page, read on the calling thread.
    func pageNow(_ section: StoreImageSection, after cursor: StoreImageCursor?, limit: Int) throws -> StoreImagePage {
        if let kind = section.entityKind { return try versions(kind, after: cursor?.position ?? 0, limit: limit) }
        switch section {
        case .revisions: return try revisions(after: cursor?.position ?? 0, limit: limit)
        case .audit: return try audit(after: cursor?.position ?? 0, limit: limit)
        case .idSequences: return StoreImagePage.slice(try idSequences(), after: cursor, limit: limit)
        default: break
        }
        guard let table = SQLiteImageTable.of(section) else { return StoreImagePage(records: [], next: nil) }
        let fields = section.fields
        let columns = fields.map { "\"\($0.name)\"" }
        var sql = "SELECT \(columns.joined(separator: ", "))"
        var arguments = StatementArguments()
        if let order = table.storedOrder {
            sql += ", \(order) FROM \(table.name) WHERE \(order) > ? ORDER BY \(order) LIMIT ?"
            arguments = [cursor?.position ?? Int64.min, limit]
        } else {
            let key = (section.orderKey ?? []).map { columns[$0] }
            sql += " FROM \(table.name)"
            if let last = cursor?.key, !key.isEmpty {
                sql += " WHERE (\(key.joined(separator: ", "))) > (\(SQLText.placeholders(key.count)))"
                arguments += StatementArguments(last.map(SQLiteImageTable.argument))
            }
            sql += (key.isEmpty ? "" : " ORDER BY \(key.joined(separator: ", "))") + " LIMIT ?"
            arguments += [limit]
        }
        let rows = try read(table.file) { db -> [Row] in
            guard try db.tableExists(table.name) else { return [] }
            return try Row.fetchAll(db, sql: sql, arguments: arguments)
        }
        let records = try rows.map { try SQLiteImageTable.record($0, fields: fields, section: section) }
        guard rows.count == limit, let lastRow = rows.last, let lastRecord = records.last else { return StoreImagePage(records: records, next: nil) }
        if table.storedOrder != nil {
            return StoreImagePage(records: records, next: StoreImageCursor(position: lastRow[fields.count]))
        }
        return StoreImagePage(records: records, next: StoreImageCursor(key: (section.orderKey ?? []).map { lastRecord[$0] }))
    }

    /// Runs `body` on the store file or on the audit trail's file (nothing when it has none).
    private func read<T>(_ file: SQLiteImageTable.File, _ body: (Database) throws -> [T]) throws -> [T] {
        switch file {
        case .store: return try store.readSnapshot(body)
        case .auditTrail:
            guard let trail = try store.auditTrail.reader(lastStoreID: store.lastAuditIDInStore) else { return [] }
            do { return try trail.read(body) } catch { throw store.auditTrail.failure(error) }
        }
    }

    /// Versions of `kind` after row `rowID`, in stored order.
    private func versions(_ kind: EntityKind, after rowID: Int64, limit: Int) throws -> StoreImagePage {
        let table = StoreSchema.Table.entity(kind)
        let (records, last) = try store.readSnapshot { db -> ([StoreImageRecord], Int64?) in
            let rows = try Row.fetchAll(db, sql: "SELECT * FROM \(table) WHERE rowID > ? ORDER BY rowID LIMIT ?", arguments: [rowID, limit])
            guard !rows.isEmpty else { return ([], nil) }
            let codec = EntityRowCodec()
            let values = kind == .outcome ? try SQLiteStore.outcomeValues(rowIDs: SQLiteStore.rowsWithExtraValues(rows), db) : [:]
            let records = try rows.map { row -> StoreImageRecord in
                let rowID: Int64 = row["rowID"]
                let entity = try codec.entity(kind, row: row, values: values[rowID] ?? [])
                if kind == .outcome, case .outcome(let outcome) = entity, let extra: Int = row["extraValues"], outcome.values.count != extra + (row["firstValueType"] == nil ? 0 : 1) {
                    throw StoreError.database(message: "outcome row \(rowID) has values its reads cannot decode")
                }
                return StoreImageRecord([
                    .entity(entity), StoreImageValue(row["nextEffectiveDate"] as Double?),
                    kind == .outcome ? StoreImageValue(row["eventStart"] as Double?) : .null,
                    kind == .outcome ? StoreImageValue(row["versionNumber"] as Int64?) : .null,
                ])
            }
            return (records, rows.last?["rowID"])
        }
        return StoreImagePage(records: records, next: records.count == limit ? last.map { StoreImageCursor(position: $0) } : nil)
    }

    /// Revisions after row `rowID`, in stored order, each naming its version by kind and uuid.
    private func revisions(after rowID: Int64, limit: Int) throws -> StoreImagePage {
        let fields = StoreImageSection.revisions.fields
        let rows = try store.readSnapshot { db in
            try Row.fetchAll(
                db, sql: "SELECT patientID, serverClock, entityKind, entityUUID, rowID FROM revision WHERE rowID > ? ORDER BY rowID LIMIT ?",
                arguments: [rowID, limit])
        }
        let records = try rows.map { try SQLiteImageTable.record($0, fields: fields, section: .revisions) }
        let next: Int64? = rows.count == limit ? rows.last?[4] : nil
        return StoreImagePage(records: records, next: next.map { StoreImageCursor(position: $0) })
    }

    /// Audit entries after id `id`: the store's own older table's, then the trail file's (whose ids
    /// continue after them), by id.
    private func audit(after id: Int64, limit: Int) throws -> StoreImagePage {
        let fields = StoreImageSection.audit.fields
        let older = try store.readSnapshot { db -> [Row] in
            guard try db.tableExists(StoreSchema.Table.audit) else { return [] }
            return try Row.fetchAll(
                db, sql: "SELECT id, date, subject, patientID, action, status, detail, NULL FROM audit WHERE id > ? ORDER BY id LIMIT ?",
                arguments: [id, limit])
        }
        let trail = try read(.auditTrail) { db -> [Row] in
            guard try db.tableExists("audit") else { return [] }
            return try Row.fetchAll(
                db, sql: "SELECT id, date, subject, patientID, action, status, detail, clientAddress FROM audit WHERE id > ? ORDER BY id LIMIT ?",
                arguments: [id, limit])
        }
        let merged = (older + trail).sorted { ($0[0] as Int64) < ($1[0] as Int64) }.prefix(limit)
        let records = try merged.map { try SQLiteImageTable.record($0, fields: fields, section: .audit) }
        let next: Int64? = merged.count == limit ? merged.last?[0] : nil
        return StoreImagePage(records: records, next: next.map { StoreImageCursor(position: $0) })
    }

    /// The last id of each numbered section; the audit trail's the larger of its file's and the store's
    /// older table's.
    private func idSequences() throws -> [StoreImageRecord] {
        var records: [StoreImageRecord] = []
        for section in StoreImageSection.numbered {
            let table = SQLiteImageTable.numberedTable(section)
            var last = try store.readSnapshot { db in [try SQLiteImageTable.lastID(table, db)] }[0]
            if section == .audit {
                last = max(last, try read(.auditTrail) { db in [try SQLiteImageTable.lastID(table, db)] }.first ?? 0)
            }
            records.append(StoreImageRecord([.text(section.rawValue), .integer(last)]))
        }
        return records
    }
}
