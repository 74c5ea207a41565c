import ArgumentParser
import Foundation
import Store

/// `caregate store dead-letters`: what could not be imported or exported, newest first, with the reason.
struct StoreDeadLetters: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract: "List what could not be imported or exported, newest first, with the reason.",
        discussion: """
            Each line: number, when, the resource (type/id) or outbox entry, and why. The content is kept in the \
            store but never printed (it may hold patient data).

            Example:
              caregate store dead-letters --limit 20

            More: Docs/store.md.
            """)

    @OptionGroup var options: StoreOptions

    @Option(name: .long, help: "How many to list (newest first).")
    var limit = 100

    func validate() throws {
        guard (1...1_000_000).contains(limit) else { throw ValidationError("--limit must be from 1 to 1000000") }
    }

    func run() throws {
        let letters = try options.openForReading().deadLetters(limit: limit)
        guard !letters.isEmpty else {
            print("no dead letters")
            return
        }
        for letter in letters {
            let subject = letter.outboxEntryID.map { "outbox entry #\($0)" }
                ?? [letter.resourceType, letter.resourceID].compactMap { $0 }.joined(separator: "/")
            print("#\(letter.id ?? 0) \(letter.createdDate.formatted(.iso8601)) \(letter.system) \(subject.isEmpty ? "-" : subject): \(letter.reason)")
        }
    }
}
