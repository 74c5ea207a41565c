import ArgumentParser
import Foundation
import Store

/// `--store` and `--busy-timeout`, shared by every command that reads or writes the staging store.
///
/// The store is named by `--store`, else (for `caregate sync`) the configuration's `store:`, else
/// `CAREGATE_STORE`, else `caregate.sqlite` (``StoreLocation``). A `postgres://` URL parses, but this build
/// opens only SQLite stores: opening one is refused with a typed error showing the URL without its password.
struct StoreOptions: ParsableArguments {
    @Option(name: .customLong("store"), help: ArgumentHelp(
        "The store: a SQLite file, or a postgres:// URL (not available in this build yet). Default: $CAREGATE_STORE, else caregate.sqlite.",
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
    /// is an error naming the path, and nothing in such a file changes.
    /// A store whose files others may read is reported on standard error first (``StoreFileModes``).
    /// `readers`: its reader connections (``SQLiteStore/Options/readers``).
    func open(
        creating: Bool = false, cacheMiB: Int = 64, configured: StoreLocation? = nil, readers: Int = SQLiteStore.Options.defaultReaders
    ) throws -> any Store {
        let path = try location(configured: configured).sqlitePath()
        if let warning = StoreFileModes.warning(storePath: path) { FileHandle.standardError.write(Data((warning + "\n").utf8)) }
        return try SQLiteStore(
            path: path, mode: creating ? .createIfMissing : .existingOnly,
            options: SQLiteStore.Options(cacheMiB: cacheMiB, busyTimeout: busyTimeout, readers: readers))
    }

    /// Opens the store for reading only: nothing is created or changed, and a writer in another process
    /// does not block it.
    func openForReading(configured: StoreLocation? = nil) throws -> any Store {
        try SQLiteStore(path: try location(configured: configured).sqlitePath(), mode: .readOnly, options: SQLiteStore.Options(busyTimeout: busyTimeout))
    }

    /// The store a dry run maps against: the existing one opened for reading only (it works on a store
    /// that is read-only on disk and changes no byte of a writable one), or an empty one in memory when
    /// there is none yet.
    func openForDryRun(configured: StoreLocation? = nil) throws -> any Store {
        let path = try location(configured: configured).sqlitePath()
        return FileManager.default.fileExists(atPath: path) ? try openForReading(configured: configured) : try SQLiteStore.inMemory()
    }
}
