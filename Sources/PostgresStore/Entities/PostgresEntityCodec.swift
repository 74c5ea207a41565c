import CareModel
import Foundation
import NIOCore
import PostgresNIO
import Store

// OWNER: helper h-pgwrites.
/// A care entity version as a row of its PostgreSQL table (``PostgresEntitySchema``) and back.
///
/// A row keeps the whole version in `body`, CareModel's JSON encoding of the entity (``encode(_:)``), beside
/// the version columns, which are authoritative on reading: later versions update `next_version_uuid`,
/// and a tombstone copies its tip's body under version columns of its own. So a version is read with
/// ``selectList(_:alias:)`` and decoded with ``decode(kind:row:)``:
///
/// ```swift
/// let rows = try await connection.query(
///     PostgresQuery(unsafeSQL: "SELECT \(PostgresEntityCodec.selectList(.task)) FROM task WHERE id = $1 ORDER BY row_id", binds: ...), logger: logger)
/// for try await row in rows { entities.append(try PostgresEntityCodec.decode(kind: .task, row: row).entity) }
/// ```
///
/// The select list is, in order (``VersionColumns``): `row_id, uuid, effective_date, deleted_date,
/// previous_version_uuid, previous_version_uuids, next_version_uuid, created_date, updated_date,
/// content_hash, body` (`previous_version_uuids` is `NULL::uuid[]` for kinds other than outcomes).
///
/// What is read back equals what the SQLite store reads back: the version fields come from the columns as
/// `Date(timeIntervalSince1970:)` of the stored seconds, and an outcome's value dates (and, for an outcome
/// with no JSON-only fields, its provenance's `lastUpdated`), which SQLite keeps as seconds columns, are
/// rounded through those seconds by ``encode(_:)``.
public enum PostgresEntityCodec {
    /// The version columns of a row, as ``selectList(_:alias:)`` reads them.
    public struct VersionColumns: Sendable, Equatable {
        public var rowID: Int64
        public var uuid: UUID
        public var effectiveDate: Double
        public var deletedDate: Double?
        public var previousVersionUUID: UUID?
        /// Set only when an outcome version names more than one version.
        public var previousVersionUUIDs: [UUID]?
        public var nextVersionUUID: UUID?
        public var createdDate: Double?
        public var updatedDate: Double?
        public var contentHash: String?

        public init(
            rowID: Int64, uuid: UUID, effectiveDate: Double, deletedDate: Double?, previousVersionUUID: UUID?, previousVersionUUIDs: [UUID]?,
            nextVersionUUID: UUID?, createdDate: Double?, updatedDate: Double?, contentHash: String?
        ) {
            self.rowID = rowID
            self.uuid = uuid
            self.effectiveDate = effectiveDate
            self.deletedDate = deletedDate
            self.previousVersionUUID = previousVersionUUID
            self.previousVersionUUIDs = previousVersionUUIDs
            self.nextVersionUUID = nextVersionUUID
            self.createdDate = createdDate
            self.updatedDate = updatedDate
            self.contentHash = contentHash
        }
    }

    /// The table of `kind`.
    public static func table(_ kind: EntityKind) -> String { PostgresEntitySchema.table(kind) }

    /// The select list ``decode(kind:row:)`` reads, its columns prefixed with `alias.` when given.
    public static func selectList(_ kind: EntityKind, alias: String? = nil) -> String {
        let p = alias.map { "\($0)." } ?? ""
        let several = kind == .outcome ? "\(p)previous_version_uuids" : "NULL::uuid[]"
        return "\(p)row_id, \(p)uuid, \(p)effective_date, \(p)deleted_date, \(p)previous_version_uuid, \(several), "
            + "\(p)next_version_uuid, \(p)created_date, \(p)updated_date, \(p)content_hash, \(p)body"
    }

