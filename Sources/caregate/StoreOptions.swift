import ArgumentParser
import CommandSupport
import Foundation
import PostgresStore
import Store

/// `--store` and `--busy-timeout`, shared by every command that reads or writes the staging store.
///
/// The store is named by `--store`, else (for `caregate sync`) the configuration's `store:`, else
/// `CAREGATE_STORE`, else `caregate.sqlite` (``StoreLocation``): a SQLite file (``SQLiteStore``) or a
/// `postgres://` URL (``PostgreSQLStore``, its password from the URL, `PGPASSWORD` or the password file,
/// never shown). Commands take what they open through the store protocols, so each runs on either;
/// what only a SQLite file has is refused on PostgreSQL by ``requireSQLite(_:because:configured:)``.
struct StoreOptions: ParsableArguments {
    @Option(name: .customLong("store"), help: ArgumentHelp(
        "The store: a SQLite file, or a postgres:// URL (Docs/postgresql.md). Default: $CAREGATE_STORE, else caregate.sqlite.",
        valueName: "path|url"))
    var storeArgument: String?

    @Option(name: .long, help: ArgumentHelp(
        "Seconds to wait while another process writes to the store before giving up (readers never wait).", valueName: "seconds"))
    var busyTimeout: Double = 30

    func validate() throws {
        guard busyTimeout >= 0, busyTimeout.isFinite else { throw ValidationError("--busy-timeout must be zero or more seconds") }
    }

    /// The store named by `--store`, else `configured` (a configuration file's), else `CAREGATE_STORE`,
    /// else `caregate.sqlite`; a name that does not parse is a ``StoreLocationError``.
    func location(configured: StoreLocation? = nil) throws -> StoreLocation {
        if storeArgument == nil, let configured { return configured }
        return try StoreLocation.resolve(argument: storeArgument, environment: ProcessInfo.processInfo.environment)
    }

    /// The store as messages name it: the SQLite path, or the URL without its password.
    var store: String { (try? location().description) ?? "the store --store or CAREGATE_STORE names" }

    /// Opens the store for writing; a store that is missing (unless `creating`) or not a CareGate store
    /// is an error naming it, and nothing in such a file changes.
    /// A SQLite store whose files others may read is reported on standard error first (``StoreFileModes``).
    /// `cacheMiB`, `readers`: the SQLite connection's page cache and reader connections (``SQLiteStore/Options``).
    func open(
        creating: Bool = false, cacheMiB: Int = 64, configured: StoreLocation? = nil, readers: Int = SQLiteStore.Options.defaultReaders
    ) throws -> any Store {
        switch try location(configured: configured) {
        case .sqlite(let path):
            if let warning = StoreFileModes.warning(storePath: path) { FileHandle.standardError.write(Data((warning + "\n").utf8)) }
            return try SQLiteStore(
                path: path, mode: creating ? .createIfMissing : .existingOnly,
                options: SQLiteStore.Options(cacheMiB: cacheMiB, busyTimeout: busyTimeout, readers: readers))
        case .postgres(let location):
            return try Self.openPostgres(location, creating: creating, busyTimeout: busyTimeout)
        }
    }

    /// Opens the store for reading only: nothing is created or changed, and a writer in another process
    /// does not block it. (A PostgreSQL store that holds CareGate's schema is brought to this build's,
    /// as by any command: its migrations are additive, and every reader of the database needs them.)
    func openForReading(configured: StoreLocation? = nil) throws -> any Store {
        switch try location(configured: configured) {
        case .sqlite(let path):
            return try SQLiteStore(path: path, mode: .readOnly, options: SQLiteStore.Options(busyTimeout: busyTimeout))
        case .postgres(let location):
            return try Self.openPostgres(location, creating: false, busyTimeout: busyTimeout)
        }
    }

    /// The store a dry run maps against: the existing one opened for reading only (it works on a store
    /// that is read-only on disk and changes no byte of a writable one), or an empty one in memory when
    /// there is none yet (a PostgreSQL database without CareGate's schema included: nothing is made in it).
    func openForDryRun(configured: StoreLocation? = nil) throws -> any Store {
        switch try location(configured: configured) {
        case .sqlite(let path):
            return FileManager.default.fileExists(atPath: path) ? try openForReading(configured: configured) : try SQLiteStore.inMemory()
        case .postgres(let location):
            do {
                return try Self.openPostgres(location, creating: false, busyTimeout: busyTimeout)
            } catch StoreError.storeNotFound {
                return try SQLiteStore.inMemory()
            }
        }
    }

    /// Refuses a PostgreSQL store for what only a SQLite store file has (`command`, e.g. "store stats
    /// --check"; `reason`, why): a ``SQLiteOnlyRefusal``, exit status 2, before anything is opened.
    func requireSQLite(_ command: String, because reason: String, configured: StoreLocation? = nil) throws {
        if case .postgres(let location) = try location(configured: configured) {
            throw SQLiteOnlyRefusal(command: command, reason: reason, store: location.redacted)
        }
    }

    /// The PostgreSQL store at `location` (``PostgreSQLStore/open(location:creating:busyTimeout:environment:warn:)``),
    /// whose writers wait `busyTimeout` seconds for the lease, as SQLite's; a server that cannot be
    /// reached or refuses is a configuration error (exit status 2), named without the password.
    private static func openPostgres(_ location: PostgresLocation, creating: Bool, busyTimeout: Double) throws -> PostgreSQLStore {
        do {
            return try PostgreSQLStore.open(location: location, creating: creating, busyTimeout: busyTimeout, warn: warn)
        } catch let error as PostgresStoreError {
            throw CommandFailure("error: cannot open the store: \(error)", status: 2)
        }
    }

    /// A warning on standard error (a password file that cannot be used).
    private static func warn(_ message: String) {
        FileHandle.standardError.write(Data(("warning: " + message + "\n").utf8))
    }
}

extension StoreLocation {
    /// The SQLite store's file; nil for a PostgreSQL store, which has none.
    var sqliteFile: String? {
        if case .sqlite(let path) = self { return path }
        return nil
    }
}
