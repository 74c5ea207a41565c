import CareModel
import FileSafety
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

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
    /// How a store is opened.
    public enum OpenMode: Sendable {
        /// For writing; creates the store (and its schema) when the file does not exist.
        case createIfMissing
        /// For writing; refuses with ``StoreError/storeNotFound(path:)`` when the file does not exist.
        case existingOnly
        /// For reading only: nothing is created, migrated, converted or checkpointed, and a writer in
        /// another process never blocks it (WAL). Works on a store that is read-only on disk.
        case readOnly
    }

    /// Tuning of the SQLite connection.
    public struct Options: Sendable {
        /// The page cache of each connection, in MiB. Large bulk imports into big tables gain from more.
        public var cacheMiB: Int
        /// How many pages the WAL may hold before SQLite copies them into the database file. A bulk import
        /// gains from more: a page changed by many batches is then copied once, not once per batch.
        public var walCheckpointPages: Int
        /// How long a write job waits for another one to finish before failing with
        /// ``StoreError/writerBusy(path:holder:waitedSeconds:)``. SQLite's own locks (a commit, a
        /// checkpoint, a process closing the store) are waited for at least ``shortestLockWait``, even
        /// with 0 here: they last well under a second and say nothing about another job.
        public var busyTimeout: TimeInterval
        /// The most reader connections (reads at once), each with its own page cache: GRDB's default, 5,
        /// unless a server needs more (``PooledAppStore``).
        public var readers: Int

        public static let defaultReaders = 5

        public init(cacheMiB: Int = 64, walCheckpointPages: Int = 1000, busyTimeout: TimeInterval = 30, readers: Int = defaultReaders) {
            self.cacheMiB = cacheMiB
            self.walCheckpointPages = walCheckpointPages
            self.busyTimeout = busyTimeout
            self.readers = readers
        }
    }

    /// How long any connection waits at least for SQLite's own brief locks. The writer lease, not SQLite,
    /// keeps one job out while another writes, so a job that does not wait for others
    /// (`--busy-timeout 0`) must still not fail on a checkpoint or on a process closing the store.
    static let shortestLockWait: TimeInterval = 2

    /// How long a connection waits for SQLite's locks, given the job's busy timeout.
    static func lockWait(_ busyTimeout: TimeInterval) -> TimeInterval {
        max(shortestLockWait, busyTimeout)
    }

    /// The file path, or `:memory:`.
    public let path: String
    /// How many reads run at once, each on a reader connection of its own: ``Options/readers`` for a
    /// store opened for writing; 1 for one read-only connection or a store in memory, which serve one
    /// read or write at a time.
    public var readerCount: Int {
        (writer as? DatabasePool)?.configuration.maximumReaderCount ?? 1
    }
    let writer: any DatabaseWriter
    let busyTimeout: TimeInterval
    /// Decoded task versions, shared by batches and event queries.
    let taskCache = TaskVersionCache()
    /// Current patient, care plan and outcome versions as day views decoded them (``DecodedVersionCache``).
    let patientVersions = DecodedVersionCache<Patient>()
    let carePlanVersions = DecodedVersionCache<CarePlan>()
    let outcomeVersions = DecodedVersionCache<Outcome>(limit: 16_384)
    /// One write job at a time (see ``withWriterLease(_:_:)``); nil for a store opened read-only, which
    /// writes nothing and so has nothing to serialize.
    private let lease: WriterLease?
    /// The app API's audit trail, in a file of its own beside the store.
    let auditTrail: AuditTrailFile

    /// Opens (or creates) the store at `path`. Opened for writing, its schema is brought up to date; a
    /// file that exists must be a CareGate store, which is checked before anything in it changes.
    public init(path: String, mode: OpenMode = .createIfMissing, options: Options = Options()) throws {
        self.path = path
        busyTimeout = options.busyTimeout
        lease = mode == .readOnly ? nil : WriterLease(storePath: path)
        auditTrail = AuditTrailFile(storePath: path, readOnly: mode == .readOnly, busyTimeout: options.busyTimeout)
        if FileManager.default.fileExists(atPath: path) {
            // The read-only connection that checked the file serves a reader as it is.
            let checked = try Self.checkIsStore(path: path, options: options)
            if mode == .readOnly {
                writer = checked
                return
            }
            try? checked.close()
        } else if mode != .createIfMissing {
            throw StoreError.storeNotFound(path: path)
        } else {
            try Self.checkCanCreate(path: path)
            try Self.create(path: path, options: options)
        }
        do {
            writer = try DatabasePool(path: path, configuration: Self.configuration(options))
        } catch {
            throw Self.openingError(error, path: path, busyTimeout: options.busyTimeout)
        }
        try migrate()
    }

    private init(path: String, writer: any DatabaseWriter, busyTimeout: TimeInterval) throws {
        self.path = path
        self.writer = writer
        // Jobs of one process still take turns at the lease: one waits for another as in a file store.
        self.busyTimeout = busyTimeout
        lease = WriterLease(storePath: path)
        auditTrail = AuditTrailFile(storePath: path, readOnly: false, busyTimeout: busyTimeout)
        try migrate()
    }

    /// A store held in memory only, for tests and dry runs.
    public static func inMemory(options: Options = Options()) throws -> SQLiteStore {
        try SQLiteStore(path: ":memory:", writer: DatabaseQueue(configuration: configuration(options)), busyTimeout: options.busyTimeout)
    }

    private static func configuration(_ options: Options, readOnly: Bool = false) -> Configuration {
        var configuration = Configuration()
        configuration.label = "CareGate store"
        configuration.readonly = readOnly
        // A writer waits this long for another process's write; readers of a WAL store never wait on
        // one (the pool's readers have GRDB's own timeout for SQLite's rare recovery locks).
        configuration.busyMode = .timeout(lockWait(options.busyTimeout))
        configuration.maximumReaderCount = max(1, options.readers)
        let cacheKiB = max(1, options.cacheMiB) * 1024
        let checkpointPages = max(1, options.walCheckpointPages)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -\(cacheKiB)")
            guard !readOnly else { return }
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(checkpointPages)")
            // In WAL mode NORMAL never corrupts the file and loses nothing committed when the process dies;
            // only a power cut can drop the last commits. It spares one fsync per batch.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        return configuration
    }

    /// One read-only connection. A WAL store whose folder cannot take the shared-memory file (a store
    /// that is read-only on disk, with no writer left) is opened as immutable, as nothing can change it.
    private static func openReadOnly(path: String, options: Options) throws -> DatabaseQueue {
        // Opening is lazy: a first read is what finds out whether SQLite can use the file.
        func opened(_ name: String) throws -> DatabaseQueue {
            let queue = try DatabaseQueue(path: name, configuration: configuration(options, readOnly: true))
            try queue.read { db in _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
            return queue
        }
        do {
            return try opened(path)
        } catch let error as DatabaseError where [.SQLITE_CANTOPEN, .SQLITE_READONLY].contains(error.resultCode)
            && !FileManager.default.isWritableFile(atPath: folder(of: path)) {
            return try opened("file:" + (URL(fileURLWithPath: path).path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path) + "?immutable=1")
        }
    }

    /// Refuses a file that is not a CareGate store (empty, another program's SQLite file, not SQLite,
    /// unreadable) before any connection that could change it is opened. Reading the header changes
    /// nothing: the check connection, returned, is read-only and does not touch the journal mode.
    private static func checkIsStore(path: String, options: Options) throws -> DatabaseQueue {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw StoreError.notAStore(path: path, reason: "it is a folder")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw StoreError.notAStore(path: path, reason: "it cannot be read (permission denied)")
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        if size == 0 {
            throw StoreError.notAStore(path: path, reason: "the file is empty; CareGate does not write into a file it did not create (remove it, or pass another --store)")
        }
        do {
            let check = try openReadOnly(path: path, options: options)
            try check.read { db in
                let applicationID = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
                if applicationID == StoreSchema.applicationID { return }
                if applicationID != 0 {
                    throw StoreError.notAStore(path: path, reason: "it belongs to another program (SQLite application id \(String(format: "0x%08X", UInt32(bitPattern: applicationID))))")
                }
                let knowsFirst = try db.tableExists("grdb_migrations")
                    && (try Int.fetchOne(db, sql: "SELECT count(*) FROM grdb_migrations WHERE identifier = ?", arguments: [StoreSchema.firstMigration]) ?? 0) > 0
                guard knowsFirst else {
                    throw StoreError.notAStore(path: path, reason: try hasUserTables(db)
                        ? "it is an SQLite database without CareGate's tables" : "it is an SQLite database with no tables")
                }
            }
            return check
        } catch {
            throw openingError(error, path: path, busyTimeout: options.busyTimeout)
        }
    }

    /// Makes a new store at `path` all at once: built and migrated under a name of its own beside it,
    /// then linked into place (which fails, harmlessly, if another process made it meanwhile). A process
    /// killed while making it leaves no half-made store at `path` that the next run would refuse, only a
    /// hidden `.creating` file. Before it is linked, everything written is copied from the WAL into the
    /// file (a full disk fails here, not in a later command) and the file is checked whole.
    private static func create(path: String, options: Options) throws {
        let url = URL(fileURLWithPath: path)
        let building = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).creating-\(UUID().uuidString)").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: building + suffix) }
        }
        do {
            // Made 0600 before SQLite opens it: SQLite keeps the mode of the file it finds, and gives the
            // WAL and shared-memory files that mode too (its own default, 0644 less the umask, lets every
            // user of the machine read patients' data).
            do throws(PrivateFileError) {
                try PrivateFiles.makeEmpty(building)
            } catch {
                throw StoreError.cannotCreate(path: path, reason: error.reason)
            }
            let pool = try DatabasePool(path: building, configuration: configuration(options))
            try StoreSchema.migrator.migrate(pool)
            try pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
            try pool.close()
            let check = try DatabaseQueue(path: building, configuration: configuration(options, readOnly: true))
            let verdict = try check.read { db in
                (try String.fetchOne(db, sql: "PRAGMA quick_check"), try Int32.fetchOne(db, sql: "PRAGMA application_id"))
            }
            try check.close()
            guard verdict.0 == "ok", verdict.1 == StoreSchema.applicationID else {
                throw StoreError.cannotCreate(path: path, reason: "the new store did not read back whole (\(verdict.0 ?? "no answer")); is the disk full?")
            }
        } catch {
            throw openingError(error, path: path, busyTimeout: options.busyTimeout)
        }
        if Glibc.link(building, path) == 0 || errno == EEXIST { return }
        // A file system without hard links: a rename, atomic too (though a concurrent maker's store
        // could then be replaced by this empty one before either wrote anything).
        guard [EPERM, ENOTSUP, EOPNOTSUPP, EMLINK].contains(errno), rename(building, path) == 0 else {
            throw StoreError.cannotCreate(path: path, reason: String(cString: strerror(errno)))
        }
    }

    /// Says plainly why a new store cannot be made at `path`.
    private static func checkCanCreate(path: String) throws {
        guard path != ":memory:" else { return }
        let folder = folder(of: path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) else {
            throw StoreError.cannotCreate(path: path, reason: "the folder \(folder) does not exist")
        }
        guard isDirectory.boolValue else {
            throw StoreError.cannotCreate(path: path, reason: "\(folder) is not a folder")
        }
        guard FileManager.default.isWritableFile(atPath: folder) else {
            throw StoreError.cannotCreate(path: path, reason: "the folder \(folder) is not writable (permission denied)")
        }
    }

    /// The folder of `path` as the user wrote it (`.` for a bare file name).
    private static func folder(of path: String) -> String {
        let parent = (path as NSString).deletingLastPathComponent
        return parent.isEmpty ? "." : parent
    }

    private func migrate() throws {
        let migrator = StoreSchema.migrator
        do {
            // Read first: a store already up to date (the usual case) is opened without a write
            // transaction, so that opening never waits for another process's write job.
            let upToDate = try writer.read { db in
                let unknown = try migrator.appliedIdentifiers(db).subtracting(migrator.migrations)
                if !unknown.isEmpty {
                    throw StoreError.newerSchema(path: path, unknownMigrations: unknown.sorted())
                }
                return try migrator.hasCompletedMigrations(db)
            }
            if upToDate { return }
            try migrator.migrate(writer)
        } catch {
            throw Self.openingError(error, path: path, busyTimeout: busyTimeout)
        }
    }

    private static func hasUserTables(_ db: Database) throws -> Bool {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") ?? 0 > 0
    }

    private static func openingError(_ error: any Error, path: String, busyTimeout: TimeInterval) -> any Error {
        if let storeError = error as? StoreError { return storeError }
        if let databaseError = error as? DatabaseError {
            switch databaseError.resultCode {
            case .SQLITE_NOTADB:
                return StoreError.notAStore(path: path, reason: databaseError.message ?? "not an SQLite database")
            case .SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_PERM where FileManager.default.fileExists(atPath: path)
                && !(FileManager.default.isWritableFile(atPath: path) && FileManager.default.isWritableFile(atPath: folder(of: path))):
                let what = FileManager.default.isWritableFile(atPath: path) ? "its folder \(folder(of: path)) is read-only" : "the file is read-only"
                return StoreError.cannotWrite(path: path, reason: "\(what) (commands that only read it, such as caregate store stats, work)")
            case .SQLITE_CANTOPEN:
                return StoreError.notAStore(path: path, reason: "cannot open the file (\(databaseError.message ?? "no reason given"))")
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                return StoreError.busy(path: path, waitedSeconds: lockWait(busyTimeout))
            default:
                return storeFailure(databaseError, path: path) ?? StoreError.database(message: databaseError.message ?? "\(databaseError)")
            }
        }
        return error
    }

    /// Closes the store's connections and its audit trail's now, rather than on whichever thread lets go
    /// of the last reference: closing takes SQLite's locks (the last writable connection to a WAL file
    /// checkpoints it), which a command opening the file right after this one returns would otherwise
    /// meet as "database is locked". The store must not be used afterwards.
    public func close() {
        auditTrail.close()
        try? writer.close()
    }

    public func withWriterLease<T>(_ job: String, _ body: () throws -> T) throws -> T {
        guard let lease else { return try body() }
        return try lease.hold(as: job, timeout: busyTimeout, storePath: path, body)
    }

    public func withAppendLease<T>(_ job: String, _ body: () throws -> T) throws -> T {
        guard let lease else { return try body() }
        return try lease.holdForAppend(as: job, timeout: busyTimeout, storePath: path, body)
    }

    public func appendsAreWaiting() -> Bool {
        lease?.appendsAreWaiting() ?? false
    }

    public func yieldToAppends() throws {
        guard let lease else { return }
        try lease.yieldToAppends(timeout: busyTimeout, storePath: path)
    }

    /// Runs `body` in one write transaction: every change it makes is committed together, or none is.
    func writeTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try writer.write(body)
        } catch {
            throw mapped(error)
        }
    }

    /// Runs `body` on a consistent snapshot of the last committed state.
    func readSnapshot<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try writer.read(body)
        } catch {
            throw mapped(error)
        }
    }

    func mapped(_ error: any Error) -> any Error {
        if let databaseError = error as? DatabaseError {
            if [.SQLITE_BUSY, .SQLITE_LOCKED].contains(databaseError.resultCode) {
                return StoreError.busy(path: path, waitedSeconds: Self.lockWait(busyTimeout))
            }
            if let failure = Self.storeFailure(databaseError, path: path) { return failure }
        }
        return Self.mapped(error)
    }

    /// The store itself failing (full disk, I/O error, a damaged or read-only file), said so that the
    /// user knows what to do; nil for an error a write's content explains.
    static func storeFailure(_ error: DatabaseError, path: String) -> StoreError? {
        switch error.resultCode {
        case .SQLITE_FULL:
            return StoreError.failed(path: path, reason: "the disk is full (free space, then run again)")
        case .SQLITE_IOERR, .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_NOMEM:
            // SQLite reports a write that found no room as an I/O error when it was the WAL index's.
            if freeBytes(near: path) == 0 { return StoreError.failed(path: path, reason: "the disk is full (free space, then run again)") }
            return StoreError.failed(path: path, reason: error.message ?? "SQLite error \(error.resultCode.rawValue)")
        case .SQLITE_CORRUPT:
            return StoreError.failed(path: path, reason: "the file is damaged (\(error.message ?? "database disk image is malformed")); restore it from a backup, or see what is wrong with caregate store stats --check")
        default:
            return nil
        }
    }

    /// The bytes free to this user on the file system of `path`'s folder, or nil when it cannot be told.
    static func freeBytes(near path: String) -> UInt64? {
        var info = statvfs()
        guard statvfs(folder(of: path), &info) == 0 else { return nil }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }

    /// A database error as the user reads it: SQLite's message and result code, not the statement (which
    /// says nothing a user can act on, and could quote a bound value).
    static func mapped(_ error: any Error) -> any Error {
        if let databaseError = error as? DatabaseError {
            return StoreError.database(message: "\(databaseError.message ?? "SQLite error") (SQLite result code \(databaseError.extendedResultCode.rawValue))")
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
