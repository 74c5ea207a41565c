import ArgumentParser
import Foundation
import Store

/// `caregate store`: look into the local staging store (and fill one with synthetic data for trials).
struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Inspect the local staging store.",
        discussion: """
            The store holds every version of every care entity, the raw FHIR resources, sync checkpoints, the \
            export outbox and dead letters: one SQLite file (WAL mode), or a PostgreSQL database named by a \
            postgres:// URL. Every subcommand takes --store PATH|URL (default: $CAREGATE_STORE, else \
            caregate.sqlite in the working directory).

            Examples:
              caregate store stats --check
              caregate store dump --patient Patient/pat-1 --format carekit-json

            More: Docs/store.md (its files, backups), Docs/postgresql.md.
            """,
        subcommands: [StoreStats.self, StoreDump.self, StoreDeadLetters.self, StoreSyncRuns.self, StoreGenerate.self, StoreRepairVectors.self, StoreMigrate.self, FormerPath<PatientsEvents>.self]
    )
}
