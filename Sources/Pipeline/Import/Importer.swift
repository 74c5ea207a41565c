import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// The settings of one import.
public struct ImportOptions: Sendable {
    public var mapping: MappingOptions
    /// Map and count, but write nothing.
    public var dryRun = false
    /// Validate every resource structurally first; one with errors fails instead of being mapped.
    public var strict = false
    /// Outcome-making resources (Observations) mapped per store batch.
    public var outcomeBatchSize = 1000
    /// Other resources mapped and written per chunk.
    public var entityChunkSize = 5_000
    /// Input up to this many bytes (the files' sizes) is read once and held; larger input is read
    /// twice, the Observations streamed, so that memory does not grow with it.
    public var holdInputUpTo = 256 << 20
    /// When set, only resources of these types are imported; the others are counted as skipped (a
    /// sync from a folder takes the configuration's `resources:` this way).
    public var resourceTypes: Set<String>?
    /// Where a Questionnaire that survey tasks ask is looked for when neither the input nor the store
    /// holds it (a sync's server or folder); what it finds is kept.
    public var questionnaireLookup: (any QuestionnaireLookup)?
    /// Whether a resource that fails is kept as a new dead letter (it is counted in the report either
    /// way). A replay of dead letters (``DeadLetterReplay``) sets it off: it settles the letters it replays.
    public var keepsDeadLetters = true

    public init(mapping: MappingOptions) {
        self.mapping = mapping
    }
}

/// The import job: FHIR input (files, folders, Bundles, NDJSON; JSON or XML) through the mappings into
/// the store.
///
/// The import runs as stages, each a type of its own in this folder, in this order:
///
/// 1. `InputReader` reads the input (Bundles unpacked, DELETE entries taken as deletions), and
///    `InputIndexing` (pass 1) indexes every resource a mapping can read (`MappingSet/readableTypes`)
///    except the outcome-making ones (Observations, the bulk of any export), which are counted.
/// 2. `MappingStage` maps the indexed resources into patients, plans, contacts and tasks on worker
///    threads, a chunk (``ImportOptions/entityChunkSize``) at a time; `Reconciliation` compares them
///    with the store (created, updated, unchanged, no longer made) and `EntityWriter` writes each chunk
///    in one transaction (resource by resource when that fails, so that a bad resource fails alone, kept
///    as a dead letter), then the deletions.
/// 3. Pass 2 maps the Observations, each to an outcome value of the task occurrence it belongs to:
///    `OutcomePlanner` plans a batch while `PipelinedOutcomeWriter` writes the one before. Before it,
///    `StoredLogUpgrade` gives the stored logs of the input's patients a version holding their new reading days.
/// 4. `ImportLedger` keeps the ``ImportReport`` and the dead letters all along.
///
/// Input up to ``ImportOptions/holdInputUpTo`` is read once and its Observations held; larger input is
/// read again and its Observations streamed, and the resources it indexes are kept as the place of their
/// NDJSON line in the file (JSON for Bundle entries) rather than as trees, so that memory holds the index
/// and one batch, never a whole NDJSON file. A large JSON Bundle is taken a run of entries at a time as
/// it is read, never as one tree.
///
/// An import is idempotent: entities carry a content hash, so the same input again changes nothing,
/// and changed content makes new versions of only what changed. A resource that no longer makes an
/// entity it made before (a CarePlan without one of its activities) tombstones it, as do
/// entered-in-error resources and Bundle entries with `request.method` DELETE.
public final class Importer {
    public let store: any Store
    public let engine: MappingEngine
    public let options: ImportOptions
    /// Receives progress lines on long imports.
    public var progress: ((String) -> Void)?

    public init(store: any Store, engine: MappingEngine, options: ImportOptions) {
        self.store = store
        self.engine = engine
        self.options = options
    }

