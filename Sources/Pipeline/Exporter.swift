import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// The settings of one export.
public struct ExportOptions: Sendable {
    public enum Format: String, Sendable, CaseIterable { case json, xml, ndjson }
    public enum BundleType: String, Sendable, CaseIterable { case transaction, batch, collection }
    /// PUT by the id derived from the outcome's id, or conditional create/update on the derived identifier.
    public enum Request: String, Sendable, CaseIterable { case put, conditional }

    public var format: Format = .json
    public var bundleType: BundleType = .transaction
    /// Build and validate, write nothing and mark nothing.
    public var dryRun = false
    /// How Bundle entries ask the server to store each Observation (`ExportRendering`).
    public var request: Request = .put
    /// Exports per run; the rest wait for the next.
    public var limit = Int.max
    /// The LOINC <-> HealthKit rows that shape outcomes of readings as vital-sign Observations
    /// (`VitalSignExport`).
    public var readingKinds = ReadingKinds([])

    public init() {}
}

/// Where an export goes.
public enum ExportTarget: Sendable, Equatable {
    /// A new file in this folder per run (`export-<time>-<id>.json`).
    case folder(String)
    /// This file, replaced by each run that has something to write.
    case file(String)
    /// Standard output.
    case standardOutput
}

/// What an export did.
public struct ExportReport: Sendable {
    /// Outbox entries written (an outcome edited twice before an export is written once, as its last
    /// version: both entries count).
    public var sent = 0
    /// Observations written.
    public var observations = 0
    /// Outcomes refused (no FHIR form, or invalid): dead letters.
    public var refused: [(entryID: Int64, outcomeID: String, reason: String)] = []
    /// Outcomes a receiver stored (``Exporter/push(to:batchSize:now:audit:)``).
    public var acknowledged = 0
    /// Outcomes a receiver refused, or asked to send again later.
    public var notTaken: [(entryID: Int64, outcomeID: String, reason: String, retry: Bool)] = []
    /// Bundles sent to a receiver.
    public var requests = 0
    /// Why Bundles got no answer at all (their outcomes wait for a later run).
    public var unanswered: [String] = []
    /// The file written, if any.
    public var path: String?
    public var dryRun = false
    public var seconds: Double = 0
}

/// The export job: the outbox's pending outcome versions through the export mapping to FHIR
/// Observations, validated, written, and marked sent.
///
/// Crash safety with a file target: the output is written to a hidden `.partial` file first; the
/// transaction that marks its entries sent also records the export as the target's last
/// (`ExportProgress`); only then is the file renamed into place. A run that finds a `.partial` file left by
/// a killed one renames it when its id was recorded (the entries were marked sent) and deletes it
/// otherwise (they are still pending and go out now). So an outcome is pending or sent, never lost, and
/// never written into two files. Each of those steps is reported to ``onPhase`` as it is done.
public final class Exporter {
    public let store: any Store
    public let exporter: OutcomeExporter
    public let options: ExportOptions
    private let validator = StructureValidator(options: ValidationOptions(strict: true))
    /// Survey tasks' outcomes go out as QuestionnaireResponses (``SurveyExport``).
    private let surveys: SurveyExport

    /// A step of an export to a file or folder, in the order a run takes them: what a run killed right
    /// after it leaves, and what the next run makes of that.
    public enum Phase: Sendable, Equatable {
        /// A killed run left the hidden file `partial`: its export was committed, so it was renamed into
        /// place (`placed`); or it was not, so it was deleted and its outcomes go out in this run.
        case recovered(partial: String, placed: Bool)
        /// Every Observation of the run (`observations`) is in the hidden file `partial`; nothing is
        /// marked sent yet. Killed now, the outcomes stay pending and the next run deletes the file.
        case written(partial: String, observations: Int)
        /// The outbox entries (`sent`) are marked sent, and the export recorded as the target's last, in
        /// one transaction; the file is not in place yet. Killed now, the next run renames it into place.
        case committed(partial: String, sent: Int)
        /// The file is in place at `path`: the run is done.
        case placed(path: String)
    }

