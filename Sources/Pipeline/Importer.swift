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

    public init(mapping: MappingOptions) {
        self.mapping = mapping
    }
}

/// The import job: FHIR input (files, folders, Bundles, NDJSON; JSON or XML) through the mappings into
/// the store.
///
/// The first pass indexes every resource a mapping can read (``MappingSet/readableTypes``: the mapped
/// types and what their `resolve()` and `reverse:` reach; the others are only counted), except the
/// outcome-making ones (Observations, the bulk of any export), and maps them into patients, plans,
/// contacts and tasks, written in one transaction (resource by resource when that fails, so that a bad resource
/// fails alone, kept as a dead letter). The second maps the Observations, each to an outcome value of
/// the task occurrence it belongs to, written in batches. Input up to ``ImportOptions/holdInputUpTo``
/// is read once and its Observations held; larger input is read again and its Observations streamed,
/// and the resources it indexes are kept as the place of their NDJSON line in the file (JSON for Bundle
/// entries) rather than as trees, so that memory holds the index and one batch, never a whole NDJSON
/// file. A large JSON Bundle is taken a run of entries at a time as it is read, never as one tree.
/// Entities are mapped and written a chunk (``ImportOptions/entityChunkSize``) at a time.
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

    private var report = ImportReport()
    private var origins: [ResourceKey: Origin] = [:]
    private var pendingDeletions: [(key: ResourceKey, origin: Origin)] = []
    /// Dead letters kept back while pass 1 runs (nil otherwise), written once it has ended.
    private var deferredDeadLetters: [DeadLetter]?
    /// The log tasks this import made, by id.
    private var logTasksMade: [String: PlannedTask] = [:]
    private var taskVersions: [String: PlannedTask] = [:]
    /// The batch of outcomes being written, on `writeQueue`.
    private var inFlight: (plan: OutcomePlan, write: PendingWrite)?
    /// The store failing (full disk, I/O error, lost lease), met where nothing can throw: the import stops
    /// with it rather than reporting every later resource as failed.
    private var storeFailure: (any Error)?
    private let writeQueue = DispatchQueue(label: "caregate.import.outcome-writer")
    private var validator: StructureValidator?
    private var lastProgress = Date()

    /// Where a resource was read. Kept for every resource indexed, so it holds the file's own name
    /// (shared, not copied) and numbers, and makes the text reports show only when asked.
    struct Origin: Sendable {
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

    public init(store: any Store, engine: MappingEngine, options: ImportOptions) {
        self.store = store
        self.engine = engine
        self.options = options
    }

    /// Imports `sources` and returns the report.
    ///
    /// The whole import holds the store's writer lease (``Store/withWriterLease(_:_:)``): it plans from
    /// what it reads, so another writer between its reads and its writes would make it plan wrong.
    ///
    /// - Throws: only what stops the whole import (the store failing); bad input is reported per resource.
    public func run(_ sources: [FHIRInput.Source]) throws -> ImportReport {
        try store.withWriterLease("caregate import") { try importing(sources) }
    }

    private func importing(_ sources: [FHIRInput.Source]) throws -> ImportReport {
        let started = Date()
        report = ImportReport()
        logTasksMade = [:]
        taskVersions = [:]
        inFlight = nil
        storeFailure = nil
        report.dryRun = options.dryRun
        validator = options.strict ? StructureValidator(options: ValidationOptions(strict: true)) : nil

        // Pass 1: index what references can point at. A large Bundle's entries are used as they are read;
        // should one turn out unreadable, what pass 1 took from the Bundle is dropped by starting pass 1
        // again without it (it has changed nothing in the store: its dead letters wait for its end).
        var builder = ResourceIndex.Builder()
        var outcomeResources = 0
        // Standard input cannot be read twice: it is always held.
        let holds = Self.size(of: sources).map { $0 <= options.holdInputUpTo } ?? true
        var held: [(Element, String?, Origin)] = []
        // Only the resources some mapping can read are kept; the others are counted, as mapping them would.
        let kept = engine.mappings.readableTypes
        var unread = 0
        var readable = sources
        var unreadableBundles: [(source: FHIRInput.Source, error: FHIRSyntaxError)] = []
        while true {
            builder = ResourceIndex.Builder()
            (outcomeResources, unread, held) = (0, 0, [])
            report = ImportReport()
            report.dryRun = options.dryRun
            origins = [:]
            pendingDeletions = []
            deferredDeadLetters = []
            for (source, error) in unreadableBundles { failUnreadable(source, error) }
            do {
                try read(readable) { resource, fullUrl, origin in
                    let type = resource.resourceType ?? ""
                    if let only = self.options.resourceTypes, !only.contains(type) {
                        self.report.count(type) { $0.skipped += 1 }
                        return
                    }
                    let makesOutcomes = self.engine.makesOutcomes(type)
                    if makesOutcomes || !(kept?.contains(type) ?? true) {
                        // Not kept here, but references to it still name it.
                        if let key = ResourceKey.of(resource, fullUrl: fullUrl) { builder.alias(fullUrl, to: key) }
                        if makesOutcomes {
                            if holds { held.append((resource, fullUrl, origin)) }
                            outcomeResources += 1
                        } else {
                            self.report.count(type) { $0.skipped += 1 }  // as mapping it would: no mapping for its type
                            unread += 1
                        }
                    } else if let key = builder.add(resource, fullUrl: fullUrl, keeping: Self.keeping(origin, holds: holds)) {
                        if let earlier = self.origins[key] {
                            self.report.count(key.type) { $0.unchanged += 1 }  // the same resource twice: mapped once
                            let place = { (origin: Origin) in origin.source + (origin.entry.map { " entry \($0)" } ?? "") }
                            self.report.note(key.description, MappingNote(
                                .warning, at: key.type, "appears more than once in the input (\(place(earlier)), then \(place(origin))): the last one is imported"))
                        }
                        self.origins[key] = origin
                    }
                }
                break
            } catch let unreadable as UnreadableStreamedBundle {
                unreadableBundles.append((unreadable.source, unreadable.error))
                readable.removeAll { $0 == unreadable.source }
            }
        }
        writeDeferredDeadLetters()
        let index = builder.build()
        builder = ResourceIndex.Builder()  // the index alone holds the resources now, to be freed elsewhere
        tick("indexed \(index.count) resources (\(outcomeResources) more to map as outcomes\(unread > 0 ? ", \(unread) no mapping reads" : ""))", force: true)

        // Map and write the entities.
        // The tasks Observations can belong to; an input without any needs none (the store may hold millions).
        let catalog = outcomeResources > 0 ? try ImportTaskCatalog(store: store) : ImportTaskCatalog()
        let engine = self.engine
        let sourceSystem = options.mapping.sourceSystem
        // A chunk at a time, so that memory holds one chunk's entities, not the whole input's. Resources
        // whose entities reference one a later chunk may make wait for it (see `writeEntities`).
        var waiting: [MappedResource] = []
        var waitingRecords: [ResourceKey: SourceResource] = [:]
        var lastChunk: (mapped: [MappedResource], records: [ResourceKey: SourceResource])?
        var done = 0
        let chunks = index.order.chunked(options.entityChunkSize)
        for (number, chunk) in chunks.enumerated() {
            var mapped: [MappedResource] = waiting
            var records = waitingRecords
            mapped.reserveCapacity(waiting.count + chunk.count)
            Self.mapInParallel(chunk) { key -> (MappedResource, SourceResource?)? in
                let resource: Element
                do {
                    guard let found = try index.reread(key) else { return nil }
                    resource = found
                } catch {
                    return (MappedResource(key: key, result: .failed(MappingFailure(at: key.type, "cannot be read again from the input: \(error)"))), nil)
                }
                if engine.mappings.mapping(for: key.type) != nil { engine.coverage?.count(resource) }
                let result = engine.map(resource, key: key, index: index, tasks: catalog)
                // The record of what was received, serialized here rather than on the thread that writes.
                guard case .mapped(let entities, _) = result.result, !entities.isEmpty else { return (result, nil) }
                return (result, Self.source(resource, key: key, system: sourceSystem))
            } consume: { output in
                guard let (result, record) = output else { return }
                if outcomeResources > 0, case .mapped(let entities, _) = result.result {
                    for case .task(let task) in entities { catalog.add(task) }
                }
                mapped.append(result)
                records[result.key] = record
                done += 1
                tick("mapped \(done) of \(index.count) resources")
            }
            guard number < chunks.count - 1 else {
                lastChunk = (mapped, records)
                break
            }
            waiting = try writeEntities(mapped, records: records, index: index, last: false)
            waitingRecords = [:]
            for resource in waiting { waitingRecords[resource.key] = records[resource.key] }
            releaseElsewhere((mapped, records))
        }
        // The last chunk is written once the workers are mapping the outcome-making resources, which need
        // the catalog (complete now) and nothing written; their outcomes are planned after it.
        var entitiesWritten = false
        func writeLastEntities() throws {
            guard !entitiesWritten else { return }
            entitiesWritten = true
            if let lastChunk {
                _ = try writeEntities(lastChunk.mapped, records: lastChunk.records, index: index, last: true)
                releaseElsewhere(lastChunk)
            }
            lastChunk = nil
            try applyDeletions()
        }

        // Pass 2: the outcome-making resources, held from pass 1 or streamed again. They are mapped on
        // worker threads (the catalog no longer changes) and written in input order, a batch at a time.
        if outcomeResources > 0 {
            var batch: [MappedInput] = []
            var done = 0
            let mapOutcome: @Sendable (Element, String?, Origin) -> MappedInput? = { resource, fullUrl, origin in
                guard let key = ResourceKey.of(resource, fullUrl: fullUrl) else { return nil }
                engine.coverage?.count(resource)
                return MappedInput(
                    mapped: engine.map(resource, key: key, index: index, tasks: catalog), origin: origin, raw: resource,
                    source: Self.source(resource, key: key, system: sourceSystem))
            }
            // What stops the whole import (the store failing), met where nothing can throw.
            var failure: (any Error)?
            let flush = {
                self.submitOutcomes(batch, catalog: catalog)
                done += batch.count
                batch.removeAll(keepingCapacity: true)
                self.tick("mapped \(done) of \(outcomeResources) outcome resources")
            }
            if holds {
                // The workers map the next batch while this thread writes the last one. The first batches
                // are smaller, so that writing starts early rather than after a whole batch is mapped: a
                // fifth of a batch, then twice as many each time, up to a whole one.
                let items = held
                held = []
                var batchSize = max(1, options.outcomeBatchSize / 5)
                Self.mapInParallel(items, window: options.outcomeBatchSize / Self.mapChunk + 2, mapOutcome) { input in
                    if failure == nil, let storeFailure = self.storeFailure { failure = storeFailure }
                    guard failure == nil else { return }
                    do { try writeLastEntities() } catch {
                        failure = error
                        return
                    }
                    if let input { batch.append(input) }
                    if batch.count >= batchSize {
                        flush()
                        batchSize = min(self.options.outcomeBatchSize, batchSize * 2)
                    }
                }
                releaseElsewhere(consume items)
            } else {
                try writeLastEntities()
                var pending: [(Element, String?, Origin)] = []
                let mapPending = {
                    Self.mapInParallel(pending, mapOutcome) { input in
                        if let input { batch.append(input) }
                    }
                    pending.removeAll(keepingCapacity: true)
                    flush()
                }
                try read(readable, countingResources: false) { resource, fullUrl, origin in
                    guard self.storeFailure == nil else { return }
                    let type = resource.resourceType ?? ""
                    guard engine.makesOutcomes(type), self.options.resourceTypes?.contains(type) ?? true else { return }
                    pending.append((resource, fullUrl, origin))
                    if pending.count >= self.options.outcomeBatchSize { mapPending() }
                }
                if !pending.isEmpty { mapPending() }
            }
            if let failure {
                settleOutcomes()
                throw failure
            }
            try writeLastEntities()
            if !batch.isEmpty { flush() }
            settleOutcomes()
        }
        try writeLastEntities()
        if let storeFailure { throw storeFailure }
        report.coverage = engine.coverage?.unread()
        releaseElsewhere(consume index)
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    // MARK: - Reading

    /// The total size of the sources' files, or nil when one is not a file: standard input cannot be read
    /// twice, and bytes in memory are held anyway, so their resources are held too.
    private static func size(of sources: [FHIRInput.Source]) -> Int? {
        var total = 0
        for source in sources {
            guard case .file(let path) = source else { return nil }
            total += (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        }
        return total
    }

    /// Calls `body` with every resource of `sources` (Bundle entries unpacked, with their fullUrl), in
    /// order, parsed on worker threads ahead of it, and reports what cannot be read.
    ///
    /// - Throws: ``UnreadableStreamedBundle`` when, while counting, a large Bundle whose first entries
    ///   were handed to `body` turns out unreadable.
    private func read(_ sources: [FHIRInput.Source], countingResources: Bool = true, _ body: (Element, String?, Origin) -> Void) throws {
        var streamed: FHIRInput.Source?
        try FHIRInput.forEachEntry(of: sources, streamingBundles: true) { event in
            switch event {
            case .entry(let source, let entry, _):
                switch entry.result {
                case .failure(let error):
                    if countingResources, streamed == source { throw UnreadableStreamedBundle(source: source, error: error) }
                    if countingResources { failUnreadable(source, error) }
                case .success(let resource):
                    unpack(resource, origin: Origin(file: source.description, line: entry.line, bytes: entry.bytes), counting: countingResources, body)
                }
            case .bundleEntries(let source, let entries, let first):
                streamed = source
                let file = source.description
                for (offset, entry) in entries.enumerated() {
                    unpackEntry(entry, origin: Origin(file: file, entry: first + offset), counting: countingResources, body)
                }
            case .unreadable(let source, let error):
                if countingResources { fail(type: "(unreadable)", origin: Origin(file: source.description), key: nil, path: nil, "cannot read the file: \(error)") }
            }
        }
    }

    /// A large Bundle found unreadable after pass 1 took its first entries.
    private struct UnreadableStreamedBundle: Error {
        let source: FHIRInput.Source
        let error: FHIRSyntaxError
    }

    private func failUnreadable(_ source: FHIRInput.Source, _ error: FHIRSyntaxError) {
        fail(type: "(unreadable)", origin: Origin(file: source.description, line: error.line, column: error.column), key: nil, path: nil, "\(error.format.rawValue) syntax error: \(error.message)")
    }

    /// How the index keeps a resource: held input as trees; larger input its NDJSON lines as their
    /// place in the file, other resources (in Bundles) as JSON.
    private static func keeping(_ origin: Origin, holds: Bool) -> ResourceIndex.Builder.Keeping {
        if holds { return .tree }
        guard let bytes = origin.bytes else { return .json }
        return .location(file: origin.file, bytes: bytes)
    }

    /// Items mapped per worker task.
    private static let mapChunk = 64

    /// Runs `transform` over `items` on worker threads, a chunk per task, and hands the results to
    /// `consume` in order, on this thread.
    private static func mapInParallel<Item, Output>(
        _ items: [Item], window: Int? = nil, _ transform: @escaping @Sendable (Item) -> Output, consume: (Output) -> Void
    ) {
        OrderedParallelMap.run(items.chunked(mapChunk).makeIterator(), window: window, transform: { slice in slice.map(transform) }) { outputs in
            for output in outputs { consume(output) }
        }
    }

    private func unpack(_ resource: Element, origin: Origin, counting: Bool, _ body: (Element, String?, Origin) -> Void) {
        let type = resource.resourceType ?? ""
        guard FHIRMetadata.r4.isResourceType(type) else {
            if counting { fail(type: type.isEmpty ? "(unknown)" : type, origin: origin, key: nil, path: nil, "'\(type)' is not an R4 resource type") }
            return
        }
        guard type == "Bundle" else {
            accept(resource, fullUrl: nil, origin: origin, counting: counting, body)
            return
        }
        for (position, entry) in resource.children(named: "entry").enumerated() {
            unpackEntry(entry, origin: Origin(file: origin.file, line: origin.line, entry: position), counting: counting, body)
        }
    }

    /// One entry of a Bundle: its resource, or the deletion its request asks for.
    private func unpackEntry(_ entry: Element, origin: Origin, counting: Bool, _ body: (Element, String?, Origin) -> Void) {
        if let inner = entry.child(named: "resource") {
            accept(inner, fullUrl: entry.childValue("fullUrl"), origin: origin, counting: counting, body)
        } else if counting, let request = entry.child(named: "request"), request.childValue("method") == "DELETE",
                  let url = request.childValue("url") {
            let parts = url.split(separator: "?")[0].split(separator: "/").map(String.init)
            if parts.count >= 2, FHIRMetadata.r4.isResourceType(parts[parts.count - 2]) {
                pendingDeletions.append((ResourceKey(type: parts[parts.count - 2], id: parts[parts.count - 1]), origin))
            } else {
                fail(type: "Bundle", origin: origin, key: nil, path: "Bundle.entry[\(origin.entry ?? 0)].request.url", "cannot delete '\(url)': not Type/id")
            }
        }
    }

    private func accept(_ resource: Element, fullUrl: String?, origin: Origin, counting: Bool, _ body: (Element, String?, Origin) -> Void) {
        let type = resource.resourceType ?? ""
        if counting {
            report.resourcesRead += 1
            guard ResourceKey.of(resource, fullUrl: fullUrl) != nil else {
                fail(type: type, origin: origin, key: nil, path: type, "the resource has no id, identifier or fullUrl to be known by")
                return
            }
        }
        if let validator {
            let issues = validator.validate(resource).errors
            if let first = issues.first {
                if counting { fail(type: type, origin: origin, key: ResourceKey.of(resource, fullUrl: fullUrl), path: first.expression, "invalid (--strict): \(first.diagnostics)") }
                return
            }
        }
        body(resource, fullUrl, origin)
    }

    // MARK: - Entities

    /// Writes the entities of `mapped` and reports them. An entity that references one neither made here
    /// nor in the store is written unlinked, with a warning, when this is the `last` chunk; otherwise its
    /// resource waits (it is returned) for a later chunk, which may make the target.
    private func writeEntities(_ mapped: [MappedResource], records: [ResourceKey: SourceResource], index: ResourceIndex, last: Bool) throws -> [MappedResource] {
        // What the store holds now, to tell created from updated from unchanged.
        var ids: [EntityKind: [String]] = [:]
        for resource in mapped {
            if case .mapped(let entities, _) = resource.result {
                for entity in entities { ids[entity.kind, default: []].append(entity.id) }
            }
        }
        var current: [EntityKind: [String: CareEntity]] = [:]
        for (kind, list) in ids {
            for chunk in list.chunked(500) {
                for entity in try currentEntities(kind, ids: chunk) { current[kind, default: [:]][entity.id] = entity }
            }
        }

        let dangling = try danglingReferences(mapped, current: current)
        var waiting: [MappedResource] = []
        // What the store links to each resource, to find what a resource no longer makes.
        var earlierLinks: [ResourceKey: [ResourceLink]] = [:]
        let linked = mapped.compactMap { resource -> (type: String, id: String)? in
            if case .mapped = resource.result { return (resource.key.type, resource.key.id) }
            return nil
        }
        for link in try store.links(ofResources: linked) {
            earlierLinks[link.resource, default: []].append(link)
        }

        var groups: [ResourceGroup] = []
        for resource in mapped {
            if !last, case .mapped(let entities, _) = resource.result,
               entities.contains(where: { Self.reference(of: $0).map { dangling.contains($0.1) } ?? false }) {
                waiting.append(resource)
                continue
            }
            let type = resource.key.type
            let origin = origins[resource.key] ?? Origin(file: "?")
            for note in resource.notes { report.note(resource.key.description, note) }
            switch resource.result {
            case .skipped(let reason):
                report.count(type) { $0.skipped += 1 }
                if !reason.hasPrefix("no mapping") { report.note(resource.key.description, MappingNote(.info, at: type, "skipped: \(reason)")) }
            case .failed(let failure):
                fail(type: type, origin: origin, key: resource.key, path: failure.path, failure.message, payload: index.resource(resource.key))
            case .delete:
                pendingDeletions.append((resource.key, origin))
            case .mapped(var entities, _):
                for position in entities.indices {
                    if let (field, target) = Self.reference(of: entities[position]), dangling.contains(target) {
                        entities[position] = Self.unlinked(entities[position])
                        report.note(resource.key.description, MappingNote(
                            .warning, at: type, "\(field) \(target) is neither in the input nor in the store: the \(entities[position].kind.rawValue) is kept unlinked until it is imported"))
                    }
                }
                var status = Status.unchanged
                for position in entities.indices {
                    let entity = entities[position]
                    guard let existing = current[entity.kind]?[entity.id] else {
                        status = .created
                        continue
                    }
                    if existing.metadata.provenance?.contentHash != entity.metadata.provenance?.contentHash {
                        if status == .unchanged { status = .updated }
                        // A new version may not take effect before the one it follows.
                        if entity.metadata.effectiveDate < existing.metadata.effectiveDate {
                            var metadata = entity.metadata
                            metadata.effectiveDate = existing.metadata.effectiveDate
                            entities[position].metadata = metadata
                        }
                    }
                }
                let made = Set(entities.map { "\($0.kind.rawValue)/\($0.id)" })
                var dropped: [(EntityKind, String)] = []
                for link in earlierLinks[resource.key] ?? []
                where link.sourceSystem == options.mapping.sourceSystem && !made.contains("\(link.entityKind.rawValue)/\(link.entityID)") && link.entityKind != .outcome {
                    if try !currentEntities(link.entityKind, ids: [link.entityID]).isEmpty { dropped.append((link.entityKind, link.entityID)) }
                }
                if !dropped.isEmpty, status == .unchanged { status = .updated }
                groups.append(ResourceGroup(key: resource.key, origin: origin, entities: entities, dropped: dropped, status: status,
                                            record: records[resource.key]))
            }
        }
        // Patients first, then plans, contacts and tasks: references point backwards.
        groups.sort { $0.rank < $1.rank }
        if !groups.isEmpty { try write(groups, index: index) }
        return waiting
    }

    private enum Status { case created, updated, unchanged }

    private func count(_ status: Status, of type: String) {
        report.count(type) { counts in
            switch status {
            case .created: counts.created += 1
            case .updated: counts.updated += 1
            case .unchanged: counts.unchanged += 1
            }
        }
    }

    /// The entity ids that entities reference but that neither this import makes nor the store holds.
    private func danglingReferences(_ mapped: [MappedResource], current: [EntityKind: [String: CareEntity]]) throws -> Set<String> {
        var made: Set<String> = []
        var referenced: [EntityKind: Set<String>] = [:]
        for resource in mapped {
            guard case .mapped(let entities, _) = resource.result else { continue }
            for entity in entities {
                made.insert(entity.id)
                if let (_, target) = Self.reference(of: entity) {
                    referenced[entity.kind == .carePlan ? .patient : .carePlan, default: []].insert(target)
                }
            }
        }
        var dangling: Set<String> = []
        for (kind, ids) in referenced {
            let unknown = ids.subtracting(made).filter { current[kind]?[$0] == nil }
            var found: Set<String> = []
            for chunk in Array(unknown).chunked(500) { found.formUnion(try currentEntities(kind, ids: chunk).map(\.id)) }
            dangling.formUnion(unknown.subtracting(found))
        }
        return dangling
    }

    /// The field and id an entity references (a plan's patient, a task's or contact's plan).
    private static func reference(of entity: CareEntity) -> (String, String)? {
        switch entity {
        case .carePlan(let plan): return plan.patientID.map { ("patient", $0) }
        case .task(let task): return task.carePlanID.map { ("care plan", $0) }
        case .contact(let contact): return contact.carePlanID.map { ("care plan", $0) }
        default: return nil
        }
    }

    /// The entity without the reference (its content hash updated, so that linking it later is a change).
    private static func unlinked(_ entity: CareEntity) -> CareEntity {
        var copy = entity
        switch entity {
        case .carePlan(var plan): plan.patientID = nil; copy = .carePlan(plan)
        case .task(var task): task.carePlanID = nil; copy = .task(task)
        case .contact(var contact): contact.carePlanID = nil; copy = .contact(contact)
        default: break
        }
        var metadata = copy.metadata
        let hash = metadata.provenance?.contentHash.map { ContentHash.of($0 + "|unlinked") }
        metadata.provenance?.contentHash = hash
        copy.metadata = metadata
        return copy
    }

    /// What one resource writes.
    private struct ResourceGroup {
        let key: ResourceKey
        let origin: Origin
        let entities: [CareEntity]
        let dropped: [(EntityKind, String)]
        let status: Status
        /// The record of the resource as received (made with the mapping, on a worker thread).
        let record: SourceResource?

        var rank: Int {
            entities.map { entity -> Int in
                switch entity.kind {
                case .patient: return 0
                case .carePlan: return 1
                case .contact: return 2
                case .task: return 3
                case .outcome: return 4
                }
            }.min() ?? 5
        }
    }

    /// Writes `groups`; a group the store refuses is a dead letter with its resource from `index`.
    private func write(_ groups: [ResourceGroup], index: ResourceIndex) throws {
        func batch(for groups: ArraySlice<ResourceGroup>) -> StoreBatch {
            var batch = StoreBatch()
            for group in groups {
                for entity in group.entities { batch.append(.upsert(entity)) }
                for (kind, id) in group.dropped { batch.delete(kind, id: id) }
                if group.status != .unchanged, let record = group.record { batch.record(record) }
            }
            return batch
        }
        var written = groups[...]
        if !options.dryRun {
            do {
                count(try store.apply(batch(for: groups[...])))
            } catch let error as StoreError where error.isStoreFailure {
                throw error
            } catch {
                // One resource spoils the batch: write them one by one, so that it fails alone.
                var kept: [ResourceGroup] = []
                for group in groups {
                    do {
                        count(try store.apply(batch(for: [group][...])))
                        kept.append(group)
                    } catch StoreError.entityDeleted(let kind, let id) where group.entities.contains(where: { $0.kind == kind && $0.id == id }) {
                        // CareKit's rule: a deleted id stays deleted. The resource was entered in error or
                        // deleted before and is sent again; it is not an input error, and nothing of it is written.
                        report.count(group.key.type) { $0.skipped += 1 }
                        report.note(group.key.description, MappingNote(
                            .warning, at: group.key.type,
                            "not carried over: its \(kind.rawValue) \(id) was deleted earlier (entered-in-error, revoked or a DELETE), and a deleted id stays deleted"))
                    } catch let error as StoreError where error.isStoreFailure {
                        throw error
                    } catch {
                        fail(type: group.key.type, origin: group.origin, key: group.key, path: nil, "the store refused it: \(error)", payload: index.resource(group.key))
                    }
                }
                written = kept[...]
            }
        }
        for group in written { count(group.status, of: group.key.type) }
    }

    private func applyDeletions() throws {
        guard !pendingDeletions.isEmpty else { return }
        var batch = StoreBatch()
        var deletedKeys: [(ResourceKey, Origin)] = []
        for (key, origin) in pendingDeletions where !engine.makesOutcomes(key.type) {
            var any = false
            for link in try store.links(resourceType: key.type, resourceID: key.id) where link.sourceSystem == options.mapping.sourceSystem {
                if try !currentEntities(link.entityKind, ids: [link.entityID]).isEmpty {
                    batch.delete(link.entityKind, id: link.entityID)
                    any = true
                }
            }
            if any {
                deletedKeys.append((key, origin))
            } else {
                report.count(key.type) { $0.skipped += 1 }
                report.note(key.description, MappingNote(.info, at: key.type, "marked for deletion, and nothing of it is in the store"))
            }
        }
        pendingDeletions.removeAll { !engine.makesOutcomes($0.key.type) }
        if !options.dryRun, !batch.isEmpty { count(try store.apply(batch)) }
        for (key, _) in deletedKeys { report.count(key.type) { $0.deleted += 1 } }
    }

    // MARK: - Outcomes

    /// An outcome-making resource as mapped on a worker thread, with its source record made there too.
    private struct MappedInput: Sendable {
        let mapped: MappedResource
        let origin: Origin
        let raw: Element
        let source: SourceResource
    }

    /// Writes the batches of outcome-making resources one after another on a thread of their own, so
    /// that the next batch is planned while the last one is written. At most one batch is in flight.
    private func submitOutcomes(_ pending: [MappedInput], catalog: ImportTaskCatalog) {
        guard !pending.isEmpty else { return }
        // Removing values reads the links of earlier outcomes, which the batch in flight may be writing.
        let removes = pending.contains { if case .delete = $0.mapped.result { true } else { false } }
            || pendingDeletions.contains { engine.makesOutcomes($0.key.type) }
        if let inFlight, removes || !inFlight.plan.removedSources.isEmpty { settleOutcomes() }
        var plan: OutcomePlan
        do {
            plan = try planOutcomes(pending, catalog: catalog, after: inFlight?.plan)
            // The plan took the batch in flight as written; if the store refused any of it, plan again.
            if inFlight != nil, !settleOutcomes() { plan = try planOutcomes(pending, catalog: catalog, after: nil) }
        } catch {
            settleOutcomes()
            if let failure = error as? StoreError, failure.isStoreFailure {
                storeFailure = storeFailure ?? failure
                return
            }
            for input in pending {
                fail(type: input.mapped.key.type, origin: input.origin, key: input.mapped.key, path: nil, "the store refused it: \(error)", payload: input.raw)
            }
            for (key, origin) in pendingDeletions where engine.makesOutcomes(key.type) {
                fail(type: key.type, origin: origin, key: key, path: nil, "the store refused its deletion: \(error)")
            }
            pendingDeletions.removeAll { engine.makesOutcomes($0.key.type) }
            return
        }
        pendingDeletions.removeAll { engine.makesOutcomes($0.key.type) }
        for (id, task) in plan.logTasks { logTasksMade[id] = task }
        let write = PendingWrite()
        inFlight = (plan, write)
        guard !options.dryRun else {
            write.finish(PlanResult())
            return
        }
        let (store, logBatch, groups) = (self.store, plan.logBatch, plan.groups.map(\.changes))
        writeQueue.async { write.finish(Self.write(logBatch, groups, to: store)) }
    }

    /// Waits for the batch in flight to be written and reports it. Returns false when the store refused
    /// any of it.
    @discardableResult
    private func settleOutcomes() -> Bool {
        guard let (plan, write) = inFlight else { return true }
        inFlight = nil
        let result = write.wait()
        if let failure = result.storeFailure {
            storeFailure = storeFailure ?? failure
            return false
        }
        for summary in result.summaries { count(summary) }
        for entry in plan.reporting { entry(self) }
        if let failure = result.failure {
            for (key, (origin, raw)) in plan.byKey.sorted(by: { $0.key < $1.key }) {
                fail(type: key.type, origin: origin, key: key, path: nil, "the store refused it: \(failure)", payload: raw)
            }
            return false
        }
        var statuses = plan.statuses
        for (position, message) in result.refused {
            for key in plan.groups[position].sources.sorted() {
                guard statuses.removeValue(forKey: key) != nil || plan.removedSources.contains(key) else { continue }
                let (origin, raw) = plan.byKey[key] ?? (Origin(file: "?"), nil)
                fail(type: key.type, origin: origin, key: key, path: nil, "the store refused its outcome: \(message)", payload: raw)
            }
        }
        for (key, status) in statuses { count(status, of: key.type) }
        return result.refused.isEmpty
    }

    /// What one batch of outcome-making resources writes, and reports once it is written. Planning
    /// changes nothing, so that a plan made while the store refused part of the batch before can be
    /// made again.
    private struct OutcomePlan {
        /// Log tasks new to the store, by id: written first, as outcomes name them.
        var logTasks: [String: PlannedTask] = [:]
        var logBatch = StoreBatch()
        /// The changes of each outcome, kept apart so that one the store refuses fails alone.
        var groups: [(sources: Set<ResourceKey>, changes: [StoreChange])] = []
        var statuses: [ResourceKey: Status] = [:]
        var removedSources: Set<ResourceKey> = []
        var byKey: [ResourceKey: (Origin, Element)] = [:]
        /// The outcome versions it writes, by id: the next batch, planned while this one is written,
        /// takes them for the store's.
        var written: [String: Outcome] = [:]
        /// The outcomes it deletes (every value gone), for the next batch likewise.
        var deleted: Set<String> = []
        /// The outcome each resource's values go to, for the next batch: the store's links may not be
        /// committed yet when it is planned.
        var outcomeOfSource: [ResourceKey: String] = [:]
        /// What the report says of it: notes, skips, failures that do not depend on the store.
        var reporting: [(Importer) -> Void] = []
    }

    /// What writing a plan came to.
    private struct PlanResult: Sendable {
        var summaries: [BatchSummary] = []
        /// The groups the store refused, by position, with its reason.
        var refused: [(Int, String)] = []
        /// Set when the log tasks could not be written, and so nothing of the plan was.
        var failure: String?
        /// Set when the store itself failed: what was not written stays unwritten, and the import stops.
        var storeFailure: StoreError?
    }

    /// A plan's write, finished on the writer thread and waited for on this one.
    private final class PendingWrite: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var result = PlanResult()

        func finish(_ result: PlanResult) {
            self.result = result
            done.signal()
        }

        func wait() -> PlanResult {
            done.wait()
            return result
        }
    }

    /// Writes a plan's log tasks, then its outcome groups in one transaction, or one by one when the
    /// store refuses the whole.
    private static func write(_ logBatch: StoreBatch, _ groups: [[StoreChange]], to store: any Store) -> PlanResult {
        var result = PlanResult()
        do {
            if !logBatch.isEmpty { result.summaries.append(try store.apply(logBatch)) }
        } catch let error as StoreError where error.isStoreFailure {
            result.storeFailure = error
            return result
        } catch {
            result.failure = "\(error)"
            return result
        }
        guard !groups.isEmpty else { return result }
        // The new outcomes first, in one run, then what goes with them (links, source records).
        let all = groups.joined()
        do {
            result.summaries.append(try store.apply(StoreBatch(changes: all.filter(Self.isOutcomeAdd) + all.filter { !Self.isOutcomeAdd($0) })))
        } catch {
            // One outcome spoils the batch: write them one by one, so that its Observations fail alone. An
            // outcome planned as new that another writer made meanwhile is written as a change of it.
            for (position, changes) in groups.enumerated() {
                do {
                    result.summaries.append(try store.apply(StoreBatch(changes: changes)))
                } catch {
                    do {
                        guard changes.contains(where: Self.isOutcomeAdd) else { throw error }
                        result.summaries.append(try store.apply(StoreBatch(changes: changes.map(Self.asUpsert))))
                    } catch let error as StoreError where error.isStoreFailure {
                        result.storeFailure = error
                        return result
                    } catch {
                        result.refused.append((position, "\(error)"))
                    }
                }
            }
        }
        return result
    }

    private static func isOutcomeAdd(_ change: StoreChange) -> Bool {
        if case .add(.outcome) = change { return true }
        return false
    }

    private static func asUpsert(_ change: StoreChange) -> StoreChange {
        if case .add(let entity) = change { return .upsert(entity) }
        return change
    }

    /// A task version as planning uses it: looked up once per outcome value, so shared, not copied.
    private final class PlannedTask {
        let task: CareTask

        init(_ task: CareTask) {
            self.task = task
        }
    }

    /// The contributions of a batch that go to one outcome (a task occurrence).
    private struct OutcomeGroup {
        let id: String
        let task: PlannedTask
        let occurrence: Int
        /// Positions in the batch's contributions, in input order.
        var items: [Int]
    }

    /// Plans the writes of `pending`, taking the outcomes and log tasks of `previous` (the plan being
    /// written) for the store's.
    private func planOutcomes(_ pending: [MappedInput], catalog: ImportTaskCatalog, after previous: OutcomePlan?) throws -> OutcomePlan {
        var plan = OutcomePlan()
        var contributions: [OutcomeContribution] = []
        var sourceRecords: [ResourceKey: SourceResource] = [:]
        // Sized once: these grow by one entry per resource.
        contributions.reserveCapacity(pending.count)
        sourceRecords.reserveCapacity(pending.count)
        plan.byKey.reserveCapacity(pending.count)
        plan.statuses.reserveCapacity(pending.count)
        plan.written.reserveCapacity(pending.count)
        plan.groups.reserveCapacity(pending.count)
        plan.reporting.reserveCapacity(pending.count)
        plan.outcomeOfSource.reserveCapacity(pending.count)
        // The same resource twice in a batch is mapped once, as the last of them: as across batches, where
        // the later one replaces what the earlier one wrote.
        var lastPosition: [ResourceKey: Int] = [:]
        lastPosition.reserveCapacity(pending.count)
        for (position, input) in pending.enumerated() { lastPosition[input.mapped.key] = position }
        for (position, input) in pending.enumerated() {
            let (mapped, origin, raw) = (input.mapped, input.origin, input.raw)
            guard lastPosition[mapped.key] == position else {
                plan.reporting.append { $0.report.count(mapped.key.type) { $0.unchanged += 1 } }
                continue
            }
            sourceRecords[mapped.key] = input.source
            let type = mapped.key.type
            let notes = mapped.notes
            if !notes.isEmpty { plan.reporting.append { importer in for note in notes { importer.report.note(mapped.key.description, note) } } }
            switch mapped.result {
            case .skipped(let reason):
                plan.reporting.append { importer in
                    importer.report.count(type) { $0.skipped += 1 }
                    importer.report.note(mapped.key.description, MappingNote(.info, at: type, "skipped: \(reason)"))
                }
            case .failed(let failure):
                plan.reporting.append { $0.fail(type: type, origin: origin, key: mapped.key, path: failure.path, failure.message, payload: raw) }
            case .delete:
                plan.removedSources.insert(mapped.key)
                plan.byKey[mapped.key] = (origin, raw)
            case .mapped(_, let made):
                if made.isEmpty { plan.reporting.append { $0.report.count(type) { $0.skipped += 1 } } }
                contributions += made
                plan.byKey[mapped.key] = (origin, raw)
            }
        }
        try dropOwnWriteBacks(pending, from: &contributions, plan: &plan)
        for (key, origin) in pendingDeletions where engine.makesOutcomes(key.type) {
            plan.removedSources.insert(key)
            plan.byKey[key] = (origin, Element.resource(key.type, children: []))
        }

        // The log tasks first, so that outcomes can name them. They stay out of the catalog, which worker
        // threads read while this runs.
        func logTask(_ id: String) -> PlannedTask? {
            plan.logTasks[id] ?? logTasksMade[id] ?? previous?.logTasks[id]
        }
        for contribution in contributions {
            guard let log = contribution.logTask, logTask(log.id) == nil, catalog.task(id: log.id) == nil else { continue }
            plan.logBatch.upsert(log)
            plan.logTasks[log.id] = PlannedTask(log)
        }

        // The task versions outcomes belong to, as stored (or about to be: the log tasks).
        var missingTasks: Set<String> = []
        for contribution in contributions where taskVersions.index(forKey: contribution.taskID) == nil && logTask(contribution.taskID) == nil {
            missingTasks.insert(contribution.taskID)
        }
        for chunk in Array(missingTasks).chunked(500) {
            for task in try store.tasks(EntityQuery(ids: chunk)) { taskVersions[task.id] = PlannedTask(task) }
        }
        // Existing outcomes whose values these resources remove (deleted resources), or may have moved
        // from (a resource whose time or code changed belongs to another outcome now).
        let removedOutcomes = try linkedOutcomes(of: plan.removedSources, after: previous)
        let incomingSources = Set(contributions.map(\.source))
        let formerOutcomes = try linkedOutcomes(of: incomingSources, after: previous)
        // The contributions by outcome (task occurrence), in input order.
        var groups: [OutcomeGroup] = []
        var groupOfOccurrence: [TaskOccurrence: Int] = [:]
        groups.reserveCapacity(contributions.count)
        groupOfOccurrence.reserveCapacity(contributions.count)
        for (position, contribution) in contributions.enumerated() {
            let taskID = contribution.taskID
            guard let task = taskVersions[taskID] ?? logTask(taskID)
                ?? (options.dryRun ? catalog.task(id: taskID).map(PlannedTask.init) : nil) else {
                let source = contribution.source
                let (origin, raw) = plan.byKey[source] ?? (Origin(file: "?"), nil)
                plan.reporting.append {
                    $0.fail(type: source.type, origin: origin, key: source, path: nil, "its task \(taskID) is not in the store", payload: raw)
                }
                continue
            }
            let occurrence = TaskOccurrence(task: task.task.uuid, occurrence: contribution.occurrence)
            if let group = groupOfOccurrence[occurrence] {
                groups[group].items.append(position)
            } else {
                groupOfOccurrence[occurrence] = groups.count
                groups.append(OutcomeGroup(
                    id: Outcome.id(taskUUID: occurrence.task, occurrence: occurrence.occurrence), task: task,
                    occurrence: contribution.occurrence, items: [position]))
            }
        }
        var groupOfID: [String: Int] = [:]
        groupOfID.reserveCapacity(groups.count)
        for (position, group) in groups.enumerated() { groupOfID[group.id] = position }
        var strippedIDs = Set(removedOutcomes.keys)
        strippedIDs.formUnion(formerOutcomes.keys)
        let allIDs = groups.map(\.id) + strippedIDs.filter { groupOfID[$0] == nil }.sorted()
        var existing: [String: Outcome] = [:]
        existing.reserveCapacity(groups.count)
        // The store has no outcome of a log task this plan or the one in flight makes (the one in flight
        // has its own in `written`): only the others are looked up.
        var unstored: Set<String> = []
        for group in groups {
            let id = group.task.task.id
            if group.task === plan.logTasks[id] || group.task === previous?.logTasks[id] { unstored.insert(group.id) }
        }
        let unwritten = allIDs.filter { id in
            !unstored.contains(id) && (previous.map { $0.written[id] == nil && !$0.deleted.contains(id) } ?? true)
        }
        for chunk in unwritten.chunked(500) {
            for outcome in try store.outcomes(EntityQuery(ids: chunk)) { existing[outcome.id] = outcome }
        }
        if let previous { for id in allIDs { if let written = previous.written[id] { existing[id] = written } } }
        // Each incoming resource's values as stored before this batch, wherever they were.
        var storedValues: [ResourceKey: (outcome: String, values: [OutcomeValue])] = [:]
        for id in allIDs {
            guard let outcome = existing[id] else { continue }
            for (source, value) in Self.valuesWithSources(outcome) where incomingSources.contains(source) {
                storedValues[source, default: (id, [])].values.append(value)
            }
        }

        var outcomeValues = 0
        for id in allIDs {
            let stored = existing[id]
            var pairs = stored.map(Self.valuesWithSources) ?? []
            let group = groupOfID[id].map { groups[$0] }
            let items = group?.items ?? []
            var incoming: Set<ResourceKey> = []
            for item in items { incoming.insert(contributions[item].source) }
            // What leaves this outcome: deleted resources' values, and those of resources now elsewhere.
            let removed = (removedOutcomes[id] ?? []).union(formerOutcomes[id] ?? [])
            let before = pairs
            pairs.removeAll { incoming.contains($0.source) || removed.contains($0.source) }
            for item in items {
                let source = contributions[item].source
                // Positions are given when the outcome is assembled; compare values without them.
                let values = Self.withoutPositions(contributions[item].values)
                let storedBefore = storedValues[source]
                plan.statuses[source] = storedBefore == nil ? .created : (storedBefore?.outcome == id && storedBefore?.values == values ? .unchanged : .updated)
                plan.outcomeOfSource[source] = id
                for value in values { pairs.append((source: source, value: value)) }
                outcomeValues += values.count
            }
            pairs.sort { ($0.value.createdDate ?? .distantPast, $0.source) < ($1.value.createdDate ?? .distantPast, $1.source) }
            if pairs.elementsEqual(before, by: { $0.source == $1.source && $0.value == $1.value }) { continue }
            if pairs.isEmpty {
                if stored != nil {
                    plan.groups.append((removed.union(incoming), [.delete(.outcome, id: id, at: nil)]))
                    plan.deleted.insert(id)
                }
                continue
            }
            var values = pairs.map(\.value)
            for index in values.indices { values[index].index = values.count > 1 ? index : nil }
            let provenance = group.flatMap { $0.items.first.map { contributions[$0].provenance } } ?? stored?.metadata.provenance
            let sources = Self.valueSources(pairs.map(\.source), provenance: provenance)
            let outcome: Outcome
            if let group {
                let task = group.task.task
                let effective = task.schedule.eventStart(occurrence: group.occurrence) ?? task.metadata.effectiveDate
                var metadata = EntityMetadata(
                    effectiveDate: max(effective, stored?.metadata.effectiveDate ?? effective), timezone: options.mapping.timeZone,
                    provenance: provenance)
                metadata.linkage.valueSources = sources
                outcome = Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: group.occurrence, values: values, metadata: metadata)
            } else if var kept = stored {
                // Only removals: the same outcome with fewer values.
                kept.values = values
                kept.metadata.userInfo = nil
                kept.metadata.linkage.valueSources = sources
                outcome = kept
            } else {
                continue
            }
            // New as far as this import knows (neither stored when planned nor in the batch in flight): an add,
            // which the store writes with the other adds task by task, without looking for a version first.
            var changes: [StoreChange] = [stored == nil ? .add(.outcome(outcome)) : .upsert(.outcome(outcome))]
            // The store links a new version to the resource of its provenance; the others are linked here.
            let linked = outcome.metadata.provenance.map { ResourceKey(type: $0.fhirType, id: $0.fhirID) }
            for source in Set(pairs.map(\.source)) where source != linked {
                changes.append(.link(ResourceLink(sourceSystem: options.mapping.sourceSystem, resourceType: source.type, resourceID: source.id,
                                                  entityKind: .outcome, entityID: id)))
            }
            plan.written[id] = consume outcome
            plan.groups.append((incoming.union(removed), changes))
        }
        plan.reporting.append { [outcomeValues] in $0.report.outcomeValues += outcomeValues }
        let removedAnything = Set(removedOutcomes.values.flatMap { $0 })
        for key in plan.removedSources where plan.byKey[key] != nil {
            if removedAnything.contains(key) {
                plan.reporting.append { $0.report.count(key.type) { $0.deleted += 1 } }
            } else {
                plan.reporting.append { importer in
                    importer.report.count(key.type) { $0.skipped += 1 }
                    importer.report.note(key.description, MappingNote(.info, at: key.type, "marked for deletion, and nothing of it is in the store"))
                }
            }
        }
        var recorded: Set<ResourceKey> = []
        for index in plan.groups.indices {
            for key in plan.groups[index].sources.sorted() where !plan.removedSources.contains(key) && !recorded.contains(key) {
                guard let status = plan.statuses[key], status != .unchanged, let record = sourceRecords[key] else { continue }
                plan.groups[index].changes.append(.recordSource(record))
                recorded.insert(key)
            }
        }
        return plan
    }

    /// A task version's occurrence: what an outcome belongs to.
    private struct TaskOccurrence: Hashable {
        let task: UUID
        let occurrence: Int
    }

    /// `values` without their positions in an outcome, which are given when it is assembled.
    private static func withoutPositions(_ values: [OutcomeValue]) -> [OutcomeValue] {
        guard values.contains(where: { $0.index != nil }) else { return values }
        return values.map { var value = $0; value.index = nil; return value }
    }

    /// Observations this store wrote back itself (they carry the export mapping's identifier, whose
    /// value is an outcome id) are that outcome as the provider now holds it: when the store has the
    /// outcome as a patient recorded it (no FHIR provenance), the store's version is the authority and
    /// the echo changes nothing; its values would otherwise be added to the outcome a second time. In a
    /// store without the outcome (a fresh one), the Observation maps as any other.
    private func dropOwnWriteBacks(_ pending: [MappedInput], from contributions: inout [OutcomeContribution], plan: inout OutcomePlan) throws {
        guard let system = engine.mappings.export?.identifierSystem else { return }
        var echoes: [ResourceKey: String] = [:]
        for input in pending where input.mapped.key.type == "Observation" {
            guard case .mapped = input.mapped.result,
                  let identifier = input.raw.children(named: "identifier").first(where: { $0.childValue("system") == system }),
                  let outcomeID = identifier.childValue("value") else { continue }
            echoes[input.mapped.key] = outcomeID
        }
        guard !echoes.isEmpty else { return }
        var recordedByApp: Set<String> = []
        for chunk in Array(Set(echoes.values)).chunked(500) {
            for outcome in try store.outcomes(EntityQuery(ids: chunk)) where outcome.metadata.provenance == nil {
                recordedByApp.insert(outcome.id)
            }
        }
        let own = Set(echoes.filter { recordedByApp.contains($0.value) }.keys)
        guard !own.isEmpty else { return }
        contributions.removeAll { own.contains($0.source) }
        for key in own { plan.statuses[key] = .unchanged }
    }

    /// The outcomes holding values of `sources`, by outcome id: as the store links them, and as the batch
    /// planned before (`previous`, whose links may not be committed yet) placed them.
    private func linkedOutcomes(of sources: Set<ResourceKey>, after previous: OutcomePlan?) throws -> [String: Set<ResourceKey>] {
        var outcomes: [String: Set<ResourceKey>] = [:]
        for link in try store.links(ofResources: sources.map { ($0.type, $0.id) })
        where link.entityKind == .outcome && link.sourceSystem == options.mapping.sourceSystem {
            outcomes[link.entityID, default: []].insert(link.resource)
        }
        for source in sources {
            if let id = previous?.outcomeOfSource[source] { outcomes[id, default: []].insert(source) }
        }
        return outcomes
    }

    /// The resources an outcome's values came from, in value order, as `userInfo` keeps them: nil when
    /// every value came from the resource its provenance names (most outcomes), so that the store keeps
    /// no JSON for them.
    private static func valueSources(_ sources: [ResourceKey], provenance: Provenance?) -> [ResourceKey]? {
        if let provenance, sources.allSatisfy({ $0 == provenance.resource }) { return nil }
        return sources
    }

    /// An outcome's values, each with the resource it came from (`userInfo` keeps them in value order;
    /// without it, they all came from the resource of its provenance).
    private static func valuesWithSources(_ outcome: Outcome) -> [(source: ResourceKey, value: OutcomeValue)] {
        let sources = outcome.metadata.linkage.valueSources ?? outcome.metadata.provenance.map { provenance in
            Array(repeating: provenance.resource, count: outcome.values.count)
        } ?? []
        return withoutPositions(outcome.values).enumerated().map { position, value in
            (position < sources.count ? sources[position] : ResourceKey(type: "unknown", id: String(position)), value)
        }
    }

    // MARK: - Helpers

    private func currentEntities(_ kind: EntityKind, ids: [String]) throws -> [CareEntity] {
        let query = EntityQuery(ids: ids)
        switch kind {
        case .patient: return try store.patients(query).map(\.careEntity)
        case .carePlan: return try store.carePlans(query).map(\.careEntity)
        case .contact: return try store.contacts(query).map(\.careEntity)
        case .task: return try store.tasks(query).map(\.careEntity)
        case .outcome: return try store.outcomes(query).map(\.careEntity)
        }
    }

    /// The record of `resource` as received from `system`.
    private static func source(_ resource: Element, key: ResourceKey, system: String) -> SourceResource {
        let meta = resource.child(named: "meta")
        return SourceResource(
            sourceSystem: system, resourceType: key.type, resourceID: key.id, versionID: meta?.childValue("versionId"),
            lastUpdated: meta?.childValue("lastUpdated"), body: FHIRJSON.write(resource))
    }

    private func count(_ summary: BatchSummary) {
        report.entitiesAdded += summary.added
        report.entitiesUpdated += summary.updated
        report.entitiesUnchanged += summary.unchanged
        report.entitiesDeleted += summary.deleted
    }

    private func fail(type: String, origin: Origin, key: ResourceKey?, path: String?, _ message: String, payload: Element? = nil) {
        let message = MessageText.boundingQuotes(message)
        report.count(type) { $0.failed += 1 }
        report.failures.append(ImportReport.Failure(source: origin.source, entry: origin.entry, resource: key?.description, path: path, message: message))
        guard !options.dryRun else { return }
        let letter = DeadLetter(
            system: options.mapping.sourceSystem, resourceType: key?.type ?? type, resourceID: key?.id,
            reason: message, detail: [origin.source, origin.entry.map { "entry[\($0)]" }, path].compactMap { $0 }.joined(separator: " "),
            payload: payload.map { FHIRJSON.write($0) })
        guard deferredDeadLetters == nil else {
            deferredDeadLetters?.append(letter)
            return
        }
        var batch = StoreBatch()
        batch.deadLetter(letter)
        _ = try? store.apply(batch)
    }

    /// Writes the dead letters of pass 1, which waited for it to end (it may start again).
    private func writeDeferredDeadLetters() {
        guard let letters = deferredDeadLetters else { return }
        deferredDeadLetters = nil
        guard !letters.isEmpty else { return }
        var batch = StoreBatch()
        for letter in letters { batch.deadLetter(letter) }
        _ = try? store.apply(batch)
    }

    private func tick(_ message: String, force: Bool = false) {
        guard let progress, force || Date().timeIntervalSince(lastProgress) >= 1 else { return }
        lastProgress = Date()
        progress(message)
    }
}

extension Array {
    func chunked(_ size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