    /// Imports `sources` and returns the report.
    ///
    /// The whole import holds the store's writer lease (`Store/withWriterLease(_:_:)`): it plans from
    /// what it reads, so another writer between its reads and its writes would make it plan wrong. At its
    /// safe points (while it reads its input, after an entity chunk, before planning an outcome batch, the
    /// batch before written) it lets an app's waiting push in (`Store/yieldToAppends()`): a push appends
    /// outcome versions only, and the import plans nothing after such a point from what it read before it.
    ///
    /// - Throws: only what stops the whole import (the store failing); bad input is reported per resource.
    public func run(_ sources: [FHIRInput.Source]) throws -> ImportReport {
        try store.withWriterLease("caregate import") { try importing(sources) }
    }

    /// The deletions the input asks for, until they are written: the entity writer takes those of
    /// resources that make entities, outcome planning those of outcome-making resources.
    private var pendingDeletions: [(key: ResourceKey, origin: ImportOrigin)] = []

    private func importing(_ sources: [FHIRInput.Source]) throws -> ImportReport {
        let started = Date()
        let ledger = ImportLedger(store: store, options: options)
        ledger.progress = progress

        // Pass 1: index what references can point at.
        let input = try InputIndexing(store: store, engine: engine, options: options, ledger: ledger).run(sources)
        let (index, origins, outcomeResources) = (input.index, input.origins, input.outcomeResources)
        let (holds, readable, firstOutcomeDays, logDays) = (input.holds, input.readable, input.firstOutcomeDays, input.logDays)
        var held = input.held
        pendingDeletions = input.deletions
        ledger.tick("indexed \(index.count) resources (\(outcomeResources) more to map as outcomes\(input.unread > 0 ? ", \(input.unread) no mapping reads" : ""))", force: true)
        // Its parts are held apart from here: the index and the held resources are freed off this thread
        // (`releaseElsewhere`) once their last use is over, which `input` would otherwise outlive.
        releaseElsewhere(consume input)
        // The input's Questionnaires are kept first: the survey tasks mapped next name their versions.
        let surveys = SurveyQuestionnaires(store: store, options: options, ledger: ledger)
        surveys.keep(from: index)

        // The tasks Observations can belong to; an input without any needs none (the store may hold millions).
        let catalog = outcomeResources > 0 ? try ImportTaskCatalog(store: store) : ImportTaskCatalog()
        // Logs stored with a 1900 start get a version starting after their last reading, before any is placed.
        if outcomeResources > 0 {
            try StoredLogUpgrade(store: store, options: options, ledger: ledger).run(patientIDs: Set(firstOutcomeDays.keys), logDays: logDays, catalog: catalog)
        }
        let mapping = MappingStage(engine: engine, index: index, catalog: catalog, sourceSystem: options.mapping.sourceSystem)
        let reconciliation = Reconciliation(store: store, sourceSystem: options.mapping.sourceSystem, ledger: ledger)
        let entityWriter = EntityWriter(store: store, engine: engine, options: options, ledger: ledger)

        // Map and write the entities, but for the last chunk, which is written once the workers are mapping
        // the outcome-making resources (which need the catalog, complete then, and nothing written).
        var lastChunk = try mapAndWriteEntities(
            index: index, origins: origins, outcomeResources: outcomeResources, mapping: mapping, reconciliation: reconciliation,
            writer: entityWriter, ledger: ledger, surveys: surveys)
        // Long-running plan and order tasks: versions of about a year of events each, planned before the
        // outcomes are mapped (each Observation goes on the version in effect on its day) and written
        // with the last entities, before the first outcome.
        var spanVersions = outcomeResources > 0 ? try RecentTaskStart(store: store, options: options, ledger: ledger).planBeforeOutcomes(catalog: catalog) : []
        var entitiesWritten = false
        func writeLastEntities() throws {
            guard !entitiesWritten else { return }
            entitiesWritten = true
            if let chunk = lastChunk {
                let (groups, _) = try reconciliation.reconcile(
                    chunk.mapped, records: chunk.records, origins: origins, index: index, last: true, deletions: &pendingDeletions)
                if !groups.isEmpty { try entityWriter.write(groups, index: index) }
                releaseElsewhere(chunk)
            }
            lastChunk = nil
            try entityWriter.applyDeletions(&pendingDeletions)
            if !spanVersions.isEmpty { try RecentTaskStart(store: store, options: options, ledger: ledger).write(spanVersions) }
            spanVersions = []
        }

        // Pass 2: the outcome-making resources, held from pass 1 or streamed again.
        if outcomeResources > 0 {
            let writer = PipelinedOutcomeWriter(store: store, engine: engine, options: options, ledger: ledger)
            writer.planner.logDays = logDays
            try mapAndWriteOutcomes(
                held: &held, holds: holds, readable: readable, count: outcomeResources, mapping: mapping, writer: writer,
                ledger: ledger, writeLastEntities: writeLastEntities)
        }
        try writeLastEntities()
        // Long-running plan and order tasks the catalog did not hold as written (changed, or an input
        // without Observations): their versions from the day after their last outcome, once all is placed.
        try RecentTaskStart(store: store, options: options, ledger: ledger).run(taskIDs: catalog.plannedTaskIDs)
        releaseElsewhere(consume index)
        return ledger.finish(coverage: engine.coverage?.unread(), seconds: Date().timeIntervalSince(started))
    }

