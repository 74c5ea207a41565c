import ArgumentParser
import CommandSupport
import FHIR
import Foundation
import Pipeline
import Store

/// `caregate audit`: the audit trail of the app API.
struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "List the audit trail: who read or wrote which patient's data, when, and the result.",
        discussion: """
            Newest first: time (UTC), status, action, subject, patient, detail, of app API requests, operator \
            page views (operator:NAME) and command-line reads (cli:USER; status: the exit status). Kept in \
            <store>-audit.sqlite (and in the store by older CareGates). Status 0 of a request: a write never \
            answered. Refusals without a valid token are counted per minute, route, status and reason, not \
            listed: --refusals lists the counts, --stats the trail's size.

            Examples:
              caregate audit --store caregate.sqlite --patient Patient/pat-1
              caregate audit --store caregate.sqlite --stats
              caregate audit --store caregate.sqlite --format fhir > audit-events.json

            More: Docs/app-api.md (The audit trail), Docs/audit-events.md (--format fhir), Docs/security.md, Docs/store.md.
            """
    )

    @OptionGroup var storeOptions: StoreOptions

    @Option(name: .long, help: ArgumentHelp("Only the requests of this patient's tokens.", valueName: "id"))
    var patient: String?

    @Option(name: .long, help: "At most this many entries.")
    var limit: Int = 100

    @Option(name: .long, help: "Output: text, json, or the entries as FHIR R4 AuditEvents after IHE BALP: fhir (a collection Bundle) or ndjson (one a line).")
    var format: Format = .text

    @Flag(name: .long, help: "List the counts of requests refused without a valid token instead of the entries.")
    var refusals = false

    @Flag(name: .long, help: "Show the trail's size (entries, counted refusals, oldest and newest, bytes on disk) instead of its entries.")
    var stats = false

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json, fhir, ndjson }

    func validate() throws {
        guard (1...1_000_000).contains(limit) else { throw ValidationError("--limit must be 1...1000000") }
        guard !(refusals && stats) else { throw ValidationError("give --refusals or --stats, not both") }
        guard !(refusals || stats) || format == .text || format == .json else {
            throw ValidationError("--format fhir and ndjson write the entries: counted refusals and --stats have no AuditEvent")
        }
        guard !(stats && patient != nil), !(refusals && patient != nil) else {
            throw ValidationError("--patient lists entries: counted refusals name no patient")
        }
    }

    func run() throws {
        guard let store = try storeOptions.openForReading() as? any AuditTrailStore else {
            throw CommandFailure("the store \(storeOptions.store) has no audit trail")
        }
        if stats { return try show(try store.auditStatistics()) }
        if refusals { return try show(try store.auditRefusals(limit: limit)) }
        let entries = try store.auditEntries(patientID: patient, limit: limit)
        switch format {
        case .fhir:
            FileHandle.standardOutput.write(FHIRJSON.write(BALPAuditEvent.bundle(entries), pretty: true) + Data("\n".utf8))
        case .ndjson:
            FileHandle.standardOutput.write(FHIRJSON.writeNDJSON(entries.compactMap { [host = BALPAuditEvent.hostName] in BALPAuditEvent.resource($0, host: host) }))
        case .json:
            FileHandle.standardOutput.write(try Self.encoder.encode(entries) + Data("\n".utf8))
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

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    private func show(_ counts: [AuditRefusalCount]) throws {
        switch format {
        case .json, .fhir, .ndjson:
            FileHandle.standardOutput.write(try Self.encoder.encode(counts) + Data("\n".utf8))
        case .text:
            let formatter = ISO8601DateFormatter()
            for count in counts {
                print([formatter.string(from: count.minute), String(count.status), count.action, count.reason, String(count.count)].joined(separator: "\t"))
            }
        }
    }

    private func show(_ statistics: AuditTrailStatistics) throws {
        switch format {
        case .json, .fhir, .ndjson:
            FileHandle.standardOutput.write(try Self.encoder.encode(statistics) + Data("\n".utf8))
        case .text:
            let formatter = ISO8601DateFormatter()
            let day: (Date?) -> String = { $0.map(formatter.string(from:)) ?? "-" }
            print("""
                file: \(statistics.path)
                bytes on disk: \(statistics.bytes)
                entries: \(statistics.entries) (unanswered writes: \(statistics.unanswered)), oldest \(day(statistics.oldest)), newest \(day(statistics.newest))
                refusals counted: \(statistics.refusedRequests) request(s) in \(statistics.refusalRows) row(s), oldest \(day(statistics.oldestRefusal)), newest \(day(statistics.newestRefusal))
                entries kept in the store by an older CareGate: \(statistics.entriesInStore)
                """)
        }
    }
}
