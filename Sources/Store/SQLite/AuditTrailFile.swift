import FileSafety
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// The app API's audit trail, in an SQLite file of its own beside the store: `<store>-audit.sqlite` (WAL,
/// made mode 0600: it names patients and token subjects).
///
/// Every answer of the app API waits for its entry's commit. SQLite has one writer per file, so with the
/// trail inside the store that commit queued behind `caregate sync`'s import transactions (seconds while
/// a batch commits); in a file of its own, the server's audit commits wait for nothing but each other.
///
/// Stores that an older CareGate served hold their earlier entries in the store's `audit` table. They
/// stay there (moving them would be a write to the store, which waits for the sync) and are read beside
/// this file's: the file's ids continue after the largest id of that table when the file is made, so
/// ids stay unique and ordered across both (see ``SQLiteStore/auditEntries(patientID:limit:)``).
///
/// Opened on first use, not with the store: commands that never touch the trail make no file.
final class AuditTrailFile: @unchecked Sendable {
    /// The trail's file beside the store at `storePath`.
    static func path(ofStore storePath: String) -> String { storePath + "-audit.sqlite" }

    /// The file, or `:memory:` for a store in memory.
    let path: String
    private let readOnly: Bool
    private let busyTimeout: TimeInterval
    private let lock = NSLock()
    /// Guarded by `lock`: the open database, once opened.
    private var database: (any DatabaseWriter)?
    /// Guarded by `lock`: how long entries are kept, in days (``AuditRetention``).
    private var retention = AuditRetention.defaultDays

    /// How long entries are kept, in days.
    var retentionDays: Int {
        get { lock.withLock { retention } }
        set { lock.withLock { retention = newValue } }
    }

    init(storePath: String, readOnly: Bool, busyTimeout: TimeInterval) {
        path = storePath == ":memory:" ? storePath : Self.path(ofStore: storePath)
        self.storePath = storePath
        self.readOnly = readOnly
        self.busyTimeout = busyTimeout
    }

    /// The store this trail is beside.
    private let storePath: String

    /// This trail for writing: itself, or, when it was opened for reading only (with its store), the same
    /// file opened for writing (made when missing). What the command line's reads audit through.
    func forWriting() -> AuditTrailFile {
        readOnly ? AuditTrailFile(storePath: storePath, readOnly: false, busyTimeout: busyTimeout) : self
    }

    /// The trail for writing, opened (and made, its ids continuing after `lastStoreID()`) on first use.
    func writer(lastStoreID: () throws -> Int64) throws -> any DatabaseWriter {
        try lock.withLock {
            if let database { return database }
            guard !readOnly else {
                throw StoreError.cannotWrite(path: path, reason: "the store was opened for reading only")
            }
            let opened = try open(lastStoreID: lastStoreID)
            database = opened
            return opened
        }
    }

    /// The trail for reading; nil when it has no file yet (no server wrote one). A store opened for
    /// writing opens it as ``writer(lastStoreID:)`` does.
    func reader(lastStoreID: () throws -> Int64) throws -> (any DatabaseReader)? {
        let exists = path == ":memory:" || FileManager.default.fileExists(atPath: path)
        guard readOnly else { return exists ? try writer(lastStoreID: lastStoreID) : nil }
        return try lock.withLock {
            if let database { return database }
            guard exists else { return nil }
            do {
                let queue = try DatabaseQueue(path: path, configuration: Self.configuration(busyTimeout: busyTimeout, readOnly: true))
                database = queue
                return queue
            } catch {
                throw failure(error)
            }
        }
    }

    /// Closes the trail's file now, if it was opened; a later use opens it again.
    func close() {
        lock.withLock {
            try? database?.close()
            database = nil
        }
    }

    /// Appends `entries` in one transaction (an entry with an id completes that entry: its date, status and
    /// detail); returns their ids.
    func record(_ entries: [AuditEntry], lastStoreID: () throws -> Int64) throws -> [Int64] {
        let database = try writer(lastStoreID: lastStoreID)
        do {
            return try database.write { db in
                let insert = try db.cachedStatement(
                    sql: "INSERT INTO audit (date, subject, patientID, action, status, detail, clientAddress) VALUES (?, ?, ?, ?, ?, ?, ?)")
                let complete = try db.cachedStatement(sql: "UPDATE audit SET date = ?, status = ?, detail = ? WHERE id = ?")
                var ids: [Int64] = []
                for entry in entries {
                    if let id = entry.id {
                        try complete.execute(arguments: [entry.date.timeIntervalSince1970, entry.status, entry.detail, id])
                        ids.append(id)
                    } else {
                        try insert.execute(arguments: [
                            entry.date.timeIntervalSince1970, entry.subject, entry.patientID, entry.action, entry.status, entry.detail,
                            entry.clientAddress.map { String($0.prefix(Self.maximumAddressLength)) },
                        ])
                        ids.append(db.lastInsertedRowID)
                    }
                }
                return ids
            }
        } catch {
            throw failure(error)
        }
    }

    /// The latest `limit` entries of the file, newest first (of one patient when `patientID` is given).
    func entries(patientID: String?, limit: Int, lastStoreID: () throws -> Int64) throws -> [AuditEntry] {
        guard let database = try reader(lastStoreID: lastStoreID) else { return [] }
        do {
            return try database.read { db in try Self.entries(patientID: patientID, limit: limit, db) }
        } catch {
            throw failure(error)
        }
    }