    /// Told each ``Phase`` of an export to a file or folder as it is done (on the thread that runs the
    /// export); the command line shows them with `--verbose`.
    public var onPhase: ((Phase) -> Void)?

    /// Why the outcomes of a patient wait, when they do (consent required and not given: the sync job
    /// sets it from ``ConsentGate``); nil: nothing waits. A held outcome fails with this reason and a
    /// retry due at once, so `caregate outbox` lists it with the reason and the next run tries again;
    /// no dead letter is kept.
    public var consentHold: (@Sendable (_ patientID: String) -> String?)?

    /// `activeTasks`: what active tasks' outcomes become (`ActiveTaskMapping`); without it, every
    /// outcome is a generic Observation.
    public init(store: any Store, mapping: ExportMapping, activeTasks: ActiveTaskMapping? = nil, options: ExportOptions) {
        self.store = store
        var exporter = OutcomeExporter(mapping: mapping, activeTasks: activeTasks)
        exporter.vitalSigns = VitalSignExport(kinds: options.readingKinds)
        self.exporter = exporter
        self.options = options
        surveys = SurveyExport(questionnaires: SurveyQuestionnaireCache(store: store), exporter: exporter)
    }

    /// Outcomes read from the store and built per run of the pipeline.
    static let runSize = 512

