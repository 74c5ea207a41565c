import ArgumentParser
import Foundation
import Store

/// `--store PATH` and `--busy-timeout`, shared by every command that reads or writes the staging store.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The store file (SQLite).", valueName: "path"))
    var store: String = "caregate.sqlite"

    @Option(name: .long, help: ArgumentHelp(
        "Seconds to wait while another process writes to the store before giving up (readers never wait).", valueName: "seconds"))
    var busyTimeout: Double = 30

    func validate() throws {
        guard busyTimeout >= 0, busyTimeout.isFinite else { throw ValidationError("--busy-timeout must be zero or more seconds") }
    }

    /// Opens the store for writing; a store that is missing (unless `creating`) or not a CareGate store
    /// is an error naming the path, and nothing in such a file changes.
    /// A store whose files others may read is reported on standard error first (``StoreFileModes``).
    func open(creating: Bool = false, cacheMiB: Int = 64) throws -> any Store {
        if let warning = StoreFileModes.warning(storePath: store) { FileHandle.standardError.write(Data((warning + "\n").utf8)) }
        return try SQLiteStore(
            path: store, mode: creating ? .createIfMissing : .existingOnly,
            options: SQLiteStore.Options(cacheMiB: cacheMiB, busyTimeout: busyTimeout))
    }

    /// Opens the store for reading only: nothing is created or changed, and a writer in another process
    /// does not block it.
    func openForReading() throws -> any Store {
        try SQLiteStore(path: store, mode: .readOnly, options: SQLiteStore.Options(busyTimeout: busyTimeout))
    }

    /// The store a dry run maps against: the existing one opened for reading only (it works on a store
    /// that is read-only on disk and changes no byte of a writable one), or an empty one in memory when
    /// there is none yet.
    func openForDryRun() throws -> any Store {
        FileManager.default.fileExists(atPath: store) ? try openForReading() : try SQLiteStore.inMemory()
    }
}
