import Foundation
import GRDB

/// Where each section of a store image lives in a SQLite store: its table and its columns (the
/// section's field names), and how its rows are ordered. Entity versions, revisions and the audit trail
/// have readers and writers of their own (``SQLiteImageReader``, ``SQLiteImageWriter``).
struct SQLiteImageTable {
    /// Which database holds the table.
    enum File { case store, auditTrail }

    var name: String
    var file: File = .store
    /// Stored order (`rowid`, or `id` where the table has one) when the section has no order key.
    var storedOrder: String?

    static func of(_ section: StoreImageSection) -> SQLiteImageTable? {
        switch section {
        case .syncClock: return .init(name: StoreSchema.Table.syncClock)
        case .outcomeConflicts: return .init(name: StoreSchema.Table.outcomeConflict)
        case .sourceResources: return .init(name: StoreSchema.Table.sourceResource, storedOrder: "rowID")
        case .resourceLinks: return .init(name: StoreSchema.Table.resourceLink)
        case .syncCheckpoints: return .init(name: StoreSchema.Table.syncCheckpoint)
        case .outbox: return .init(name: StoreSchema.Table.outbox, storedOrder: "id")
        case .deadLetters: return .init(name: StoreSchema.Table.deadLetter, storedOrder: "id")
        case .patientKnowledge: return .init(name: StoreSchema.Table.patientKnowledge)
        case .revisionStamps: return .init(name: StoreSchema.Table.revisionStamp)
        case .auditRefusals: return .init(name: "audit_refusals", file: .auditTrail)
        case .syncRuns: return .init(name: "syncRun", storedOrder: "id")
        case .lastImportCoverage: return .init(name: "lastImportCoverage")
        case .consentDecisions: return .init(name: "consentDecision", storedOrder: "rowid")
        case .questionnaires: return .init(name: "questionnaire", storedOrder: "rowid")
        case .exportProgress: return .init(name: StoreSchema.Table.exportProgress)
        case .reportStarts: return .init(name: StoreSchema.Table.reportStart)
        case .patientVersions, .carePlanVersions, .contactVersions, .taskVersions, .outcomeVersions, .revisions, .audit, .idSequences:
            return nil
        }
    }

    /// The table whose `sqlite_sequence` row numbers a section's ids (``StoreImageSection/numbered``);
    /// the audit trail's is in its own file.
    static func numberedTable(_ section: StoreImageSection) -> String {
        switch section {
        case .deadLetters: return StoreSchema.Table.deadLetter
        case .syncRuns: return "syncRun"
        case .audit: return StoreSchema.Table.audit
        default: return StoreSchema.Table.outbox
        }
    }

    /// The last id `table` gave (its `sqlite_sequence` row), 0 when it gave none.
    static func lastID(_ table: String, _ db: Database) throws -> Int64 {
        guard try db.tableExists("sqlite_sequence") else { return 0 }
        return try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = ?", arguments: [table]) ?? 0
    }

    /// The section's record from a row of its fields, each converted as its field says.
    static func record(_ row: Row, fields: [StoreImageField], offset: Int = 0, section: StoreImageSection) throws -> StoreImageRecord {
        var values: [StoreImageValue] = []
        values.reserveCapacity(fields.count)
        for (index, field) in fields.enumerated() {
            values.append(try value(row[offset + index] as DatabaseValue, field, section: section))
        }
        return StoreImageRecord(values)
    }

    /// A stored value as the field's kind; an error when the store holds something else there.
    static func value(_ stored: DatabaseValue, _ field: StoreImageField, section: StoreImageSection) throws -> StoreImageValue {
        if stored.isNull { return .null }
        let value: StoreImageValue?
        switch field.kind {
        case .integer: value = Int64.fromDatabaseValue(stored).map { .integer($0) }
        case .real: value = Double.fromDatabaseValue(stored).map { .real($0) }
        case .text: value = String.fromDatabaseValue(stored).map { .text($0) }
        case .blob: value = Data.fromDatabaseValue(stored).map { .blob($0) }
        case .uuid: value = UUID.fromDatabaseValue(stored).map { .uuid($0) }
        case .entity: value = nil
        }
        guard let value else {
            throw StoreError.database(message: "the store's \(section.title) hold a \(field.name) that is not \(field.kind)")
        }
        return value
    }

    /// A record's value as a SQLite argument.
    static func argument(_ value: StoreImageValue) -> (any DatabaseValueConvertible)? {
        switch value {
        case .null, .entity: return nil
        case .integer(let v): return v
        case .real(let v): return v
        case .text(let v): return v
        case .blob(let v): return v
        case .uuid(let v): return v
        }
    }
}