    /// Maps the indexed resources a chunk at a time, so that memory holds one chunk's entities, not the
    /// whole input's, and writes every chunk but the last, which it returns. Resources whose entities
    /// reference one a later chunk may make wait for it.
    private func mapAndWriteEntities(
        index: ResourceIndex, origins: [ResourceKey: ImportOrigin], outcomeResources: Int, mapping: MappingStage,
        reconciliation: Reconciliation, writer: EntityWriter, ledger: ImportLedger, surveys: SurveyQuestionnaires
    ) throws -> (mapped: [MappedResource], records: [ResourceKey: SourceResource])? {
        let catalog = mapping.catalog
        var waiting: [MappedResource] = []
        var waitingRecords: [ResourceKey: SourceResource] = [:]
        var done = 0
        // Questionnaires make no entities: kept apart (`SurveyQuestionnaires`), not mapped.
        let keys = index.keys(ofType: "Questionnaire").isEmpty ? index.order : index.order.filter { $0.type != "Questionnaire" }
        let chunks = keys.chunked(options.entityChunkSize)
        for (number, chunk) in chunks.enumerated() {
            var mapped: [MappedResource] = waiting
            var records = waitingRecords
            mapped.reserveCapacity(waiting.count + chunk.count)
            MappingStage.inParallel(chunk, mapping.mapIndexed) { output in
                guard let (unpinned, record) = output else { return }
                let result = surveys.pin(unpinned)
                if outcomeResources > 0, case .mapped(let entities, _) = result.result {
                    for case .task(let task) in entities { catalog.add(task) }
                }
                mapped.append(result)
                records[result.key] = record
                done += 1
                ledger.tick("mapped \(done) of \(index.count) resources")
            }
            guard number < chunks.count - 1 else { return (mapped, records) }
            let groups: [ResourceGroup]
            (groups, waiting) = try reconciliation.reconcile(
                mapped, records: records, origins: origins, index: index, last: false, deletions: &pendingDeletions)
            if !groups.isEmpty { try writer.write(groups, index: index) }
            // A safe point: an app's push appends outcomes only, which no later chunk plans from.
            try store.yieldToAppends()
            waitingRecords = [:]
            for resource in waiting { waitingRecords[resource.key] = records[resource.key] }
            releaseElsewhere((mapped, records))
        }
        return nil
    }