    /// The version of `kind` in `row`, a row of ``selectList(_:alias:)`` (further columns after it are
    /// ignored), and its `row_id`.
    public static func decode(kind: EntityKind, row: PostgresRow) throws -> (rowID: Int64, entity: CareEntity) {
        let cells = row.makeRandomAccess()
        guard cells.count >= 11 else {
            throw StoreError.database(message: "a \(kind) row has \(cells.count) columns, not the 11 of PostgresEntityCodec.selectList")
        }
        do {
            let columns = VersionColumns(
                rowID: try cells[0].decode(Int64.self), uuid: try cells[1].decode(UUID.self), effectiveDate: try cells[2].decode(Double.self),
                deletedDate: try cells[3].decode(Double?.self), previousVersionUUID: try cells[4].decode(UUID?.self),
                previousVersionUUIDs: try cells[5].decode([UUID]?.self), nextVersionUUID: try cells[6].decode(UUID?.self),
                createdDate: try cells[7].decode(Double?.self), updatedDate: try cells[8].decode(Double?.self),
                contentHash: try cells[9].decode(String?.self))
            let body = try cells[10].decode(ByteBuffer.self)
            return (columns.rowID, try decode(kind: kind, body: Data(body.readableBytesView), columns: columns))
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.database(message: "a \(kind) row cannot be read: \(String(reflecting: error))")
        }
    }

    /// The version of `kind` whose body is `body`, its version fields set from `columns`.
    public static func decode(kind: EntityKind, body: Data, columns: VersionColumns) throws -> CareEntity {
        let decoder = CareKitJSON.makeDecoder()
        var entity: CareEntity
        do {
            switch kind {
            case .patient: entity = .patient(try decoder.decode(Patient.self, from: body))
            case .carePlan: entity = .carePlan(try decoder.decode(CarePlan.self, from: body))
            case .contact: entity = .contact(try decoder.decode(Contact.self, from: body))
            case .task: entity = .task(try decoder.decode(CareTask.self, from: body))
            case .outcome: entity = .outcome(try decoder.decode(Outcome.self, from: body))
            }
        } catch {
            throw StoreError.database(message: "\(kind) row \(columns.rowID) cannot be decoded: \(error)")
        }
        var metadata = entity.metadata
        metadata.uuid = columns.uuid
        metadata.effectiveDate = Date(timeIntervalSince1970: columns.effectiveDate)
        metadata.deletedDate = columns.deletedDate.map(Date.init(timeIntervalSince1970:))
        metadata.previousVersionUUIDs = columns.previousVersionUUIDs ?? columns.previousVersionUUID.map { [$0] } ?? []
        metadata.nextVersionUUIDs = columns.nextVersionUUID.map { [$0] } ?? []
        metadata.createdDate = columns.createdDate.map(Date.init(timeIntervalSince1970:))
        metadata.updatedDate = columns.updatedDate.map(Date.init(timeIntervalSince1970:))
        if let hash = columns.contentHash, metadata.provenance != nil { metadata.provenance?.contentHash = hash }
        entity.metadata = metadata
        return entity
    }

    /// The body of a version: `entity` in CareModel's JSON encoding (an outcome's dates that SQLite keeps
    /// as seconds columns rounded through those seconds first).
    public static func encode(_ entity: CareEntity) throws -> Data {
        guard case .outcome(var outcome) = entity else { return try CareKitJSON.encode(entity) }
        for position in outcome.values.indices {
            outcome.values[position].createdDate = outcome.values[position].createdDate.map(storeRounded)
            if case .date(let date) = outcome.values[position].value { outcome.values[position].value = .date(storeRounded(date)) }
        }
        if !hasJSONOnlyFields(outcome.metadata), let lastUpdated = outcome.metadata.provenance?.lastUpdated {
            outcome.metadata.provenance?.lastUpdated = storeRounded(lastUpdated)
        }
        return try CareKitJSON.encode(outcome)
    }

    /// `date` as the SQLite store reads it back from its seconds since 1970.
    static func storeRounded(_ date: Date) -> Date {
        Date(timeIntervalSince1970: date.timeIntervalSince1970)
    }

    /// Whether the SQLite store keeps an outcome with `metadata` partly as JSON (its `EntityRowCodec.hasExtras`),
    /// which keeps its provenance's dates as they are.
    static func hasJSONOnlyFields(_ metadata: EntityMetadata) -> Bool {
        metadata.schemaVersion != nil || metadata.groupIdentifier != nil || metadata.tags != nil
            || metadata.remoteID != nil || metadata.userInfo != nil || metadata.asset != nil || metadata.notes != nil
    }
}
