import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// The settings of one export.
public struct ExportOptions: Sendable {
    public enum Format: String, Sendable, CaseIterable { case json, xml, ndjson }
    public enum BundleType: String, Sendable, CaseIterable { case transaction, batch, collection }

    public var format: Format = .json
    public var bundleType: BundleType = .transaction
    /// Build and validate, write nothing and mark nothing.
    public var dryRun = false
    /// Exports per run; the rest wait for the next.
    public var limit = Int.max

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
    /// The file written, if any.
    public var path: String?
    public var dryRun = false
    public var seconds: Double = 0
}

/// The export job: the outbox's pending outcome versions through the export mapping to FHIR
/// Observations, validated, written, and marked sent.
///
/// Crash safety with a file target: the output is written to a hidden `.partial` file first; the
/// transaction that marks its entries sent also records the file's id as the target's last export
/// (a checkpoint); only then is the file renamed into place. A run that finds a `.partial` file left by
/// a killed one renames it when its id was recorded (the entries were marked sent) and deletes it
/// otherwise (they are still pending and go out now). So an outcome is pending or sent, never lost, and
/// never written into two files.
public final class Exporter {
    public let store: any Store
    public let exporter: OutcomeExporter
    public let options: ExportOptions
    private let validator = StructureValidator(options: ValidationOptions(strict: true))

    public init(store: any Store, mapping: ExportMapping, options: ExportOptions) {
        self.store = store
        self.exporter = OutcomeExporter(mapping: mapping)
        self.options = options
    }

    /// The checkpoint "server" under which each target's last committed export id is kept.
    static let checkpointServer = "caregate-export"