    /// The chunks of held outcome-making resources mapped ahead of this thread: four batches' worth.
    ///
    /// The first result this thread takes writes the last entities and the versions of long-running
    /// tasks (`writeLastEntities`), a third of a synthea-r4 import's time on this thread alone, with the
    /// store's writer thread idle. A window of one batch kept the workers idle then too (mapped ahead,
    /// waiting to be taken); with four they map that many batches meanwhile on the core this thread
    /// leaves, rather than later beside the planning and the writer thread, which then have the two
    /// cores to themselves. Memory holds at most four batches of mapped results (a few MB at the default
    /// 1,000), whatever the input's size.
    static func outcomeWindow(batchSize: Int) -> Int {
        4 * max(1, batchSize) / MappingStage.chunk + 2
    }

    /// Pass 2: the outcome-making resources, `held` from pass 1 or streamed again from `readable`. They are
    /// mapped on worker threads (the catalog no longer changes) and written in input order, a batch at a time.
    private func mapAndWriteOutcomes(
        held: inout [(Element, String?, ImportOrigin)], holds: Bool, readable: [FHIRInput.Source], count outcomeResources: Int,
        mapping: MappingStage, writer: PipelinedOutcomeWriter, ledger: ImportLedger, writeLastEntities: () throws -> Void
    ) throws {
        let (engine, catalog) = (self.engine, mapping.catalog)
        var batch: [MappedInput] = []
        var done = 0
        let mapOutcome: @Sendable (Element, String?, ImportOrigin) -> MappedInput? = mapping.mapOutcomeMaking
        // What stops the whole import (the store failing), met where nothing can throw.
        var failure: (any Error)?
        func flush() {
            writer.submitOutcomes(batch, catalog: catalog, deletions: &pendingDeletions)
            done += batch.count
            batch.removeAll(keepingCapacity: true)
            ledger.tick("mapped \(done) of \(outcomeResources) outcome resources")
        }
        if holds {
            // The workers map the next batch while this thread writes the last one. The first batches
            // are smaller, so that writing starts early rather than after a whole batch is mapped: a
            // fifth of a batch, then twice as many each time, up to a whole one.
            let items = held
            held = []
            var batchSize = max(1, options.outcomeBatchSize / 5)
            MappingStage.inParallel(items, window: Self.outcomeWindow(batchSize: options.outcomeBatchSize), behindTheWriter: true, mapOutcome) { mappedInput in
                if failure == nil, let storeFailure = writer.storeFailure { failure = storeFailure }
                guard failure == nil else { return }
                do { try writeLastEntities() } catch {
                    failure = error
                    return
                }
                if let mappedInput { batch.append(mappedInput) }
                if batch.count >= batchSize {
                    flush()
                    batchSize = min(self.options.outcomeBatchSize, batchSize * 2)
                }
            }
            releaseElsewhere(consume items)
        } else {
            try writeLastEntities()
            var pending: [(Element, String?, ImportOrigin)] = []
            func mapPending() {
                MappingStage.inParallel(pending, behindTheWriter: true, mapOutcome) { mappedInput in
                    if let mappedInput { batch.append(mappedInput) }
                }
                pending.removeAll(keepingCapacity: true)
                flush()
            }
            var reader = InputReader(ledger: ledger, strict: options.strict)
            try reader.read(readable, countingResources: false) { resource, fullUrl, origin in
                guard writer.storeFailure == nil else { return }
                let type = resource.resourceType ?? ""
                guard engine.makesOutcomes(type), self.options.resourceTypes?.contains(type) ?? true else { return }
                pending.append((resource, fullUrl, origin))
                if pending.count >= self.options.outcomeBatchSize { mapPending() }
            }
            if !pending.isEmpty { mapPending() }
        }
        if let failure {
            writer.settleOutcomes()
            throw failure
        }
        try writeLastEntities()
        if !batch.isEmpty { flush() }
        writer.settleOutcomes()
        if let storeFailure = writer.storeFailure { throw storeFailure }
    }
}
