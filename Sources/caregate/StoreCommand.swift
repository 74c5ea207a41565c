import ArgumentParser
import Foundation
import Store

/// `caregate store`: look into the local staging store (and fill one with synthetic data for trials).
struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Inspect the local staging store.",
        discussion: """
            The store is one SQLite file (WAL mode) holding every version of every care entity, the raw \
            FHIR resources they came from, sync checkpoints, the export outbox and dead letters. \
            Every subcommand takes --store PATH (default: caregate.sqlite in the working directory).
            Exit status: 0 on success, 1 when the store is missing or unreadable, 2 on bad usage.
            """,
        subcommands: [StoreStats.self, StoreEvents.self, StoreDump.self, StoreGenerate.self]
    )
}

/// The options every `caregate store` subcommand shares.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The store file.", valueName: "path"))
    var store: String = "caregate.sqlite"

    /// Opens the store, printing a clear message and exiting with status 1 when that fails.
    func open(creating: Bool = false, cacheMiB: Int = 64) throws -> SQLiteStore {
        do {
            return try SQLiteStore(
                path: store, mode: creating ? .createIfMissing : .existingOnly, options: SQLiteStore.Options(cacheMiB: cacheMiB))
        } catch {
            throw StoreOptions.fail(error)
        }
    }

    /// Prints `error` as `error: ...` on standard error and returns the exit code for a failure.
    static func fail(_ error: any Error) -> ExitCode {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        return ExitCode.failure
    }
}