    /// The export holds the store's writer lease from reading the outbox to committing its receipts.
    public func run(to target: ExportTarget, now: Date = Date()) throws -> ExportReport {
        let started = Date()
        var report = try store.withWriterLease("caregate export") { try export(to: target, now: now) }
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    private func export(to target: ExportTarget, now: Date) throws -> ExportReport {
        var report = ExportReport()
        report.dryRun = options.dryRun
        if !options.dryRun { try recover(target) }

        let (due, newest, entriesOf) = try pending(at: now)
        guard !due.isEmpty else { return report }
        let exportID = UUID().canonicalString.lowercased()
        let rendering = ExportRendering(options: options, identifierSystem: exporter.mapping.identifierSystem, exportID: exportID, now: now)
        let destination: ExportSink.Destination
        switch (options.dryRun, target) {
        case (true, _): destination = .nowhere
        case (false, .standardOutput): destination = .standardOutput
        case (false, .folder(let folder)):
            let name = "export-\(Self.fileTime(now))-\(exportID.prefix(8)).\(options.format.rawValue)"
            let final = URL(fileURLWithPath: folder).appendingPathComponent(name).path
            destination = .file(partial: Self.partialPath(for: final, exportID: exportID), final: final, target: folder)
        case (false, .file(let path)):
            destination = .file(partial: Self.partialPath(for: path, exportID: exportID), final: path, target: path)
        }
        let sink = ExportSink(destination, head: rendering.head(), tail: rendering.tail())
        var batch = StoreBatch(date: now)
        var included: Set<String> = []
        // The file is one Bundle: each activity's PATCH once in it.
        var patches = ExportRendering.ActivityPatches()
        do {
            try build(newest, rendering: rendering) { entry, built in
                switch built {
                case .success(let unplaced):
                    let rendered = patches.place(unplaced)
                    // The separator between entries depends on what was written before; appended apart,
                    // so that the entry's bytes are not copied to join them.
                    if sink.started { try sink.append(rendering.separator) }
                    try sink.append(rendered.bytes)
                    included.insert(entry.entityID)
                    report.observations += 1
                case .failure(let refusal):
                    refuse(entry, with: entriesOf[entry.entityID] ?? [], refusal, into: &batch, report: &report)
                }
            }
            try sink.finish()
        } catch {
            sink.discard()
            throw error
        }
        for entry in due where included.contains(entry.entityID) {
            if let id = entry.id { batch.transition(outboxEntry: id, .sent(at: now)) }
            report.sent += 1
        }
        guard !options.dryRun else { return report }
        switch destination {
        case .file(let partial, let final, let target) where sink.started:
            onPhase?(.written(partial: partial, observations: report.observations))
            try commit(partial: partial, to: final, exportID: exportID, batch: consume batch, target: target, sent: report.sent)
            report.path = final
        default:
            if !batch.isEmpty { try store.apply(batch) }
        }
        return report
    }

    /// The due outbox entries of outcomes, per outcome the newest (in queue order), and each outcome's
    /// due entries: an outcome edited several times before an export goes out once, as its last
    /// version, and its older entries with it.
    func pending(at now: Date) throws -> (due: [OutboxEntry], newest: [OutboxEntry], entriesOf: DueEntries) {
        let due = try store.dueOutboxEntries(at: now, limit: options.limit).filter { $0.entityKind == .outcome }
        let entriesOf = DueEntries(due)
        return (due, entriesOf.newest, entriesOf)
    }

    /// Due outbox entries grouped by outcome, in queue order: one dictionary lookup per entry (an
    /// export reads every due entry before it builds anything).
    struct DueEntries {
        private var position: [String: Int] = [:]
        private var groups: [[OutboxEntry]] = []

        init(_ due: [OutboxEntry]) {
            position.reserveCapacity(due.count)
            for entry in due {
                if let index = position[entry.entityID] {
                    groups[index].append(entry)
                } else {
                    position[entry.entityID] = groups.count
                    groups.append([entry])
                }
            }
        }

        /// The due entries of outcome `outcomeID`, in queue order.
        subscript(outcomeID: String) -> [OutboxEntry]? {
            position[outcomeID].map { groups[$0] }
        }

        /// Per outcome, in the order each first appears, its entry of the highest id.
        var newest: [OutboxEntry] {
            groups.compactMap { $0.max { ($0.id ?? .min) < ($1.id ?? .min) } }
        }
    }

    // MARK: - Building

    /// Why one outcome was refused: the dead letter's reason and, for an invalid one, its OperationOutcome.
    struct Refusal: Error, Sendable {
        let reason: String
        let payload: Data?
        /// Not refused for good: tried again after this many seconds (a survey waiting for its Questionnaire).
        var retryAfter: TimeInterval? = nil
    }

    /// Builds, validates and renders the outcomes of `entries` on every core, a run at a time (the store
    /// read for the next run while others are built), handing each result to `consume` in order.
    func build(
        _ entries: [OutboxEntry], rendering: ExportRendering, consume: (OutboxEntry, Result<ExportRendering.Rendered, Refusal>) throws -> Void
    ) throws {
        // Activity completion goes out as a PATCH entry, which only transaction and batch Bundles carry.
        let patchesActivities = exporter.mapping.activityStatus && options.format != .ndjson && options.bundleType != .collection
        let loader = ExportInputLoader(store: store, checksCompletion: patchesActivities)
        let runs = stride(from: 0, to: entries.count, by: Self.runSize).map { Array(entries[$0..<min($0 + Self.runSize, entries.count)]) }
        let (exporter, validator, surveys, hold) = (self.exporter, self.validator, self.surveys, self.consentHold)
        // Each run is read from the store, built, validated and rendered on a worker; the results are
        // handed over in order here.
        try OrderedParallelMap.run(runs.makeIterator(), transform: { run -> Result<[(OutboxEntry, Result<ExportRendering.Rendered, Refusal>)], any Error> in
            Result {
                try zip(run, loader.load(run)).map { entry, loaded in
                    (entry, Self.held(loaded.input, by: hold) ?? Self.build(loaded.input, exporter: exporter, validator: validator, surveys: surveys).map {
                        var rendered = rendering.render($0, outcomeID: entry.entityID, completing: loaded.completes)
                        rendered.patientID = try? loaded.input.get().patientID
                        return rendered
                    })
                }
            }
        }, consume: { built in
            for (entry, result) in try built.get() { try consume(entry, result) }
        })
    }

    /// The refusal of an outcome whose patient's data waits for consent (``consentHold``), else nil.
    private static func held<T>(_ input: Result<OutcomeExportInput, ExportInputLoader.MissingInput>, by hold: (@Sendable (String) -> String?)?) -> Result<T, Refusal>? {
        guard let hold, case .success(let loaded) = input, let patientID = loaded.patientID, let reason = hold(patientID)
        else { return nil }
        return .failure(Refusal(reason: reason, payload: nil, retryAfter: 0))
    }

    /// One outcome's Observation (and Provenance), validated; or why it is refused.
    private static func build(
        _ input: Result<OutcomeExportInput, ExportInputLoader.MissingInput>, exporter: OutcomeExporter, validator: StructureValidator,
        surveys: SurveyExport
    ) -> Result<ExportedObservation, Refusal> {
        do {
            let loaded = try input.get()
            let exported = try surveys.export(loaded) ?? exporter.export(loaded)
            let type = exported.observation.resourceType ?? "Observation"
            let problems = ([exported.observation] + exported.companions.map(\.resource) + [exported.provenance].compactMap { $0 })
                .flatMap { validator.validate($0).errors }
            guard problems.isEmpty else {
                let outcome = ValidationReport(issues: problems).operationOutcome(source: "\(type)/\(exported.id)")
                return .failure(Refusal(reason: "the exported \(type) is invalid: \(problems[0].diagnostics)", payload: FHIRJSON.write(outcome)))
            }
            return .success(exported)
        } catch let waiting as SurveyExport.Waiting {
            return .failure(Refusal(reason: waiting.description, payload: nil, retryAfter: SurveyExport.retrySeconds))
        } catch let refusal as ExportRefusal {
            return .failure(Refusal(reason: refusal.reason, payload: nil))
        } catch {
            return .failure(Refusal(reason: "\(error)", payload: nil))
        }
    }

    /// Fails the outcome of `entry` for good, with every due entry queued for it (`others`: its older
    /// versions must not go out in its place), and keeps a dead letter.
    /// A refusal with ``Refusal/retryAfter`` is not for good: the entries fail until then, and no dead
    /// letter is kept.
    func refuse(_ entry: OutboxEntry, with others: [OutboxEntry], _ refusal: Refusal, into batch: inout StoreBatch, report: inout ExportReport) {
        guard let retryAfter = refusal.retryAfter else {
            refuse(entry, with: others, reason: refusal.reason, payload: refusal.payload, into: &batch, report: &report)
            return
        }
        let now = batch.date ?? Date()
        for id in Set((others + [entry]).compactMap(\.id)).sorted() {
            batch.transition(outboxEntry: id, .failed(error: refusal.reason, retryAt: now.addingTimeInterval(retryAfter), at: now))
        }
        report.notTaken.append((entry.id ?? 0, entry.entityID, refusal.reason, true))
    }

    func refuse(_ entry: OutboxEntry, with others: [OutboxEntry], reason: String, payload: Data?, into batch: inout StoreBatch, report: inout ExportReport) {
        guard let id = entry.id else { return }
        let outcomeID = entry.entityID
        for other in others where other.id != id {
            if let otherID = other.id { batch.transition(outboxEntry: otherID, .failed(error: reason, retryAt: nil, at: batch.date ?? Date())) }
        }
        batch.transition(outboxEntry: id, .failed(error: reason, retryAt: nil, at: batch.date ?? Date()))
        batch.deadLetter(DeadLetter(
            system: OutboxEntry.provider, resourceType: "Observation", resourceID: OutcomeExporter.observationID(of: outcomeID),
            outboxEntryID: id, reason: reason, payload: payload))
        report.refused.append((id, outcomeID, reason))
    }

    private static func fileTime(_ date: Date) -> String {
        FHIRDateFormat.instant(date).filter { $0.isNumber }
    }

    // MARK: - Committing

    /// Marks the batch sent with `exportID` as the target's last export, then renames the partial file
    /// (written in full) into place.
    private func commit(partial: String, to final: String, exportID: String, batch: consuming StoreBatch, target: String, sent: Int) throws {
        // Consumed, so that recording the progress does not copy a batch of every entry sent.
        batch.recordExportProgress(ExportProgress(target: target, exportID: exportID, file: final, committedDate: batch.date ?? Date()))
        do {
            try store.apply(batch)
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
        onPhase?(.committed(partial: partial, sent: sent))
        try moveIntoPlace(partial, final)
        onPhase?(.placed(path: final))
    }

    private func moveIntoPlace(_ partial: String, _ final: String) throws {
        if rename(partial, final) != 0 {
            throw ExportError.cannotWrite(path: final, reason: String(cString: strerror(errno)))
        }
    }

    /// `<folder>/.<name>.<exportID>.partial`
    static func partialPath(for final: String, exportID: String) -> String {
        let url = URL(fileURLWithPath: final)
        return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(exportID).partial").path
    }

    /// Finishes or discards what a killed run left for `target`: the partial files of its folder (of any
    /// export into it), or of its file.
    private func recover(_ target: ExportTarget) throws {
        let (folder, prefix, key): (String, String, String)
        switch target {
        case .standardOutput:
            return
        case .folder(let path):
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
                throw ExportError.cannotWrite(path: path, reason: "no such folder")
            }
            guard isFolder.boolValue else { throw ExportError.cannotWrite(path: path, reason: "not a folder") }
            (folder, prefix, key) = (path, ".", path)
        case .file(let path):
            let url = URL(fileURLWithPath: path)
            (folder, prefix, key) = (url.deletingLastPathComponent().path, ".\(url.lastPathComponent).", path)
        }
        let committed = try store.exportProgress(target: key)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) && name.hasSuffix(".partial") {
            try settle(URL(fileURLWithPath: folder).appendingPathComponent(name).path, committed: committed)
        }
    }

