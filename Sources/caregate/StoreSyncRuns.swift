import ArgumentParser
import CommandSupport
import Foundation
import Store

/// `caregate store sync-runs`: the last runs of `caregate sync` and their reports.
struct StoreSyncRuns: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync-runs",
        abstract: "List the last sync runs (when, how long, result, counts), or show one run's report.",
        discussion: """
            Each run of caregate sync (--once, and each run of a repeating job) is recorded in the store when \
            it ends: its run id (the run= of its log lines), start and end, result (ok; partial: it ended \
            with its report but something failed or waits for a later run, exit status 1; failed: it stopped \
            on an error before its report), its counts and its JSON report. The newest 500 are kept. A run \
            killed before its end has no record; a dry run records nothing. Reading never changes the store.

            Examples:
              caregate store sync-runs --limit 20
              caregate store sync-runs --format json
              caregate store sync-runs show 42

            More: Docs/operations.md (Sync runs).
            """,
        subcommands: [StoreSyncRunsList.self, StoreSyncRunsShow.self],
        defaultSubcommand: StoreSyncRunsList.self)
}

/// `caregate store sync-runs list`: the newest runs first.
struct StoreSyncRunsList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the last sync runs, newest first (the default).",
        discussion: """
            Text: one line per run: number, run id, start (UTC), seconds, result, then pulled (imported, \
            failed), pushed (acknowledged, refused), dead letters and problems. json: the runs as an array \
            (without their reports: show ID prints one).

            Examples:
              caregate store sync-runs list --limit 5
              caregate store sync-runs --format json

            More: Docs/operations.md (Sync runs).
            """)

    @OptionGroup var options: StoreOptions

    @Option(name: .long, help: "How many to list (newest first), 1...500.")
    var limit = 20

    @Option(name: .long, help: "Output: text or json.")
    var format: Format = .text

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json }

    func validate() throws {
        guard (1...500).contains(limit) else { throw ValidationError("--limit must be from 1 to 500") }
    }

    func run() throws {
        let runs = try options.openForReading().syncRunHistory?.syncRuns(limit: limit) ?? []
        switch format {
        case .json:
            FileHandle.standardOutput.write(try StoreSyncRunsShow.encoder.encode(runs) + Data("\n".utf8))
        case .text:
            guard !runs.isEmpty else { return print("no sync runs recorded") }
            for run in runs { print(Self.line(run)) }
        }
    }

    /// One run as a line of text.
    static func line(_ run: SyncRun) -> String {
        let c = run.counts
        var line = "#\(run.id ?? 0) run=\(run.runID) \(run.started.formatted(.iso8601)) \(String(format: "%.1f", run.seconds)) s \(run.result.rawValue): "
        line += "pulled \(c.pulled) (\(c.imported) imported, \(c.failed) failed), pushed \(c.pushed) (\(c.acknowledged) acknowledged, \(c.refused) refused), "
        line += "\(c.deadLetters) dead letter(s), \(c.problems) problem(s)"
        if let error = run.error { line += ": \(error)" }
        return line
    }
}

/// `caregate store sync-runs show ID`: one run with its report.
struct StoreSyncRunsShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one sync run with its JSON report.",
        discussion: """
            Prints the run (as list does) and then its report as the job wrote it (JSON; no patient data), or, \
            with --format json, one JSON object with the run and its report.

            Examples:
              caregate store sync-runs show 42
              caregate store sync-runs show 42 --format json

            More: Docs/operations.md (Sync runs).
            """)

    @OptionGroup var options: StoreOptions

    @Argument(help: ArgumentHelp("The run's number (caregate store sync-runs lists them).", valueName: "id"))
    var id: Int64

    @Option(name: .long, help: "Output: text or json.")
    var format: StoreSyncRunsList.Format = .text

    func run() throws {
        guard let run = try options.openForReading().syncRunHistory?.syncRun(id: id) else {
            throw CommandFailure("no sync run #\(id) (caregate store sync-runs lists them)")
        }
        switch format {
        case .json:
            FileHandle.standardOutput.write(try Self.encoder.encode(run) + Data("\n".utf8))
        case .text:
            print(StoreSyncRunsList.line(run))
            if let report = run.report { print(report) }
        }
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}
