import ArgumentParser
import CommandSupport
import Foundation
import Mapping
import Pipeline
import Store
import Sync

/// `caregate export`: the outbox's pending outcomes as FHIR Observations.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the outcomes waiting in the outbox as FHIR Observations, and mark them sent.",
        discussion: """
            Builds each queued outcome's Observation and Provenance with the export mapping, validates them and \
            writes them to a folder, a file, standard output or a FHIR server (transaction Bundles, retried, each \
            acknowledged), then marks them sent. Running again writes nothing; a killed run never writes an \
            outcome twice. Exit status: 0 when all due was written, 1 when any was refused, 2 on bad usage.

            Examples:
              caregate export --to exports/
              caregate export --to http://127.0.0.1:8080/fhir --batch-size 200
              caregate export --to - --format ndjson --dry-run

            More: Docs/converting.md (Write outcomes back), Docs/sync-job.md (Authorization).
            """
    )

    @OptionGroup var storeOptions: StoreOptions

    @Option(name: .long, help: ArgumentHelp("A folder (a new file per run), a file (replaced), - for standard output, or a FHIR server's base URL (http:// or https://).", valueName: "dir|file|-|url"))
    var to: String = "-"

    @Option(name: .long, help: ArgumentHelp("Outcomes per Bundle sent to a server.", valueName: "n"))
    var batchSize: Int = 100

    @Option(name: .long, help: ArgumentHelp("A server: send the bearer token in this environment variable.", valueName: "name"))
    var tokenEnv: String?

    @Option(name: .long, help: ArgumentHelp("A server: send the bearer token in this file (its first line).", valueName: "path"))
    var tokenFile: String?

    @Option(name: .long, help: ArgumentHelp("A server: SMART Backend Services client id (with --smart-key).", valueName: "id"))
    var smartClientID: String?

    @Option(name: .long, help: ArgumentHelp("A server: the client's private key, PEM (P-384 for ES384, RSA for RS384).", valueName: "path"))
    var smartKey: String?

    @Option(name: .long, help: ArgumentHelp("json, xml or ndjson.", valueName: "format"))
    var format: ExportOptions.Format = .json

    @Option(name: .long, help: ArgumentHelp("transaction, batch or collection (json and xml).", valueName: "type"))
    var bundle: ExportOptions.BundleType = .transaction

    @Option(name: .long, help: ArgumentHelp("put (PUT Observation/<id derived from the outcome id>) or conditional (POST with ifNoneExist on the derived identifier; later versions as a conditional update).", valueName: "mode"))
    var request: ExportOptions.Request = .put

    @OptionGroup var mappings: MappingsOption

    @Option(name: .long, help: ArgumentHelp("Export at most this many outbox entries.", valueName: "n"))
    var limit: Int?

    @Flag(name: .long, help: "Build and validate, print what would be written, and change nothing.")
    var dryRun = false

    @Flag(name: .long, help: "Also tell each step of writing a file or folder on standard error: written, committed, in place (and what a killed run left).")
    var verbose = false

    func run() throws {
        let mappingSet = try mappings.load()
        guard mappingSet.export != nil else { throw ExportError.noExportMapping }
        // A server's address and credentials are checked before the store is touched.
        let receiver = try serverReceiver()
        let gateway = Gateway(store: try storeOptions.open(), mappings: mappingSet, options: gatewayOptions)
        if let receiver { return try push(gateway, to: receiver) }
        let exporter = try gateway.exporter()
        if verbose { exporter.onPhase = { printError("\($0)") } }
        let report = try exporter.run(to: target)
        auditExport(report, in: gateway.store)
        printError(summary(report))
        if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
    }

    /// The export's entry in the audit trail: one, naming no patient (the export's report does not say
    /// whose outcomes it wrote), with the counts; a dry run writes nothing out and is not audited.
    private func auditExport(_ report: ExportReport, in store: any Store) {
        guard !dryRun, report.observations > 0 else { return }
        CommandAudit.record(
            "caregate export", patients: [(nil, "\(report.observations) Observation(s) for \(report.sent) outbox entries, \(format)")],
            status: report.exitStatus, in: store)
    }

    /// The export settings the options make.
    private var gatewayOptions: Gateway.Options {
        var options = Gateway.Options()
        options.export.format = format
        options.export.bundleType = bundle
        options.export.request = request
        options.export.dryRun = dryRun
        if let limit { options.export.limit = max(1, limit) }
        return options
    }

    /// `--to` when it is not a server: `-` is standard output; an existing folder, or a path ending in
    /// `/`, a folder; anything else a file.
    private var target: ExportTarget {
        guard to != "-" else { return .standardOutput }
        var isFolder: ObjCBool = false
        return FileManager.default.fileExists(atPath: to, isDirectory: &isFolder) && isFolder.boolValue || to.hasSuffix("/") ? .folder(to) : .file(to)
    }

    /// What was written (or would be, on a dry run), then each dead letter.
    private func summary(_ report: ExportReport) -> String {
        let written = "\(dryRun ? "would export" : "exported") \(report.observations) Observation(s) for \(report.sent) outbox entr\(report.sent == 1 ? "y" : "ies")"
            + (report.path.map { " to \($0)" } ?? "")
        return ([written] + Self.deadLetters(report)).joined(separator: "\n")
    }

    /// A line for each outcome refused for good (kept as a dead letter).
    private static func deadLetters(_ report: ExportReport) -> [String] {
        report.refused.map { "  dead letter (outbox #\($0.entryID), outcome \($0.outcomeID)): \($0.reason)" }
    }

    /// The server's credentials the options name: none, a bearer token, or SMART Backend Services.
    private var authorization: AuthorizationSettings {
        AuthorizationSettings(tokenEnv: tokenEnv, tokenFile: tokenFile, smartClientID: smartClientID, smartKey: smartKey)
    }

    /// The receiver of `--to` when it is a FHIR server's base URL, nil for a file target.
    private func serverReceiver() throws -> FHIRServerReceiver? {
        guard to.hasPrefix("http://") || to.hasPrefix("https://") else {
            guard authorization.isEmpty else { throw ValidationError("--token-env, --token-file and --smart-* are for a server (--to http://...)") }
            return nil
        }
        guard let base = URL(string: to), base.host != nil else { throw ValidationError("--to \(to) is not a URL") }
        guard !dryRun else { throw ValidationError("--dry-run writes to a file or standard output, not to a server") }
        if let conflict = authorization.conflict { throw ValidationError(conflict) }
        let credentials: (any AuthorizationProvider)?
        do {
            credentials = try authorization.provider(base: base)
        } catch let error as AuthorizationError {
            throw ValidationError("\(error)")  // a configuration error: exit 2, nothing touched
        }
        return FHIRServerReceiver(
            client: FHIRClient(base: base, format: format == .xml ? .xml : .json, authorization: credentials), idempotent: request == .put)
    }

    /// Sends the outbox to the FHIR server at `--to`, `--batch-size` outcomes per Bundle.
    private func push(_ gateway: Gateway, to receiver: FHIRServerReceiver) throws {
        // Audited as the sync job's pushes are: one entry per patient per Bundle, before it leaves.
        let audit = PushAudit(subject: CommandAudit.subject, action: "caregate export", recipient: FHIRClient.withoutCredentials(receiver.client.base))
        let report = try gateway.push(to: receiver, batchSize: max(1, batchSize), audit: audit)
        var lines = ["sent \(report.observations) Observation(s) in \(report.requests) request(s) to \(to): \(report.acknowledged) stored, "
            + "\(report.notTaken.filter { !$0.retry }.count) refused, \(report.notTaken.filter(\.retry).count) to send again later"]
        lines += Self.deadLetters(report)
        for missed in report.notTaken { lines.append("  \(missed.retry ? "later" : "refused") (outbox #\(missed.entryID), outcome \(missed.outcomeID)): \(missed.reason)") }
        for error in report.unanswered { lines.append("  no answer (sent again on a later run): \(error)") }
        printError(lines.joined(separator: "\n"))
        if !report.refused.isEmpty || !report.notTaken.isEmpty || !report.unanswered.isEmpty { throw ExitCode(1) }
    }
}

extension ExportOptions.Format: ExpressibleByArgument {}
extension ExportOptions.BundleType: ExpressibleByArgument {}
extension ExportOptions.Request: ExpressibleByArgument {}
