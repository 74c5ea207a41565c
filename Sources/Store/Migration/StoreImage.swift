import CareModel
import Foundation

/// A store's whole content as a neutral stream of records ("store image"), section by section, that
/// neither store's schema shapes: what `caregate store migrate` copies from one store to another and
/// compares afterwards.
///
/// Every section is a list of records of fixed fields (``StoreImageSection/fields``), in an order both
/// stores can give: stored order (the order versions, revisions, resources and entries were written) or
/// a key compared byte by byte. A record holds what the source keeps, derived columns included
/// (an outcome's version number and event start, a version's next effective date), so that the target
/// holds the very same rows and answers the very same reads.
///
/// Not in the image, on purpose: leases and claims (the writer lease, outbox claims and pull partitions
/// of PostgreSQL, the SQLite store's lock and marker files), which belong to running processes, not to
/// the data; and caches (a SQLite reader's decoded tasks).
public enum StoreImage {
    /// The records read or written at a time, bounding the memory a migration of millions of outcomes takes.
    public static let pageSize = 2_000

    /// The records of `section` read or written at a time: fewer where records carry documents (raw
    /// resources, payloads, a consent's signed document and signature image), so that a page stays
    /// within tens of megabytes.
    public static func pageSize(_ section: StoreImageSection) -> Int {
        switch section {
        case .consentDecisions: return 10
        case .sourceResources, .questionnaires, .outbox, .deadLetters: return 200
        default: return pageSize
        }
    }
}

/// One value of a record's field.
public enum StoreImageValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
    case uuid(UUID)
    /// A care entity version, every field of it (uuid, version links, dates, provenance, content).
    case entity(CareEntity)

    public var integer: Int64? { if case .integer(let v) = self { return v } else { return nil } }
    public var real: Double? { if case .real(let v) = self { return v } else { return nil } }
    public var text: String? { if case .text(let v) = self { return v } else { return nil } }
    public var blob: Data? { if case .blob(let v) = self { return v } else { return nil } }
    public var uuid: UUID? { if case .uuid(let v) = self { return v } else { return nil } }
    public var entity: CareEntity? { if case .entity(let v) = self { return v } else { return nil } }
    public var isNull: Bool { self == .null }

    public init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
    public init(_ value: Int?) { self = value.map { .integer(Int64($0)) } ?? .null }
    public init(_ value: Double?) { self = value.map { .real($0) } ?? .null }
    public init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    public init(_ value: Data?) { self = value.map { .blob($0) } ?? .null }
    public init(_ value: UUID?) { self = value.map { .uuid($0) } ?? .null }
    public init(date: Date?) { self = date.map { .real($0.timeIntervalSince1970) } ?? .null }

    /// The type name in a difference message (never the value: it may be patient data).
    var typeName: String {
        switch self {
        case .null: return "null"
        case .integer: return "integer"
        case .real: return "real"
        case .text: return "text"
        case .blob: return "blob"
        case .uuid: return "uuid"
        case .entity: return "entity"
        }
    }
}

/// One record of a section: its fields' values, in the order of ``StoreImageSection/fields``.
public struct StoreImageRecord: Hashable, Sendable {
    public var values: [StoreImageValue]

    public init(_ values: [StoreImageValue]) {
        self.values = values
    }

    public subscript(_ index: Int) -> StoreImageValue { values[index] }
}

/// A field of a section's records.
public struct StoreImageField: Sendable, Equatable {
    /// What the field holds; a `null` is allowed in any field.
    public enum Kind: Sendable, Equatable {
        case integer, real, text, blob, uuid, entity
    }

    public var name: String
    public var kind: Kind

    public init(_ name: String, _ kind: Kind) {
        self.name = name
        self.kind = kind
    }
}

/// A page of a section's records and where the next page starts (`nil` at the end of the section).
public struct StoreImagePage: Sendable {
    public var records: [StoreImageRecord]
    /// Opaque to everyone but the reader that made it.
    public var next: StoreImageCursor?

    public init(records: [StoreImageRecord], next: StoreImageCursor?) {
        self.records = records
        self.next = next
    }
}

/// Where a reader goes on in a section: the last position or key it gave.
public struct StoreImageCursor: Sendable, Hashable {
    public var position: Int64
    public var key: [StoreImageValue]

    public init(position: Int64 = 0, key: [StoreImageValue] = []) {
        self.position = position
        self.key = key
    }
}

extension StoreImagePage {
    /// The page of at most `limit` of `records` (all of a small section, read at once) after `cursor`,
    /// a cursor's position counting the records given before.
    public static func slice(_ records: [StoreImageRecord], after cursor: StoreImageCursor?, limit: Int) -> StoreImagePage {
        let start = min(records.count, Int(clamping: max(0, cursor?.position ?? 0)))
        let end = min(records.count, start + max(1, limit))
        return StoreImagePage(records: Array(records[start..<end]), next: end < records.count ? StoreImageCursor(position: Int64(end)) : nil)
    }
}

/// Reads a store's image, a page at a time (async, so that a PostgreSQL reader can run inside a
/// PostgreSQL writer's transaction without blocking the pool's threads).
public protocol StoreImageReader: Sendable {
    /// A description of the store for messages (a path, or a URL without password).
    var storeDescription: String { get }
    func page(_ section: StoreImageSection, after cursor: StoreImageCursor?, limit: Int) async throws -> StoreImagePage
}

extension StoreImageReader {
    /// Every record of `section`, page by page, handed to `body`.
    public func forEachPage(_ section: StoreImageSection, _ body: ([StoreImageRecord]) async throws -> Void) async throws {
        var cursor: StoreImageCursor?
        repeat {
            let page = try await page(section, after: cursor, limit: StoreImage.pageSize(section))
            if !page.records.isEmpty { try await body(page.records) }
            cursor = page.next
        } while cursor != nil
    }
}
