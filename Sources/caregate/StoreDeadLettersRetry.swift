import ArgumentParser
import CommandSupport
import Foundation
import Pipeline
import Store

/// `caregate store dead-letters retry`: replays dead letters from what the store kept of them.
struct StoreDeadLettersRetry: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Replay dead letters after their cause is fixed: those that import leave the list.",
        discussion: """
            Imports each letter again from the resource the store kept (no new pull), with the default mappings \
            or yours (--mappings) and the import's --time-zone. One that imports is resolved and leaves the list \
            (list --resolved still shows it); one that fails again stays with the new reason; an export's letter \
            requeues its outbox entry. The same retry twice changes nothing. Exit status: 0 when every letter \
            given is resolved, 1 when any stays, 2 on bad usage.

            Examples:
              caregate store dead-letters retry 12 13 --mappings mine/
              caregate store dead-letters retry --all --since 2026-11-01 --time-zone Europe/Paris

            More: Docs/operations.md (Dead letters and replay).
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: ArgumentHelp("The dead letters' numbers (caregate store dead-letters lists them).", valueName: "id"))
    var ids: [Int64] = []

    @Flag(name: .long, help: "Replay every dead letter waiting (the newest --limit of them).")
    var all = false

    @Option(name: .long, help: ArgumentHelp("With --all: only the letters kept from this day (YYYY-MM-DD, midnight in --time-zone) or instant on.", valueName: "day"))
    var since: String?

    @Option(name: .long, help: ArgumentHelp("With --all: at most this many letters in one run.", valueName: "n"))
    var limit = 10_000

    @OptionGroup var mappings: MappingsOption

    @OptionGroup var timeZone: TimeZoneOption

    func validate() throws {
        guard all != !ids.isEmpty else { throw ValidationError("give dead letter numbers or --all (not both)") }
        if since != nil, !all { throw ValidationError("--since goes with --all") }
        guard (1...1_000_000).contains(limit) else { throw ValidationError("--limit must be from 1 to 1000000") }
        guard ids.allSatisfy({ $0 > 0 }) else { throw ValidationError("dead letter numbers are positive") }
        if let since { _ = try DateArgument.parse(since, option: "--since", timeZone: timeZone.zone) }
    }

    func run() throws {
        let store = try storeOptions.open()
        let gateway = Gateway(store: store, mappings: try mappings.load(), options: Gateway.Options(timeZone: timeZone.zone))
        let replay = DeadLetterReplay(gateway: gateway)
        let report: DeadLetterReplay.Report
        do {
            if all {
                let day = try since.map { try DateArgument.parse($0, option: "--since", timeZone: timeZone.zone) }
                report = try replay.retryAll(since: day, limit: limit)
            } else {
                report = try replay.retry(ids: ids)
            }
        } catch let error as DeadLetterReplayError {
            throw CommandFailure(error.description)
        }
        print(report.text())
        if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
    }
}
