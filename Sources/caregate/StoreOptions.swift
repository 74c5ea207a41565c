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
    func open(creating: Bool = false, cacheMiB: Int = 64) throws -> any Store {
        try SQLiteStore(
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

/// The size of a synthetic data set, shared by `store generate` and `bench store`; each command has its
/// own defaults (a small trial set for one, the 7.3-million-outcome acceptance set for the other).
struct SyntheticSizeOptions: ParsableArguments {
    @Option(name: .long, help: "How many patients (store generate: 10; bench store: 1,000).")
    var patients: Int?

    @Option(name: .long, help: "Daily tasks per patient (store generate: 5; bench store: 20).")
    var tasks: Int?

    @Option(name: .long, help: "Days of outcomes (store generate: 30; bench store: 365).")
    var days: Int?

    @Option(name: .long, help: "Days of outcomes per batch, one transaction each (store generate: 1; bench store: 7).")
    var daysPerBatch: Int?

    @Option(name: .long, help: "SQLite page cache in MiB (store generate: 64; bench store: 512).")
    var cacheMib: Int?

    /// The sizes with a command's defaults filled in.
    struct Resolved {
        var patients, tasks, days, daysPerBatch, cacheMib: Int
    }

    func resolved(defaults: Resolved) -> Resolved {
        Resolved(
            patients: patients ?? defaults.patients, tasks: tasks ?? defaults.tasks, days: days ?? defaults.days,
            daysPerBatch: daysPerBatch ?? defaults.daysPerBatch, cacheMib: cacheMib ?? defaults.cacheMib)
    }

    /// Usage errors for sizes out of range (`minimumTasks` is 0 where a set without tasks makes sense).
    func check(minimumTasks: Int) throws {
        guard (patients ?? 1) >= 1 else { throw ValidationError("--patients must be at least 1") }
        guard (tasks ?? minimumTasks) >= minimumTasks else { throw ValidationError("--tasks must be at least \(minimumTasks)") }
        guard (days ?? 0) >= 0 else { throw ValidationError("--days cannot be negative") }
        guard (daysPerBatch ?? 1) >= 1 else { throw ValidationError("--days-per-batch must be at least 1") }
        guard (cacheMib ?? 1) >= 1 else { throw ValidationError("--cache-mib must be at least 1") }
        // Bounds that keep every count the set makes (entities, outcomes) well inside Int.
        guard (patients ?? 1) <= 1_000_000_000 else { throw ValidationError("--patients can be at most 1,000,000,000") }
        guard (tasks ?? 0) <= 1_000 else { throw ValidationError("--tasks can be at most 1,000") }
        guard (days ?? 0) <= 100_000 else { throw ValidationError("--days can be at most 100,000") }
        guard (daysPerBatch ?? 1) <= 100_000 else { throw ValidationError("--days-per-batch can be at most 100,000") }
        guard (cacheMib ?? 1) <= 1_048_576 else { throw ValidationError("--cache-mib can be at most 1,048,576 (1 TiB)") }
    }
}
