import ArgumentParser
import Foundation
import Store

/// `caregate store dead-letters`: what could not be imported or exported, and its replay.
struct StoreDeadLetters: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract: "List, show or replay what could not be imported or exported.",
        discussion: """
            A dead letter is a resource an import could not map or store, or an export the server refused, kept \
            with the reason. It waits for a person until a replay resolves it: fix the cause (a mapping, a \
            missing resource), then retry it; it imports again from the resource the store kept (no new pull) \
            and leaves the list, or stays with the new reason.

            Examples:
              caregate store dead-letters --limit 20
              caregate store dead-letters show 12
              caregate store dead-letters retry 12 13 --mappings mine/
              caregate store dead-letters retry --all --since 2026-11-01

            More: Docs/operations.md (Dead letters and replay).
            """,
        subcommands: [StoreDeadLettersList.self, StoreDeadLettersShow.self, StoreDeadLettersRetry.self],
        defaultSubcommand: StoreDeadLettersList.self)
}

/// `caregate store dead-letters list`: the dead letters waiting, newest first, with the reason.
struct StoreDeadLettersList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the dead letters waiting for a person, newest first, with the reason (the default).",
        discussion: """
            Each line: number, when, the source system, the resource (type/id) or outbox entry, and why. The \
            content is kept in the store but not printed here (it may hold patient data): show ID prints it.

            Examples:
              caregate store dead-letters --limit 20
              caregate store dead-letters list --resolved

            More: Docs/operations.md (Dead letters and replay).
            """)

    @OptionGroup var options: StoreOptions

    @Option(name: .long, help: "How many to list (newest first).")
    var limit = 100

    @Flag(name: .long, help: "Also list those a replay resolved, with how.")
    var resolved = false

    func validate() throws {
        guard (1...1_000_000).contains(limit) else { throw ValidationError("--limit must be from 1 to 1000000") }
    }

    func run() throws {
        let letters = try options.openForReading().deadLetters(limit: limit, includingResolved: resolved, since: nil)
        guard !letters.isEmpty else {
            print(resolved ? "no dead letters" : "no dead letters waiting")
            return
        }
        for letter in letters {
            var line = "#\(letter.id ?? 0) \(letter.createdDate.formatted(.iso8601)) \(letter.system) \(Self.subject(of: letter)): \(letter.reason)"
            if let resolvedDate = letter.resolvedDate {
                line += " [resolved \(resolvedDate.formatted(.iso8601)): \(letter.resolution ?? "replayed")]"
            }
            print(line)
        }
    }

    /// The resource (`Type/id`) or the outbox entry a letter is about; `-` when neither is known.
    static func subject(of letter: DeadLetter) -> String {
        let subject = letter.outboxEntryID.map { "outbox entry #\($0)" }
            ?? [letter.resourceType, letter.resourceID].compactMap { $0 }.joined(separator: "/")
        return subject.isEmpty ? "-" : subject
    }
}
