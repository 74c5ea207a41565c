import CareModel
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Store

/// Where each section of a store image (``StoreImage``) lives in a PostgreSQL store: its table, the
/// column of each field (the field's name in snake_case unless named here), how a column's type differs
/// from the field's (a boolean kept as 0 or 1, a uuid kept as text), and how rows are ordered. Entity
/// versions and revisions have readers and writers of their own (``PostgresImageReader``,
/// ``PostgresImageWriter``).
struct PostgresImageTable {
    /// How a column holds its field when its type is not the field's own.
    enum Conversion { case none, booleanAsInteger, uuidAsText }

    var name: String
    /// The identity column copied with its values (`OVERRIDING SYSTEM VALUE`) and whose sequence is
    /// set past the largest id copied; `nil` when ids are made by the database or there are none.
    var identity: String?
    /// The column of stored order (`row_id`, `id`); `nil` for sections ordered by their key.
    var storedOrder: String?
    var columnNames: [String: String] = [:]
    var conversions: [String: Conversion] = [:]
    /// The table has one row made by its migration, updated rather than inserted.
    var singleton = false

    static func of(_ section: StoreImageSection) -> PostgresImageTable? {
        switch section {
        case .syncClock: return .init(name: "sync_clock", singleton: true)
        case .outcomeConflicts: return .init(name: "outcome_conflict")
        case .sourceResources: return .init(name: "source_resource", storedOrder: "row_id")
        case .resourceLinks: return .init(name: "resource_link")
        case .syncCheckpoints: return .init(name: "sync_checkpoint")
        case .outbox:
            return .init(
                name: "outbox", identity: "id", storedOrder: "id",
                columnNames: ["nextAttemptDate": "next_attempt_at", "createdDate": "created_at", "updatedDate": "updated_at"])
        case .deadLetters: return .init(name: "dead_letter", identity: "id", storedOrder: "id")
        case .patientKnowledge: return .init(name: "patient_knowledge", conversions: ["served": .booleanAsInteger])
        case .revisionStamps: return .init(name: "revision_stamp")
        case .audit: return .init(name: "audit", identity: "id", storedOrder: "id")
        case .auditRefusals: return .init(name: "audit_refusals")
        case .syncRuns: return .init(name: "sync_run", identity: "id", storedOrder: "id")
        case .lastImportCoverage: return .init(name: "last_import_coverage")
        case .consentDecisions: return .init(name: "consent_decision", storedOrder: "row_id", conversions: ["uuid": .uuidAsText])
        case .questionnaires: return .init(name: "questionnaire", storedOrder: "row_id")
        case .exportProgress: return .init(name: "export_progress")
        case .reportStarts: return .init(name: "report_start")
        case .patientVersions, .carePlanVersions, .contactVersions, .taskVersions, .outcomeVersions, .revisions, .idSequences: return nil
        }
    }

    /// Every table a migration fills, for the check that a target is empty.
    static let filledTables: [String] =
        EntityKind.allCases.map(PostgresEntitySchema.table) + ["revision"]
        + StoreImageSection.allCases.compactMap { of($0) }.filter { !$0.singleton }.map(\.name)

    /// The last id the identity sequence of `table`'s column `identity` gave (0 when it gave none), and
    /// the sequence's name (from the catalog).
    static func lastID(_ table: String, _ identity: String, _ connection: PostgresConnection, logger: Logger) async throws -> (sequence: String, last: Int64) {
        let names = try await connection.values(
            "SELECT pg_get_serial_sequence(\(table), \(identity))", as: String?.self, logger: logger)
        guard let sequence = names.first ?? nil else {
            throw StoreError.database(message: "the table \(table) has no sequence for \(identity)")
        }
        let rows = try await connection.query(PostgresQuery(unsafeSQL: "SELECT last_value, is_called FROM \(sequence)"), logger: logger)
        for try await (value, called) in rows.decode((Int64, Bool).self) { return (sequence, called ? value : 0) }
        return (sequence, 0)
    }

    func column(_ field: StoreImageField) -> String {
        columnNames[field.name] ?? StoreImageSection.snakeCase(field.name)
    }

    /// The select expression of `field`, cast to what ``value(_:_:section:)`` decodes.
    func selectExpression(_ field: StoreImageField) -> String {
        let column = "\"\(column(field))\""
        switch conversions[field.name] ?? .none {
        case .booleanAsInteger: return "\(column)::int4::int8"
        case .uuidAsText: return column
        case .none:
            switch field.kind {
            case .integer: return "\(column)::int8"
            case .real: return "\(column)::float8"
            default: return column
            }
        }
    }

    /// The field's value from a cell selected by ``selectExpression(_:)``.
    func value(_ cell: PostgresCell, _ field: StoreImageField, section: StoreImageSection) throws -> StoreImageValue {
        do {
            if conversions[field.name] == .uuidAsText { return StoreImageValue(try cell.decode(UUID?.self)?.uuidString) }
            switch field.kind {
            case .integer: return StoreImageValue(try cell.decode(Int64?.self))
            case .real: return StoreImageValue(try cell.decode(Double?.self))
            case .text: return StoreImageValue(try cell.decode(String?.self))
            case .blob: return StoreImageValue(try cell.decode(ByteBuffer?.self).map { Data($0.readableBytesView) })
            case .uuid: return StoreImageValue(try cell.decode(UUID?.self))
            case .entity: return .null
            }
        } catch {
            throw StoreError.database(message: "the store's \(section.title) hold a \(field.name) that cannot be read: \(String(reflecting: error))")
        }
    }

    /// Appends `value` of `field` to `bindings`, as the column's type takes it.
    func bind(_ value: StoreImageValue, _ field: StoreImageField, to bindings: inout PostgresBindings, section: StoreImageSection) throws {
        switch conversions[field.name] ?? .none {
        case .booleanAsInteger:
            if let integer = value.integer { bindings.append(integer != 0) } else { bindings.append(Bool?.none) }
            return
        case .uuidAsText:
            guard let text = value.text else { bindings.append(UUID?.none); return }
            guard let uuid = UUID(uuidString: text) else {
                throw StoreMigrationError.unwritable(section: section.title, reason: "a \(field.name) is not a uuid")
            }
            bindings.append(uuid)
            return
        case .none: break
        }
        Self.bind(value, field.kind, to: &bindings)
    }

    /// Appends `value` to `bindings`, a NULL of the field's kind's type when it is null.
    static func bind(_ value: StoreImageValue, _ kind: StoreImageField.Kind, to bindings: inout PostgresBindings) {
        switch value {
        case .integer(let v): bindings.append(v)
        case .real(let v): bindings.append(v)
        case .text(let v): bindings.append(v)
        case .blob(let v): bindings.append(ByteBuffer(bytes: v))
        case .uuid(let v): bindings.append(v)
        case .null, .entity:
            switch kind {
            case .integer: bindings.append(Int64?.none)
            case .real: bindings.append(Double?.none)
            case .text: bindings.append(String?.none)
            case .blob: bindings.append(ByteBuffer?.none)
            case .uuid: bindings.append(UUID?.none)
            case .entity: bindings.append(String?.none)
            }
        }
    }
}
