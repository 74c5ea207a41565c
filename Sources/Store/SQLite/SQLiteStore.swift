import Foundation
import GRDB

/// The embedded staging store: every version of every care entity, the raw resources they came from,
/// sync checkpoints, the export outbox and dead letters, in one SQLite file (WAL mode) through GRDB.
///
/// Each call to ``apply(_:)`` is one transaction: a batch is stored whole or not at all, even when the
/// process is killed in the middle of it. Reads see the last committed batch.
///
/// ```swift
/// let store = try SQLiteStore(path: "caregate.sqlite")
/// var batch = StoreBatch()
/// batch.add(patient)
/// try store.apply(batch)
/// ```
///
/// ## Topics
///
/// ### Opening a store
///
/// - ``init(path:mode:options:)``
/// - ``inMemory(options:)``
/// - ``OpenMode``
/// - ``Options``
///
/// ### Checking the file
///
/// - ``integrityCheck()``
public final class SQLiteStore: Sendable {
    /// Whether opening may create the file.
    public enum OpenMode: Sendable {
        /// Create the store (and its schema) when the file does not exist.
        case createIfMissing
        /// Refuse with ``StoreError/storeNotFound(path:)`` when the file does not exist.
        case existingOnly
    }

    /// Tuning of the SQLite connection.
    public struct Options: Sendable {
        /// The page cache of each connection, in MiB. Large bulk imports into big tables gain from more.
        public var cacheMiB: Int
        /// How many pages the WAL may hold before SQLite copies them into the database file. A bulk import
        /// gains from more: a page changed by many batches is then copied once, not once per batch.
        public var walCheckpointPages: Int
        public init(cacheMiB: Int = 64, walCheckpointPages: Int = 1000) {
            self.cacheMiB = cacheMiB
            self.walCheckpointPages = walCheckpointPages
        }
    }

    /// The file path, or `:memory:`.
    public let path: String
    let writer: any DatabaseWriter
    /// Decoded task versions, shared by batches and event queries.
    let taskCache = TaskVersionCache()

    /// Opens (or creates) the store at `path` and brings its schema up to date.
    public init(path: String, mode: OpenMode = .createIfMissing, options: Options = Options()) throws {
        self.path = path
        if mode == .existingOnly, !FileManager.default.fileExists(atPath: path) {
            throw StoreError.storeNotFound(path: path)
        }
        do {
            writer = try DatabasePool(path: path, configuration: Self.configuration(options))
        } catch {
            throw Self.openingError(error, path: path)
        }
        try migrate()
    }

    private init(path: String, writer: any DatabaseWriter) throws {
        self.path = path
        self.writer = writer
        try migrate()
    }

    /// A store held in memory only, for tests and dry runs.
    public static func inMemory(options: Options = Options()) throws -> SQLiteStore {
        try SQLiteStore(path: ":memory:", writer: DatabaseQueue(configuration: configuration(options)))
    }

    private static func configuration(_ options: Options) -> Configuration {
        var configuration = Configuration()
        configuration.label = "CareGate store"
        let cacheKiB = max(1, options.cacheMiB) * 1024
        let checkpointPages = max(1, options.walCheckpointPages)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -\(cacheKiB)")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(checkpointPages)")
            // In WAL mode NORMAL never corrupts the file and loses nothing committed when the process dies;
            // only a power cut can drop the last commits. It spares one fsync per batch.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        return configuration
    }

    private func migrate() throws {
        let migrator = StoreSchema.migrator
        do {
            try writer.write { db in
                let hasMigrations = try db.tableExists("grdb_migrations")
                if !hasMigrations, try Self.hasUserTables(db) {
                    throw StoreError.notAStore(path: path, reason: "it is an SQLite database without CareGate's tables")
                }
                let unknown = try migrator.appliedIdentifiers(db).subtracting(migrator.migrations)
                if !unknown.isEmpty {
                    throw StoreError.newerSchema(path: path, unknownMigrations: unknown.sorted())
                }
            }
            try migrator.migrate(writer)
        } catch {
            throw Self.openingError(error, path: path)
        }
    }

    private static func hasUserTables(_ db: Database) throws -> Bool {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") ?? 0 > 0
    }

    private static func openingError(_ error: any Error, path: String) -> any Error {
        if let storeError = error as? StoreError { return storeError }
        if let databaseError = error as? DatabaseError {
            switch databaseError.resultCode {
            case .SQLITE_NOTADB, .SQLITE_CORRUPT:
                return StoreError.notAStore(path: path, reason: databaseError.message ?? "not an SQLite database")
            case .SQLITE_CANTOPEN:
                return StoreError.notAStore(path: path, reason: "cannot open the file (\(databaseError.message ?? "no reason given"))")
            default:
                return StoreError.database(message: databaseError.message ?? "\(databaseError)")
            }
        }
        return error
    }

    /// Runs `body` in one write transaction: every change it makes is committed together, or none is.
    func writeTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try writer.write(body)
        } catch {
            throw Self.mapped(error)
        }
    }

    /// Runs `body` on a consistent snapshot of the last committed state.
    func readSnapshot<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try writer.read(body)
        } catch {
            throw Self.mapped(error)
        }
    }

    static func mapped(_ error: any Error) -> any Error {
        if let databaseError = error as? DatabaseError {
            return StoreError.database(message: "\(databaseError.message ?? "SQLite error \(databaseError.resultCode.rawValue)") (\(databaseError.sql ?? "no SQL"))")
        }
        return error
    }

    /// SQLite's own consistency check of the file; an empty array means the file is sound.
    public func integrityCheck() throws -> [String] {
        try readSnapshot { db in
            let rows = try String.fetchAll(db, sql: "PRAGMA integrity_check")
            return rows == ["ok"] ? [] : rows
        }
    }
}
