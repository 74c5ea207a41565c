import ArgumentParser
import CommandSupport
import Foundation
import Store

/// `caregate outbox`: the export queue.
struct OutboxCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox",
        abstract: "List the export queue, or requeue an entry.",
        discussion: """
            Every version of an outcome a patient recorded is queued once: pending until an export writes it \
            (sent), acknowledged when the provider's server confirms it, failed with its last error. retry ID puts \
            a failed entry back in the queue.

            Examples:
              caregate outbox --state failed
              caregate outbox retry 12

            More: Docs/converting.md (Write outcomes back).
            """,
        subcommands: [OutboxList.self, OutboxRetry.self],
        defaultSubcommand: OutboxList.self
    )
}

struct OutboxList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List outbox entries (default: all states).",
        discussion: """
            Example:
              caregate outbox list --state acknowledged --limit 10

            More: Docs/converting.md (Write outcomes back).
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Option(name: .long, help: ArgumentHelp("Only entries in this state: pending, sent, acknowledged, failed.", valueName: "state"))
    var state: OutboxState?

    @Option(name: .long, help: ArgumentHelp("At most this many entries per state.", valueName: "n"))
    var limit = 1000

    func run() throws {
        let store = try storeOptions.openForReading()
        let states = state.map { [$0] } ?? OutboxState.allCases
        var total = 0
        for state in states {
            for entry in try store.outboxEntries(in: state, limit: limit) {
                total += 1
                var line = "#\(entry.id ?? 0)  \(entry.state)  \(entry.entityKind.rawValue) \(entry.entityID)  version \(entry.entityUUID.canonicalString)  attempts \(entry.attempts)"
                if let server = entry.server { line += "  on the server: \(server.id)" + (server.version.map { " version \($0)" } ?? "") }
                if let error = entry.lastError { line += "  error: \(error)" }
                if let next = entry.nextAttemptDate { line += "  next attempt \(next.formatted(.iso8601))" }
                print(line)
            }
        }
        // The footer counts what the store holds, not only what --limit let through.
        let counts = try store.statistics().outbox
        let held = states.reduce(0) { $0 + (counts[$1] ?? 0) }
        let listed = held > total ? "\(total) of " : ""
        printError("\(listed)\(held) outbox entr\(held == 1 ? "y" : "ies")\(state.map { " \($0)" } ?? "")" + (held > total ? " (--limit \(limit) per state)" : ""))
    }
}

struct OutboxRetry: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry", abstract: "Put a failed entry back in the queue: the next export sends it.",
        discussion: """
            Example:
              caregate outbox retry 12

            More: Docs/converting.md (Write outcomes back).
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: ArgumentHelp("The outbox entry id (caregate outbox lists them).", valueName: "id"))
    var id: Int64

    func run() throws {
        let store = try storeOptions.open()
        guard let entry = try store.outboxEntry(id: id) else { throw CommandFailure("no outbox entry #\(id)") }
        guard entry.state == .failed else { throw CommandFailure("outbox entry #\(id) is \(entry.state), not failed: there is nothing to retry") }
        var batch = StoreBatch()
        let now = Date()
        batch.transition(outboxEntry: id, .failed(error: entry.lastError ?? "retry requested", retryAt: now, at: now))
        try store.apply(batch)
        print("outbox entry #\(id) requeued")
    }
}

extension OutboxState: ExpressibleByArgument {}
