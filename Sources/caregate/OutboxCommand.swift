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
            a failed entry back in the queue; retry --state failed --all puts every failed one back.

            Examples:
              caregate outbox --state failed
              caregate outbox retry 12
              caregate outbox retry --state failed --all

            More: Docs/converting.md (Write outcomes back), Docs/operations.md.
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
        commandName: "retry", abstract: "Put failed entries back in the queue: the next export or push sends them.",
        discussion: """
            Give an entry's id, or --state failed --all for every failed entry (at most --limit, oldest first). \
            An entry put back is due at once; one that fails again is failed again, with its new error. Running \
            it twice requeues the same entries again, which changes nothing the next export does.

            Examples:
              caregate outbox retry 12
              caregate outbox retry --state failed --all

            More: Docs/operations.md (Dead letters and replay), Docs/converting.md (Write outcomes back).
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: ArgumentHelp("The outbox entry id (caregate outbox lists them).", valueName: "id"))
    var id: Int64?

    @Flag(name: .long, help: "Every entry in --state (failed).")
    var all = false

    @Option(name: .long, help: ArgumentHelp("With --all: the state of the entries to put back; only failed entries can be.", valueName: "state"))
    var state: OutboxState?

    @Option(name: .long, help: ArgumentHelp("With --all: at most this many entries in one run.", valueName: "n"))
    var limit = 100_000

    func validate() throws {
        guard (id != nil) != all else { throw ValidationError("give an outbox entry id or --state failed --all (not both)") }
        if all {
            guard let state else { throw ValidationError("--all needs --state failed") }
            guard state == .failed else { throw ValidationError("only failed entries can be put back (--state failed), not \(state)") }
        } else if state != nil {
            throw ValidationError("--state goes with --all")
        }
        guard (1...1_000_000).contains(limit) else { throw ValidationError("--limit must be from 1 to 1000000") }
    }

    func run() throws {
        let store = try storeOptions.open()
        let now = Date()
        var batch = StoreBatch()
        if let id {
            guard let entry = try store.outboxEntry(id: id) else { throw CommandFailure("no outbox entry #\(id)") }
            guard entry.state == .failed else { throw CommandFailure("outbox entry #\(id) is \(entry.state), not failed: there is nothing to retry") }
            batch.requeue(entry, at: now)
            try store.apply(batch)
            print("outbox entry #\(id) requeued")
            return
        }
        let requeued = try store.withWriterLease("caregate outbox retry") {
            let entries = try store.outboxEntries(in: .failed, limit: limit)
            for entry in entries { batch.requeue(entry, at: now) }
            if !batch.isEmpty { try store.apply(batch) }
            return entries.count
        }
        print("\(requeued) failed outbox entr\(requeued == 1 ? "y" : "ies") requeued" + (requeued == limit ? " (--limit \(limit): run again for more)" : ""))
    }
}

extension OutboxState: ExpressibleByArgument {}