    /// The latest `limit` entries of an `audit` table (this file's, or an older store's), newest first.
    static func entries(patientID: String?, limit: Int, _ db: Database) throws -> [AuditEntry] {
        var condition = ""
        var arguments = StatementArguments()
        if let patientID {
            condition = "WHERE patientID = ?"
            arguments += [patientID]
        }
        arguments += [max(0, limit)]
        return try Row.fetchAll(db, sql: "SELECT * FROM audit \(condition) ORDER BY id DESC LIMIT ?", arguments: arguments).map { row in
            AuditEntry(
                id: row["id"], date: Date(timeIntervalSince1970: row["date"] ?? 0), subject: row["subject"],
                patientID: row["patientID"], action: row["action"] ?? "", status: row["status"] ?? 0, detail: row["detail"],
                clientAddress: row.hasColumn("clientAddress") ? row["clientAddress"] : nil)
        }
    }

    private func open(lastStoreID: () throws -> Int64) throws -> any DatabaseWriter {
        do {
            let database: any DatabaseWriter
            if path == ":memory:" {
                database = try DatabaseQueue(configuration: Self.configuration(busyTimeout: busyTimeout, readOnly: false))
            } else {
                try Self.makeOwnerOnly(path)
                database = try DatabasePool(path: path, configuration: Self.configuration(busyTimeout: busyTimeout, readOnly: false))
            }
            let migrator = Self.migrator(lastStoreID: lastStoreID)
            // Read first: a trail already made (the usual case) opens without waiting for another writer.
            if try database.read({ db in try migrator.hasCompletedMigrations(db) }) { return database }
            do {
                try migrator.migrate(database)
            } catch {
                // Another server on the same store made it meanwhile.
                guard try database.read({ db in try migrator.hasCompletedMigrations(db) }) else { throw error }
            }
            return database
        } catch {
            throw failure(error)
        }
    }

    /// The trail's schema: one table, its ids continuing after the store's own `audit` table's.
    private static func migrator(lastStoreID: () throws -> Int64) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        // An error here is the store's own (read before the trail is changed): it goes up unchanged.
        let continuing = Result { try lastStoreID() }
        migrator.registerMigration("v1 audit trail") { db in
            try db.execute(sql: """
                CREATE TABLE audit (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    date DOUBLE NOT NULL,
                    subject TEXT,
                    patientID TEXT,
                    action TEXT NOT NULL,
                    status INTEGER NOT NULL,
                    detail TEXT
                );
                CREATE INDEX audit_by_patient ON audit (patientID, date);
                """)
            let last = try continuing.get()
            if last > 0 {
                try db.execute(sql: "INSERT INTO sqlite_sequence (name, seq) VALUES ('audit', ?)", arguments: [last])
            }
        }
        // Refusals without a valid token, counted per minute, route, status and reason (issue 41, item 8);
        // entries by date, for pruning past the retention.
        migrator.registerMigration("v2 refusal counts and retention") { db in
            try db.execute(sql: """
                CREATE TABLE audit_refusals (
                    minute INTEGER NOT NULL,
                    action TEXT NOT NULL,
                    status INTEGER NOT NULL,
                    reason TEXT NOT NULL,
                    count INTEGER NOT NULL,
                    PRIMARY KEY (minute, action, status, reason)
                ) WITHOUT ROWID;
                CREATE INDEX audit_by_date ON audit (date);
                """)
        }
        // The client's network address of an app API request (issue 48: BALP's agent.network). Older
        // builds write on without it (the column is nullable); their entries have none.
        migrator.registerMigration("v3 client network address") { db in
            try db.execute(sql: "ALTER TABLE audit ADD COLUMN clientAddress TEXT")
        }
        return migrator
    }

    /// The longest client address kept (an IPv6 address with a zone fits).
    static let maximumAddressLength = 64

    /// Makes an empty file at `path` readable and writable by its owner only, unless one is there. SQLite
    /// gives the WAL and shared-memory files the database file's mode.
    private static func makeOwnerOnly(_ path: String) throws {
        do throws(PrivateFileError) {
            try PrivateFiles.makeEmpty(path)
        } catch {
            throw StoreError.cannotWrite(path: path, reason: error.reason)
        }
    }

    private static func configuration(busyTimeout: TimeInterval, readOnly: Bool) -> Configuration {
        var configuration = Configuration()
        configuration.label = "CareGate audit trail"
        configuration.readonly = readOnly
        // Another server on the same store writes this file too; its commits are short.
        configuration.busyMode = .timeout(SQLiteStore.lockWait(busyTimeout))
        configuration.prepareDatabase { db in
            guard !readOnly else { return }
            // As the store: WAL with NORMAL loses nothing committed when the process dies.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        return configuration
    }

    /// A database error as the user reads it, naming this file.
    func failure(_ error: any Error) -> any Error {
        guard let databaseError = error as? DatabaseError else { return error }
        if [.SQLITE_BUSY, .SQLITE_LOCKED].contains(databaseError.resultCode) {
            return StoreError.busy(path: path, waitedSeconds: SQLiteStore.lockWait(busyTimeout))
        }
        return SQLiteStore.storeFailure(databaseError, path: path) ?? SQLiteStore.mapped(error)
    }
}