    /// A partial file: renamed into place when its export was committed, deleted when not.
    private func settle(_ partial: String, committed: ExportProgress?) throws {
        let name = URL(fileURLWithPath: partial).lastPathComponent
        let trimmed = name.dropFirst().dropLast(".partial".count)
        guard let dot = trimmed.lastIndex(of: ".") else { return }
        let exportID = String(trimmed[trimmed.index(after: dot)...])
        let final = URL(fileURLWithPath: partial).deletingLastPathComponent().appendingPathComponent(String(trimmed[..<dot])).path
        if let committed, committed.exportID == exportID, committed.file == final {
            try moveIntoPlace(partial, final)
            onPhase?(.recovered(partial: partial, placed: true))
        } else {
            try? FileManager.default.removeItem(atPath: partial)
            onPhase?(.recovered(partial: partial, placed: false))
        }
    }
}

extension Exporter.Phase: CustomStringConvertible {
    /// One line that says what was done.
    public var description: String {
        switch self {
        case .recovered(let partial, true): return "renamed into place the file of a killed run whose export was committed: \(partial)"
        case .recovered(let partial, false): return "deleted the file of a killed run whose export was not committed (its outcomes go out now): \(partial)"
        case .written(let partial, let observations): return "wrote \(observations) Observation(s) to \(partial)"
        case .committed(_, let sent): return "marked \(sent) outbox entr\(sent == 1 ? "y" : "ies") sent"
        case .placed(let path): return "renamed into place: \(path)"
        }
    }
}

/// Errors of the export job a user can cause.
public enum ExportError: Error, CustomStringConvertible {
    case cannotWrite(path: String, reason: String)
    case noExportMapping
    case notSendable(reason: String)

    public var description: String {
        switch self {
        case .cannotWrite(let path, let reason): return "cannot write the export to \(path): \(reason)"
        case .noExportMapping: return "no export mapping (a mapping file with `export: outcome`) is in force"
        case .notSendable(let reason): return "cannot send this export to a server: \(reason)"
        }
    }
}

extension OutcomeExportInput {
    /// The id of the outcome's patient: its task's care plan's, else the patient its task's linkage names.
    var patientID: String? { patient?.id ?? task.metadata.linkage.patientID }
}
