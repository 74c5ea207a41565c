import Foundation

/// Writes a store image into a store, a page of one section at a time, sections in
/// ``StoreImageSection`` order.
public protocol StoreImageWriter: AnyObject {
    func write(_ section: StoreImageSection, _ records: [StoreImageRecord]) async throws
}

/// A store a migration fills: empty before, and holding the whole image after, or left as it was.
public protocol StoreImageTarget: Sendable {
    var storeDescription: String { get }
    /// Runs `copy` with a writer into the target; what it wrote is kept only when it returns (a SQLite
    /// target is made under a temporary name and renamed; a PostgreSQL target is written in one
    /// transaction). Throws ``StoreMigrationError/targetNotEmpty(store:holds:)`` before writing anything
    /// when the target holds CareGate data.
    func fill(_ copy: @escaping @Sendable (any StoreImageWriter) async throws -> Void) async throws
}

/// Why a migration stopped.
public enum StoreMigrationError: Error, Equatable, CustomStringConvertible {
    /// The target already holds data (or, for SQLite, a file is already at its path).
    case targetNotEmpty(store: String, holds: String)
    /// Source and target are one store.
    case sameStore(String)
    /// The target, read back, differs from the source.
    case verificationFailed(String)
    /// A record the target cannot hold as it is (a revision naming a version not copied, say).
    case unwritable(section: String, reason: String)

    public var description: String {
        switch self {
        case .targetNotEmpty(let store, let holds):
            return "the target store \(store) is not empty (it holds \(holds)): migrate only into a new SQLite file or an empty PostgreSQL database"
        case .sameStore(let store):
            return "the source and the target are the same store (\(store))"
        case .verificationFailed(let difference):
            return "the target differs from the source after the copy: \(difference)"
        case .unwritable(let section, let reason):
            return "cannot write the \(section) into the target: \(reason)"
        }
    }
}

/// Copies a store's image into an empty store and checks the copy, section by section.
///
/// ```swift
/// let counts = try await StoreMigration.copy(from: SQLiteImageReader(store: source), to: target) { print($0, $1) }
/// ```
public enum StoreMigration {
    /// The records between two reports of a section's progress.
    public static let progressStep = 100_000

    /// Copies every section of `source` into `target` (in one transaction or under a temporary name);
    /// returns the records copied per section. `progress` hears each section's count every
    /// ``progressStep`` records (`done` false) and at its end (`done` true).
    @discardableResult
    public static func copy(
        from source: any StoreImageReader, to target: any StoreImageTarget,
        progress: @escaping @Sendable (StoreImageSection, Int, _ done: Bool) -> Void = { _, _, _ in }
    ) async throws -> [(section: StoreImageSection, records: Int)] {
        let counts = Counts()
        try await target.fill { writer in
            for section in StoreImageSection.allCases {
                var copied = 0
                try await source.forEachPage(section) { records in
                    try await writer.write(section, records)
                    copied += records.count
                    if copied / progressStep > (copied - records.count) / progressStep { progress(section, copied, false) }
                }
                progress(section, copied, true)
                counts.append(section, copied)
            }
        }
        return counts.all
    }

    /// Reads `target` back and compares it with `source`, record by record; throws
    /// ``StoreMigrationError/verificationFailed(_:)`` naming the first difference. Returns the records
    /// compared per section.
    @discardableResult
    public static func verify(
        _ source: any StoreImageReader, _ target: any StoreImageReader,
        progress: (StoreImageSection, Int) -> Void = { _, _ in }
    ) async throws -> [(section: StoreImageSection, records: Int)] {
        var comparison = StoreImageComparison()
        do {
            try await comparison.compare(source, target, progress: progress)
        } catch let difference as StoreImageComparison.Difference {
            throw StoreMigrationError.verificationFailed(difference.description)
        }
        return comparison.counts
    }
}

/// The counts of a copy, filled from the copy's closure.
private final class Counts: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [(section: StoreImageSection, records: Int)] = []

    func append(_ section: StoreImageSection, _ records: Int) {
        lock.withLock { counts.append((section, records)) }
    }

    var all: [(section: StoreImageSection, records: Int)] { lock.withLock { counts } }
}
