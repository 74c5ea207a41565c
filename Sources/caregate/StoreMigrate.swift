import ArgumentParser
import CommandSupport
import Foundation
import PostgresStore
import Store

/// `caregate store migrate`: copy a whole store into a new, empty one (SQLite to PostgreSQL and back),
/// then check the copy equal to the source, record by record.
struct StoreMigrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Copy a whole store into a new, empty SQLite file or PostgreSQL database, and check the copy.",
        discussion: """
            Copies everything (entity versions, raw resources, links, checkpoints, outbox, dead letters, \
            revision log, audit trail, sync runs, consents...), then compares the copy record by record. The source is read under its writer lease (stop serve \
            first). The target must be new: a path where no file is, or a database with no CareGate data; \
            a failed migration leaves none behind.

            Example:
              caregate store migrate --from caregate.sqlite --to postgres://db/caregate

            Exit status: 0 when the copy equals the source; 1 when it cannot be made or differs (the first \
            difference named); 2 on bad usage, a target not empty, or a database out of reach.
            More: Docs/postgresql.md, "Moving a store: caregate store migrate".
            """)

    @Option(name: .customLong("from"), help: ArgumentHelp("The store to copy: a SQLite file or a postgres:// URL.", valueName: "path|url"))
    var from: String

    @Option(name: .customLong("to"), help: ArgumentHelp("The new store: a SQLite path where no file is, or an empty PostgreSQL database's postgres:// URL.", valueName: "path|url"))
    var to: String

    @Option(name: .long, help: ArgumentHelp(
        "Seconds to wait while another process writes to a SQLite source before giving up.", valueName: "seconds"))
    var busyTimeout: Double = 30

    @Flag(name: .long, help: "Print no progress on standard error.")
    var quiet = false

    func validate() throws {
        guard busyTimeout >= 0, busyTimeout.isFinite, busyTimeout <= 86_400 else { throw ValidationError("--busy-timeout must be 0 to 86400 seconds") }
        for (name, value) in [("--from", from), ("--to", to)] where value.isEmpty || value.utf8.count > 4096 {
            throw ValidationError("\(name) must name a SQLite file or a postgres:// URL (1 to 4096 bytes)")
        }
    }

    func run() throws {
        let source: StoreLocation
        let target: StoreLocation
        do {
            source = try StoreLocation.parse(from)
            target = try StoreLocation.parse(to)
        } catch {
            throw CommandFailure("error: \(error)", status: 2)
        }
        let quiet = quiet
        let migrator = StoreMigrator(from: source, to: target, busyTimeout: busyTimeout)
        let summary: StoreMigrator.Summary
        do {
            summary = try migrator.run(
                progress: { line in if !quiet { FileHandle.standardError.write(Data(("store migrate: " + line + "\n").utf8)) } },
                warn: { FileHandle.standardError.write(Data(("warning: " + $0 + "\n").utf8)) })
        } catch let error as StoreMigrationError {
            switch error {
            case .targetNotEmpty, .sameStore: throw CommandFailure("error: \(error)", status: 2)
            case .verificationFailed, .unwritable: throw CommandFailure("error: \(error)", status: 1)
            }
        } catch let error as PostgresStoreError {
            throw CommandFailure("error: \(error)", status: 2)
        }
        print("migrated \(source) to \(target)")
        let copied = Dictionary(summary.copied.map { ($0.section, $0.records) }, uniquingKeysWith: +)
        for (section, records) in summary.compared {
            print("  \(section.title): \(copied[section] ?? 0) copied, \(records) compared equal")
        }
    }
}
