import ArgumentParser
import CommandSupport
import Foundation
import Store

/// `caregate audit`: the audit trail of the app API.
struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "List the app API's audit trail: who read or wrote which patient's data, when, and the result.",
        discussion: """
            Newest first. Each line: time (UTC), status, method and path, subject, patient, detail. The trail is \
            kept in <store>-audit.sqlite beside the store; entries an older CareGate kept in the store itself are \
            listed with them.

            Example:
              caregate audit --store caregate.sqlite --patient Patient/pat-1

            More: Docs/app-api.md (The audit trail), Docs/store.md.
            """
    )

    @OptionGroup var storeOptions: StoreOptions

    @Option(name: .long, help: ArgumentHelp("Only the requests of this patient's tokens.", valueName: "id"))
    var patient: String?

    @Option(name: .long, help: "At most this many entries.")
    var limit: Int = 100

    @Option(name: .long, help: "Output: text or json.")
    var format: Format = .text

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json }

    func validate() throws {
        guard (1...1_000_000).contains(limit) else { throw ValidationError("--limit must be 1...1000000") }
    }

    func run() throws {
        guard let store = try storeOptions.openForReading() as? any AppSyncStore else {
            throw CommandFailure("the store \(storeOptions.store) has no audit trail")
        }
        let entries = try store.auditEntries(patientID: patient, limit: limit)
        switch format {
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            FileHandle.standardOutput.write(try encoder.encode(entries) + Data("\n".utf8))
        case .text:
            let formatter = ISO8601DateFormatter()
            for entry in entries {
                let fields = [
                    formatter.string(from: entry.date), String(entry.status), entry.action,
                    entry.subject ?? "-", entry.patientID ?? "-", entry.detail ?? "",
                ]
                print(fields.joined(separator: "\t"))
            }
        }
    }
}
