import ArgumentParser
import CommandSupport
import Foundation
import Store

/// `caregate store dead-letters show ID`: one dead letter in full, with the resource the store kept of it.
struct StoreDeadLettersShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one dead letter: its reason, details, replays, and the resource the store kept.",
        discussion: """
            The kept resource is what a retry imports again (FHIR JSON, as the import parsed it); it may hold \
            patient data, so this is for an operator with access to the store. --no-resource leaves it out.

            Examples:
              caregate store dead-letters show 12
              caregate store dead-letters show 12 --no-resource

            More: Docs/operations.md (Dead letters and replay).
            """)

    @OptionGroup var options: StoreOptions

    @Argument(help: ArgumentHelp("The dead letter's number (caregate store dead-letters lists them).", valueName: "id"))
    var id: Int64

    @Flag(name: .long, help: "Leave out the kept resource.")
    var noResource = false

    func run() throws {
        guard let letter = try options.openForReading().deadLetter(id: id) else {
            throw CommandFailure("no dead letter #\(id) (caregate store dead-letters lists them)")
        }
        var lines = [
            "dead letter #\(id)",
            "  kept: \(letter.createdDate.formatted(.iso8601))",
            "  system: \(letter.system)",
            "  about: \(StoreDeadLettersList.subject(of: letter))",
            "  reason: \(letter.reason)",
        ]
        if let detail = letter.detail, !detail.isEmpty { lines.append("  detail: \(detail)") }
        if let replayed = letter.replayedDate { lines.append("  last replayed: \(replayed.formatted(.iso8601))") }
        if let resolved = letter.resolvedDate {
            lines.append("  state: resolved \(resolved.formatted(.iso8601)) (\(letter.resolution ?? "replayed"))")
        } else {
            lines.append("  state: waiting")
        }
        if let payload = letter.payload {
            lines.append("  resource kept: \(payload.count) bytes")
        } else {
            lines.append("  resource kept: none (its file must be imported again)")
        }
        print(lines.joined(separator: "\n"))
        if !noResource, let payload = letter.payload {
            print("")
            print(String(decoding: payload, as: UTF8.self))
        }
    }
}
