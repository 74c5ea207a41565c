import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// Where a resource was read. Kept for every resource indexed, so it holds the file's own name
/// (shared, not copied) and numbers, and makes the text reports show only when asked.
struct ImportOrigin: Sendable {
    var file: String
    var line: Int? = nil
    var column: Int? = nil
    /// The position in a Bundle's entries.
    var entry: Int? = nil
    /// Where an NDJSON line lies in the file.
    var bytes: Range<Int>? = nil

    /// `file`, `file:line` or `file:line:column`.
    var source: String {
        [file, line.map(String.init), column.map(String.init)].compactMap { $0 }.joined(separator: ":")
    }
}

/// What an import came to for one resource.
enum ImportStatus {
    case created, updated, unchanged

    /// What a resource came to from what the store did with the entities it makes (and those it no
    /// longer makes, deleted): created when one is new, else updated when one got a new version or a
    /// tombstone, else unchanged.
    init(_ changes: some Sequence<VersionChange>) {
        self = .unchanged
        for change in changes {
            switch change {
            case .created: self = .created; return
            case .updated, .deleted: self = .updated
            case .unchanged: break
            }
        }
    }
}

/// The report of an import as its stages fill it in, and the dead letters of what failed.
///
/// Every stage writes here: reading counts and fails unreadable input, reconciliation and outcome
/// planning count what each resource came to, the writers count what the store says it wrote.
final class ImportLedger {
    private(set) var report = ImportReport()
    /// Receives progress lines on long imports.
    var progress: ((String) -> Void)?
    private let store: any Store
    private let options: ImportOptions
    /// Dead letters kept back while pass 1 runs (nil otherwise), written once it has ended.
    private var deferredDeadLetters: [DeadLetter]?
    private var lastProgress = Date()

    init(store: any Store, options: ImportOptions) {
        self.store = store
        self.options = options
        report.dryRun = options.dryRun
    }

    /// Starts the report again and keeps dead letters back until ``writeDeferredDeadLetters()``: pass 1
    /// may start over.
    func restart() {
        report = ImportReport()
        report.dryRun = options.dryRun
        deferredDeadLetters = []
    }

    func count(_ type: String, _ update: (inout ImportReport.Counts) -> Void) {
        report.count(type, update)
    }

    func note(_ resource: String, _ note: MappingNote) {
        report.note(resource, note)
    }

    /// Whether the import writes nothing.
    var isDryRun: Bool { options.dryRun }

    func readResource() {
        report.resourcesRead += 1
    }

    func addOutcomeValues(_ count: Int) {
        report.outcomeValues += count
    }

    /// Ends the report: coverage and the time it took.
    func finish(coverage: [String: [String: Int]]?, seconds: Double) -> ImportReport {
        report.coverage = coverage
        report.seconds = seconds
        return report
    }

    func count(_ status: ImportStatus, of type: String) {
        report.count(type) { counts in
            switch status {
            case .created: counts.created += 1
            case .updated: counts.updated += 1
            case .unchanged: counts.unchanged += 1
            }
        }
    }

    /// Counts what the store says a batch wrote.
    func count(_ summary: BatchSummary) {
        report.entitiesAdded += summary.added
        report.entitiesUpdated += summary.updated
        report.entitiesUnchanged += summary.unchanged
        report.entitiesDeleted += summary.deleted
    }

    /// The largest resource (as FHIR JSON) a dead letter keeps for a replay (`DeadLetterReplay`): a bound
    /// on what one failure adds to the store; a larger one is kept without it, its file to be imported again.
    static let largestKeptResource = 8 << 20

    /// Reports a resource (or file) that failed, and keeps it as a dead letter with `payload` (up to
    /// ``largestKeptResource``).
    func fail(type: String, origin: ImportOrigin, key: ResourceKey?, path: String?, _ message: String, payload: Element? = nil) {
        let message = MessageText.boundingQuotes(message)
        report.count(type) { $0.failed += 1 }
        report.failures.append(ImportReport.Failure(source: origin.source, entry: origin.entry, resource: key?.description, path: path, message: message))
        guard !options.dryRun, options.keepsDeadLetters else { return }
        var kept = payload.map { FHIRJSON.write($0) }
        var detail = [origin.source, origin.entry.map { "entry[\($0)]" }, path].compactMap { $0 }.joined(separator: " ")
        if let bytes = kept?.count, bytes > Self.largestKeptResource {
            kept = nil
            detail += " (the resource, \(bytes) bytes, is larger than the \(Self.largestKeptResource >> 20) MiB a dead letter keeps: import its file again)"
        }
        let letter = DeadLetter(
            system: options.mapping.sourceSystem, resourceType: key?.type ?? type, resourceID: key?.id,
            reason: message, detail: detail, payload: kept)
        guard deferredDeadLetters == nil else {
            deferredDeadLetters?.append(letter)
            return
        }
        var batch = StoreBatch()
        batch.deadLetter(letter)
        _ = try? store.apply(batch)
    }

    func failUnreadable(_ source: FHIRInput.Source, _ error: FHIRSyntaxError) {
        fail(type: "(unreadable)", origin: ImportOrigin(file: source.description, line: error.line, column: error.column), key: nil, path: nil, "\(error.format.rawValue) syntax error: \(error.message)")
    }

    /// Writes the dead letters of pass 1, which waited for it to end (it may start again).
    func writeDeferredDeadLetters() {
        guard let letters = deferredDeadLetters else { return }
        deferredDeadLetters = nil
        guard !letters.isEmpty else { return }
        var batch = StoreBatch()
        for letter in letters { batch.deadLetter(letter) }
        _ = try? store.apply(batch)
    }

    func tick(_ message: String, force: Bool = false) {
        guard let progress, force || Date().timeIntervalSince(lastProgress) >= 1 else { return }
        lastProgress = Date()
        progress(message)
    }
}