    public func run(to target: ExportTarget, now: Date = Date()) throws -> ExportReport {
        let started = Date()
        var report = ExportReport()
        report.dryRun = options.dryRun
        if !options.dryRun { try recover(target) }

        let due = try store.dueOutboxEntries(at: now, limit: options.limit).filter { $0.entityKind == .outcome }
        guard !due.isEmpty else {
            report.seconds = Date().timeIntervalSince(started)
            return report
        }
        // One Observation per outcome, from its newest queued version; the older entries go with it.
        var newest: [String: OutboxEntry] = [:]
        var order: [String] = []
        for entry in due {
            if newest[entry.entityID] == nil { order.append(entry.entityID) }
            if (newest[entry.entityID]?.id ?? .min) < (entry.id ?? .min) { newest[entry.entityID] = entry }
        }
        var batch = StoreBatch(date: now)
        var resources: [(observation: ExportedObservation, entry: OutboxEntry)] = []
        var includedIDs: Set<String> = []
        for outcomeID in order {
            guard let entry = newest[outcomeID] else { continue }
            do {
                let exported = try exporter.export(try input(for: entry))
                let problems = validator.validate(exported.observation).errors + (exported.provenance.map { validator.validate($0).errors } ?? [])
                if !problems.isEmpty {
                    let outcome = ValidationReport(issues: problems).operationOutcome(source: "Observation/\(exported.id)")
                    refuse(entry, outcomeID: outcomeID, reason: "the exported Observation is invalid: \(problems[0].diagnostics)", payload: FHIRJSON.write(outcome), into: &batch, report: &report)
                    continue
                }
                resources.append((exported, entry))
                includedIDs.insert(outcomeID)
            } catch let refusal as ExportRefusal {
                refuse(entry, outcomeID: outcomeID, reason: refusal.reason, payload: nil, into: &batch, report: &report)
            } catch let refusal as ExportInputError {
                refuse(entry, outcomeID: outcomeID, reason: refusal.description, payload: nil, into: &batch, report: &report)
            }
        }
        for entry in due where includedIDs.contains(entry.entityID) {
            if let id = entry.id { batch.transition(outboxEntry: id, .sent(at: now)) }
            report.sent += 1
        }
        report.observations = resources.count
        guard !options.dryRun else {
            report.seconds = Date().timeIntervalSince(started)
            return report
        }
        let exportID = UUID().canonicalString.lowercased()
        let output = render(resources.map(\.observation), exportID: exportID, now: now)
        switch target {
        case .standardOutput:
            if !resources.isEmpty { FileHandle.standardOutput.write(output) }
            try store.apply(batch)
        case .folder(let folder):
            let name = "export-\(Self.fileTime(now))-\(exportID.prefix(8)).\(options.format == .ndjson ? "ndjson" : options.format.rawValue)"
            let final = URL(fileURLWithPath: folder).appendingPathComponent(name).path
            try commit(output, to: final, exportID: exportID, batch: batch, checkpointKey: folder, write: !resources.isEmpty)
            if !resources.isEmpty { report.path = final }
        case .file(let path):
            try commit(output, to: path, exportID: exportID, batch: batch, checkpointKey: path, write: !resources.isEmpty)
            if !resources.isEmpty { report.path = path }
        }
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    // MARK: - Building

    /// An outbox entry whose entity cannot be found as it was queued.
    struct ExportInputError: Error, CustomStringConvertible {
        let description: String
    }

    /// The outcome version an entry names, with its task version and patient.
    private func input(for entry: OutboxEntry) throws -> OutcomeExportInput {
        guard let outcome = try store.history(.outcome, id: entry.entityID).compactMap({ version -> Outcome? in
            if case .outcome(let outcome) = version, outcome.metadata.uuid == entry.entityUUID { return outcome }
            return nil
        }).first else {
            throw ExportInputError(description: "the queued version \(entry.entityUUID) of outcome \(entry.entityID) is not in the store")
        }
        guard let taskID = outcome.taskID, let task = try store.history(.task, id: taskID).compactMap({ version -> CareTask? in
            if case .task(let task) = version, task.metadata.uuid == outcome.taskUUID { return task }
            return nil
        }).first else {
            throw ExportInputError(description: "its task version \(outcome.taskUUID) is not in the store")
        }
        var patientID = task.metadata.userInfo?[UserInfoKey.patient]
        if patientID == nil, let planID = task.carePlanID {
            patientID = try store.carePlans(EntityQuery(ids: [planID])).first?.patientID
        }
        let patient = try patientID.flatMap { try store.patients(EntityQuery(ids: [$0])).first }
        return OutcomeExportInput(outcome: outcome, task: task, patient: patient)
    }

    private func refuse(_ entry: OutboxEntry, outcomeID: String, reason: String, payload: Data?, into batch: inout StoreBatch, report: inout ExportReport) {
        guard let id = entry.id else { return }
        batch.transition(outboxEntry: id, .failed(error: reason, retryAt: nil, at: batch.date ?? Date()))
        batch.deadLetter(DeadLetter(
            system: OutboxEntry.provider, resourceType: "Observation", resourceID: OutcomeExporter.observationID(of: outcomeID),
            outboxEntryID: id, reason: reason, payload: payload))
        report.refused.append((id, outcomeID, reason))
    }

    /// The Observations (and Provenances) in the chosen format: a Bundle, or NDJSON.
    private func render(_ observations: [ExportedObservation], exportID: String, now: Date) -> Data {
        var resources: [Element] = []
        for exported in observations {
            resources.append(exported.observation)
            if let provenance = exported.provenance { resources.append(provenance) }
        }
        if options.format == .ndjson { return FHIRJSON.writeNDJSON(resources) }
        var entries: [Element] = []
        for resource in resources {
            let type = resource.resourceType ?? "Observation"
            let id = resource.childValue("id") ?? ""
            var children = [
                Element(name: "fullUrl", value: "urn:uuid:\(Self.fullURLUUID(type: type, id: id))"),
                Element(name: "resource", resourceType: type, children: resource.children),
            ]
            if options.bundleType != .collection {
                children.append(Element(name: "request", children: [
                    Element(name: "method", value: "PUT"), Element(name: "url", value: "\(type)/\(id)"),
                ]))
            }
            entries.append(Element(name: "entry", children: children))
        }
        let bundle = Element.resource("Bundle", children: [
            Element(name: "id", value: exportID),
            Element(name: "type", value: options.bundleType.rawValue),
            Element(name: "timestamp", value: FHIRDateFormat.instant(now)),
        ] + entries)
        return options.format == .xml ? FHIRXML.write(bundle, pretty: true) : FHIRJSON.write(bundle, pretty: true)
    }

    /// A stable urn:uuid for a resource's fullUrl (name-based, from its type and id).
    private static func fullURLUUID(type: String, id: String) -> String {
        let hash = ContentHash.of("\(type)/\(id)")
        let hex = Array(hash.prefix(32))
        guard hex.count == 32 else { return UUID().canonicalString.lowercased() }
        let parts = [hex[0..<8], hex[8..<12], hex[12..<16], hex[16..<20], hex[20..<32]].map { String($0) }
        return parts.joined(separator: "-")
    }

    private static func fileTime(_ date: Date) -> String {
        FHIRDateFormat.instant(date).filter { $0.isNumber }
    }

    // MARK: - Committing

    /// Writes `data` to a hidden partial file, marks the batch sent with `exportID` as the target's last
    /// export, then renames the file into place.
    private func commit(_ data: Data, to final: String, exportID: String, batch: StoreBatch, checkpointKey: String, write: Bool) throws {
        var batch = batch
        guard write else {
            if !batch.isEmpty { try store.apply(batch) }
            return
        }
        let partial = Self.partialPath(for: final, exportID: exportID)
        do {
            try data.write(to: URL(fileURLWithPath: partial))
        } catch {
            throw ExportError.cannotWrite(path: final, reason: error.localizedDescription)
        }
        FaultPoint.pause(at: "export-written")
        batch.setCheckpoint(SyncCheckpoint(server: Self.checkpointServer, resourceType: checkpointKey, cursor: "\(exportID) \(final)"))
        do {
            try store.apply(batch)
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
        FaultPoint.pause(at: "export-committed")
        try moveIntoPlace(partial, final)
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
        let committed = try store.checkpoint(server: Self.checkpointServer, resourceType: key)?.cursor
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) && name.hasSuffix(".partial") {
            try settle(URL(fileURLWithPath: folder).appendingPathComponent(name).path, committed: committed)
        }
    }

    /// A partial file: renamed into place when its export was committed, deleted when not.
    private func settle(_ partial: String, committed: String?) throws {
        let name = URL(fileURLWithPath: partial).lastPathComponent
        let trimmed = name.dropFirst().dropLast(".partial".count)
        guard let dot = trimmed.lastIndex(of: ".") else { return }
        let exportID = String(trimmed[trimmed.index(after: dot)...])
        let final = URL(fileURLWithPath: partial).deletingLastPathComponent().appendingPathComponent(String(trimmed[..<dot])).path
        if committed == "\(exportID) \(final)" {
            try moveIntoPlace(partial, final)
        } else {
            try? FileManager.default.removeItem(atPath: partial)
        }
    }
}

/// Errors of the export job a user can cause.
public enum ExportError: Error, CustomStringConvertible {
    case cannotWrite(path: String, reason: String)
    case noExportMapping

    public var description: String {
        switch self {
        case .cannotWrite(let path, let reason): return "cannot write the export to \(path): \(reason)"
        case .noExportMapping: return "no export mapping (a mapping file with `export: outcome`) is in force"
        }
    }
}

/// Test-only pauses at named points of a job (`CAREGATE_FAULT_PAUSE=<point>`), so that a test can kill the
/// process exactly there. It prints `paused at <point>` on standard error and sleeps; unset, it does nothing.
enum FaultPoint {
    static let requested = ProcessInfo.processInfo.environment["CAREGATE_FAULT_PAUSE"]

    static func pause(at point: String) {
        guard requested == point else { return }
        FileHandle.standardError.write(Data("paused at \(point)\n".utf8))
        while true { sleep(60) }
    }
}
