import Foundation

/// The last import that measured its coverage (`caregate import --coverage`): what it read, what came of
/// it, and the element paths present in its input that no mapping reads.
///
/// Kept one at a time (the next replaces it) and bounded: at most ``maximumPaths`` paths, the most
/// frequent first, the rest counted in ``omittedPaths``. Paths and counts only (`Observation.method`):
/// never a value. Shown on the operator page.
public struct ImportCoverageRecord: Sendable, Equatable, Codable {
    /// The most paths kept.
    public static let maximumPaths = 2_000
    /// The most characters of one path kept (longer ones are cut).
    public static let maximumPathCharacters = 256

    public var recordedDate: Date
    /// Resources read.
    public var resourcesRead: Int
    /// Per outcome (`created`, `updated`, `unchanged`, `deleted`, `skipped`, `failed`), resources.
    public var counts: [String: Int]
    public var seconds: Double
    /// Per resource type, element path -> how many times it was present and unread.
    public var coverage: [String: [String: Int]]
    /// Paths left out past ``maximumPaths``.
    public var omittedPaths: Int

    /// A record of `coverage`, bounded: past ``maximumPaths`` the least frequent paths are left out.
    public init(recordedDate: Date = Date(), resourcesRead: Int, counts: [String: Int], seconds: Double, coverage: [String: [String: Int]]) {
        self.recordedDate = recordedDate
        self.resourcesRead = resourcesRead
        self.counts = counts
        self.seconds = seconds
        var all: [(type: String, path: String, count: Int)] = []
        for (type, paths) in coverage {
            for (path, count) in paths { all.append((String(type.prefix(64)), String(path.prefix(Self.maximumPathCharacters)), count)) }
        }
        all.sort { ($1.count, $0.type, $0.path) < ($0.count, $1.type, $1.path) }
        var kept: [String: [String: Int]] = [:]
        for item in all.prefix(Self.maximumPaths) { kept[item.type, default: [:]][item.path, default: 0] += item.count }
        self.coverage = kept
        omittedPaths = max(0, all.count - Self.maximumPaths)
    }

    /// Paths kept, over every type.
    public var pathCount: Int { coverage.values.reduce(0) { $0 + $1.count } }

    /// The record as every store keeps it: JSON, keys sorted, dates in seconds since 1970.
    public static func storedJSON(_ record: ImportCoverageRecord) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.dateEncodingStrategy = .secondsSince1970
        return try encoder.encode(record)
    }

    /// A record read back from ``storedJSON(_:)``; nil for one that does not decode (written by a newer
    /// CareGate, or damaged): the page then shows none.
    public static func fromStoredJSON(_ data: Data) -> ImportCoverageRecord? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try? decoder.decode(ImportCoverageRecord.self, from: data)
    }
}

/// The last import's coverage (``ImportCoverageRecord``), kept by the store: one record, replaced by the next.
///
/// A store that keeps it conforms (``SQLiteStore`` does); reach it from any store with ``Store/importCoverage``.
public protocol ImportCoverageStore: AnyObject, Sendable {
    /// Keeps `record` in place of the one kept before.
    func recordImportCoverage(_ record: ImportCoverageRecord) throws
    /// The record kept, if an import with coverage ran.
    func lastImportCoverage() throws -> ImportCoverageRecord?
}

extension Store {
    /// This store's last import coverage, when it keeps one.
    public var importCoverage: (any ImportCoverageStore)? { self as? any ImportCoverageStore }
}
