import CareModel
import FHIR
import Foundation
import Mapping
import Store
import Synchronization

/// CareGate's front door: a store, the mapping set and the options, and the jobs over them.
///
/// GRDB's `DatabaseQueue` and Hummingbird's `Application` are the models: make one, then ask it for
/// work. Every job is set up here and nowhere else (the command line, the benchmarks, the fuzz
/// targets and the tests all go through it), so the options a job runs with cannot disagree with the
/// mappings or the store it runs against.
///
/// ```swift
/// let gateway = try Gateway(path: "care.sqlite", options: .init(timeZone: TimeZone(identifier: "America/Chicago")!))
/// let imported = try gateway.importFHIR(FHIRInput.sources(for: ["Fixtures/provider"]))
/// try gateway.recordOutcomes(CareKitJSON, file: "outcomes.json")
/// let exported = try gateway.export(to: .folder("outbox/"))
/// ```
///
/// Every job returns a report (``JobReport``): what it did, and whether any of it failed. The sync job
/// (`Gateway.sync`) is added by the `Sync` module, which holds the FHIR client.
public final class Gateway: Sendable {
    /// What every job of one gateway shares.
    public struct Options: Sendable {
        /// The provider system entity ids are made under (`MappingOptions/defaultSourceSystem`: none).
        public var sourceSystem: String
        /// The zone local times of the input are read in, and schedules are kept in.
        public var timeZone: TimeZone
        /// Validate every resource structurally before it is mapped; one with errors fails.
        public var strict = false
        /// How exports are written (format, Bundle type, request style, batch limit).
        public var export = ExportOptions()

        public init(sourceSystem: String = MappingOptions.defaultSourceSystem, timeZone: TimeZone = .current) {
            self.sourceSystem = sourceSystem
            self.timeZone = timeZone
        }

        /// The mapping options of these settings: the one place they are made.
        public var mapping: MappingOptions { MappingOptions(sourceSystem: sourceSystem, timeZone: timeZone) }
    }

    public let store: any Store
    public let options: Options
    private let loadedMappings: Mutex<MappingSet?>

    /// A gateway over an open store, with `mappings` (the default mappings, loaded when a job first
    /// needs them, when nil).
    public init(store: any Store, mappings: MappingSet? = nil, options: Options = Options()) {
        self.store = store
        self.loadedMappings = Mutex(mappings)
        self.options = options
    }

    /// The mapping set every job maps with.
    public func mappings() throws -> MappingSet {
        try loadedMappings.withLock { loaded in
            if let loaded { return loaded }
            let defaults = try MappingSet.defaults()
            loaded = defaults
            return defaults
        }
    }

    /// A gateway over the SQLite store at `path` (created when `creating` and missing), with the default
    /// mappings unless others are given.
    public convenience init(
        path: String, creating: Bool = true, mappings: MappingSet? = nil, options: Options = Options(),
        storeOptions: SQLiteStore.Options = SQLiteStore.Options()
    ) throws {
        let store = try SQLiteStore(path: path, mode: creating ? .createIfMissing : .existingOnly, options: storeOptions)
        self.init(store: store, mappings: mappings, options: options)
    }

    // MARK: Jobs

    /// The import job, set up and ready to run (for callers that watch its progress or its engine).
    ///
    /// - Parameters:
    ///   - dryRun: map and report, but write nothing.
    ///   - coverage: collects the elements of the input that no mapping reads.
    ///   - configure: adjusts the rest of the import's settings (batch sizes, resource types).
    public func importer(dryRun: Bool = false, coverage: CoverageCollector? = nil, configure: (inout ImportOptions) -> Void = { _ in }) throws -> Importer {
        var importOptions = ImportOptions(mapping: options.mapping)
        importOptions.dryRun = dryRun
        importOptions.strict = options.strict
        configure(&importOptions)
        let engine = MappingEngine(mappings: try mappings(), options: importOptions.mapping, coverage: coverage)
        return Importer(store: store, engine: engine, options: importOptions)
    }

    /// Imports FHIR input (files, folders, Bundles, NDJSON, in memory; JSON or XML) through the mappings.
    @discardableResult
    public func importFHIR(_ sources: [FHIRInput.Source], dryRun: Bool = false) throws -> ImportReport {
        try importer(dryRun: dryRun).run(sources)
    }

    /// Records outcomes an app made (CareKit 4.0 JSON: an array of `OCKOutcome`s or revision records),
    /// each new version queued for export, all of them or none, under the store's writer lease.
    @discardableResult
    public func recordOutcomes(_ data: Data, file: String, now: Date = Date()) throws -> AppOutcomeImport.Report {
        try recordOutcomes(AppOutcomeImport.decode(data, file: file), file: file, now: now)
    }

    /// Records outcomes already decoded (``AppOutcomeImport/decode(_:file:)``); `file` names them in errors.
    @discardableResult
    public func recordOutcomes(_ outcomes: [Outcome], file: String, now: Date = Date()) throws -> AppOutcomeImport.Report {
        try AppOutcomeImport.apply(outcomes, file: file, to: store, now: now)
    }

    /// The export job over the mapping set's export mapping.
    public func exporter(configure: (inout ExportOptions) -> Void = { _ in }) throws -> Exporter {
        let set = try mappings()
        guard let mapping = set.export else { throw ExportError.noExportMapping }
        var exportOptions = options.export
        // Outcomes of readings leave in the shape the set's LOINC <-> HealthKit table gives them.
        exportOptions.readingKinds = ReadingKinds(table: set.healthKit)
        configure(&exportOptions)
        return Exporter(store: store, mapping: mapping, activeTasks: set.activeTasks, options: exportOptions)
    }

    /// Writes the outbox's pending outcomes as FHIR Observations (with Provenance) to a file, a folder
    /// or standard output.
    @discardableResult
    public func export(to target: ExportTarget, now: Date = Date()) throws -> ExportReport {
        try exporter().run(to: target, now: now)
    }

    /// Sends the outbox's pending outcomes to a receiver (a FHIR server), `batchSize` per Bundle; with
    /// `audit`, each Bundle's patients are written into the audit trail (``PushAudit``).
    @discardableResult
    public func push(to receiver: any ExportReceiver, batchSize: Int = 100, now: Date = Date(), audit: PushAudit? = nil) throws -> ExportReport {
        try exporter().push(to: receiver, batchSize: batchSize, now: now, audit: audit)
    }
}

/// The one shape of a job's report: what the job did, and how a command that ran it ends.
public protocol JobReport: Sendable {
    /// 0 when the job did all it was asked; 1 when part of it failed (each failure is in the report).
    var exitStatus: Int32 { get }
}

extension ImportReport: JobReport {
    public var exitStatus: Int32 { failures.isEmpty ? 0 : 1 }
}

extension ExportReport: JobReport {
    public var exitStatus: Int32 { refused.isEmpty ? 0 : 1 }
}

extension AppOutcomeImport.Report: JobReport {
    /// An app's outcomes are stored all or none: a report means all of them were.
    public var exitStatus: Int32 { 0 }
}
