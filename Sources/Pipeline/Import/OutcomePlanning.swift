import CareModel
import FHIR
import Foundation
import Mapping
import Store
import Surveys

/// What outcome planning reads of the store; it writes nothing.
protocol OutcomePlanningReads {
    /// The current versions of tasks `ids` (those the store has).
    func tasks(ids: [String]) throws -> [CareTask]
    /// Every version of task `id`, oldest first (``LogVersionPlacement``).
    func versions(ofTask id: String) throws -> [CareTask]
    /// The current versions of outcomes `ids` (those the store has).
    func outcomes(ids: [String]) throws -> [Outcome]
    /// The store's links of the resources `resources`.
    func links(ofResources resources: [(type: String, id: String)]) throws -> [ResourceLink]
}

/// The reads of a ``Store``.
struct StoreReads: OutcomePlanningReads {
    let store: any Store

    func tasks(ids: [String]) throws -> [CareTask] { try store.tasks(EntityQuery(ids: ids)) }
    func versions(ofTask id: String) throws -> [CareTask] {
        try store.history(.task, id: id).compactMap { if case .task(let task) = $0 { task } else { nil } }
    }
    func outcomes(ids: [String]) throws -> [Outcome] { try store.outcomes(EntityQuery(ids: ids)) }
    func links(ofResources resources: [(type: String, id: String)]) throws -> [ResourceLink] { try store.links(ofResources: resources) }
}

/// A task version as planning uses it: looked up once per outcome value, so shared, not copied.
final class PlannedTask {
    let task: CareTask

    init(_ task: CareTask) {
        self.task = task
    }
}

/// What one batch of outcome-making resources writes, and reports once it is written. Planning
/// changes nothing, so that a plan made while the store refused part of the batch before can be
/// made again.
struct OutcomePlan {
    /// Log tasks new to the store, by id: written first, as outcomes name them.
    var logTasks: [String: PlannedTask] = [:]
    var logBatch = StoreBatch()
    /// The changes of each outcome, kept apart so that one the store refuses fails alone.
    var groups: [(sources: Set<ResourceKey>, changes: [StoreChange])] = []
    var statuses: [ResourceKey: ImportStatus] = [:]
    var removedSources: Set<ResourceKey> = []
    var byKey: [ResourceKey: (ImportOrigin, Element)] = [:]
    /// The outcome versions it writes, by id: the next batch, planned while this one is written,
    /// takes them for the store's.
    var written: [String: Outcome] = [:]
    /// The outcomes it deletes (every value gone), for the next batch likewise.
    var deleted: Set<String> = []
    /// The outcome each resource's values go to, for the next batch: the store's links may not be
    /// committed yet when it is planned.
    var outcomeOfSource: [ResourceKey: String] = [:]
    /// What the report says of it: notes, skips, failures that do not depend on the store.
    var reporting: [(ImportLedger) -> Void] = []
}

/// Plans the outcomes of a batch of Observations: which outcome (task occurrence) each one's values go
/// to, the outcomes they make, change or empty (a resource deleted, or moved to another occurrence),
/// the log tasks they need, and whether each resource is created, updated or unchanged.
///
/// It reads the store through ``OutcomePlanningReads`` and writes nothing; the
/// ``PipelinedOutcomeWriter`` writes its plans, and plans the next batch while one is written: what that
/// one writes (`after`) counts as stored.
final class OutcomePlanner {
    let reads: any OutcomePlanningReads
    let options: ImportOptions
    /// The export mapping's identifier system: Observations carrying it were written back by this store.
    let writeBackSystem: String?
    /// The Questionnaires survey tasks ask: a provider's QuestionnaireResponse placed on a survey task
    /// has its kinds written against the one its task asks (``SurveyAnswerKinds``). Nil: kinds as mapped.
    var surveys: SurveyQuestionnaireCache?
    /// The log tasks earlier plans of this import made, by id.
    private var logTasksMade: [String: PlannedTask] = [:]
    /// The task versions outcomes belong to, as read from the store, by id.
    private var taskVersions: [String: PlannedTask] = [:]
    /// The days with a reading of each log in this import, by log id (the index pass's
    /// ``InputIndexing/Indexed/logDays``): the days of the log tasks it makes (`logStart`).
    var logDays: [String: [Int]] { get { logStart.logDays } set { logStart = LogTaskStart(options: options.mapping, logDays: newValue) } }
    private var logStart: LogTaskStart
    /// The version of a log that owns a value's day.
    private lazy var logVersions = LogVersionPlacement(reads: reads, options: options.mapping)
    /// Earlier versions of tasks asked for, by version uuid: read once per task and import.
    private var earlierVersions: [UUID: PlannedTask] = [:]
    private var earlierVersionsRead: Set<String> = []

    /// Version `uuid` of task `id`, read from the store's history of it once per import.
    private func earlierVersion(_ uuid: UUID, of id: String) throws -> PlannedTask? {
        if earlierVersionsRead.insert(id).inserted {
            for version in try reads.versions(ofTask: id) { earlierVersions[version.uuid] = PlannedTask(version) }
        }
        return earlierVersions[uuid]
    }
    /// How the occurrences of each log version count, by version uuid: worked out once per import.
    private var logVersionDays: [UUID: LogTaskStart.Days] = [:]

    init(reads: any OutcomePlanningReads, options: ImportOptions, writeBackSystem: String?) {
        self.reads = reads
        self.options = options
        self.writeBackSystem = writeBackSystem
        logStart = LogTaskStart(options: options.mapping, logDays: [:])
    }

    /// Takes the log tasks of `plan`, which is being written, as made.
    func adopt(_ plan: OutcomePlan) {
        for (id, task) in plan.logTasks { logTasksMade[id] = task }
    }

    /// A task version's occurrence: what an outcome belongs to.
    private struct TaskOccurrence: Hashable {
        let task: UUID
        let occurrence: Int
    }

    /// The contributions of a batch that go to one outcome (a task occurrence).
    private struct OutcomeGroup {
        let id: String
        let task: PlannedTask
        let occurrence: Int
        /// Positions in the batch's contributions, in input order.
        var items: [Int]
    }

    /// Plans the writes of `pending` and of `removals` (deletions of outcome-making resources), taking the
    /// outcomes and log tasks of `previous` (the plan being written) for the store's.
    func planOutcomes(
        _ pending: [MappedInput], removals: [(key: ResourceKey, origin: ImportOrigin)], catalog: ImportTaskCatalog, after previous: OutcomePlan?
    ) throws -> OutcomePlan {
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
                plan.reporting.append { $0.count(mapped.key.type) { $0.unchanged += 1 } }
                continue
            }
            sourceRecords[mapped.key] = input.source
            let type = mapped.key.type
            let notes = mapped.notes
            if !notes.isEmpty { plan.reporting.append { ledger in for note in notes { ledger.note(mapped.key.description, note) } } }
            switch mapped.result {
            case .skipped(let reason):
                plan.reporting.append { ledger in
                    ledger.count(type) { $0.skipped += 1 }
                    ledger.note(mapped.key.description, MappingNote(.info, at: type, "skipped: \(reason)"))
                }
            case .failed(let failure):
                plan.reporting.append { $0.fail(type: type, origin: origin, key: mapped.key, path: failure.path, failure.message, payload: raw) }
            case .delete:
                plan.removedSources.insert(mapped.key)
                plan.byKey[mapped.key] = (origin, raw)
            case .mapped(_, let made):
                if made.isEmpty { plan.reporting.append { $0.count(type) { $0.skipped += 1 } } }
                contributions += made
                plan.byKey[mapped.key] = (origin, raw)
            }
        }
        try dropOwnWriteBacks(pending, from: &contributions, plan: &plan)
        for (key, origin) in removals {
            plan.removedSources.insert(key)
            plan.byKey[key] = (origin, Element.resource(key.type, children: []))
        }

        // The log tasks first, so that outcomes can name them. They stay out of the catalog, which worker
        // threads read while this runs.
        func logTask(_ id: String) -> PlannedTask? {
            plan.logTasks[id] ?? logTasksMade[id] ?? previous?.logTasks[id]
        }
        // A new log's days are its reading days in the import (``LogTaskStart``).
        var batchDays: [String: Set<Int>] = [:]
        for contribution in contributions where contribution.isLogged {
            batchDays[contribution.taskID, default: []].insert(contribution.occurrence)
        }
        for contribution in contributions {
            guard let id = contribution.logTaskID, logTask(id) == nil, catalog.task(id: id) == nil, let log = contribution.logTask else { continue }
            let started = logStart.started(log, batchDays: batchDays[id] ?? [contribution.occurrence]) ?? log
            plan.logBatch.upsert(started)
            plan.logTasks[id] = PlannedTask(started)
        }

        // The task versions outcomes belong to, as stored (or about to be: the log tasks).
        var missingTasks: Set<String> = []
        for contribution in contributions where taskVersions.index(forKey: contribution.taskID) == nil && logTask(contribution.taskID) == nil {
            missingTasks.insert(contribution.taskID)
        }
        for chunk in Array(missingTasks).chunked(500) {
            for task in try reads.tasks(ids: chunk) { taskVersions[task.id] = PlannedTask(task) }
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
            guard var task = taskVersions[taskID] ?? logTask(taskID)
                ?? (options.dryRun ? catalog.task(id: taskID).map(PlannedTask.init) : nil) else {
                let source = contribution.source
                let (origin, raw) = plan.byKey[source] ?? (ImportOrigin(file: "?"), nil)
                plan.reporting.append {
                    $0.fail(type: source.type, origin: origin, key: source, path: nil, "its task \(taskID) is not in the store", payload: raw)
                }
                continue
            }
            var occurrenceIndex = contribution.occurrence
            // An earlier version the mapping matched (its time is before the current version takes effect).
            if let uuid = contribution.taskUUID, uuid != task.task.uuid {
                guard let earlier = try earlierVersion(uuid, of: taskID) else {
                    let source = contribution.source
                    let (origin, raw) = plan.byKey[source] ?? (ImportOrigin(file: "?"), nil)
                    plan.reporting.append {
                        $0.fail(type: source.type, origin: origin, key: source, path: nil, "its task \(taskID)'s version \(uuid) is not in the store", payload: raw)
                    }
                    continue
                }
                task = earlier
            }
            if contribution.isLogged {
                // A log value's day counts from the epoch; it goes on the version owning that day, its
                // occurrence that of its day among the version's (``LogTaskStart/Days``).
                let day = occurrenceIndex
                task = try logVersions.owner(ofDay: day, current: task)
                let log = task.task
                let days = logVersionDays[log.uuid] ?? logStart.days(of: log)
                logVersionDays[log.uuid] = days
                guard let occurrence = LogTaskStart.occurrence(ofDay: day, in: days) else {
                    let refusal = logStart.refusal(day: day, log: log, days: days) ?? "its day has no event of log task \(log.id)"
                    let source = contribution.source
                    let (origin, raw) = plan.byKey[source] ?? (ImportOrigin(file: "?"), nil)
                    plan.reporting.append { $0.fail(type: source.type, origin: origin, key: source, path: nil, refusal, payload: raw) }
                    continue
                }
                occurrenceIndex = occurrence
            }
            let occurrence = TaskOccurrence(task: task.task.uuid, occurrence: occurrenceIndex)
            if let group = groupOfOccurrence[occurrence] {
                groups[group].items.append(position)
            } else {
                groupOfOccurrence[occurrence] = groups.count
                groups.append(OutcomeGroup(
                    id: Outcome.id(taskUUID: occurrence.task, occurrence: occurrence.occurrence), task: task,
                    occurrence: occurrenceIndex, items: [position]))
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
            for outcome in try reads.outcomes(ids: chunk) { existing[outcome.id] = outcome }
        }
        if let previous { for id in allIDs { if let written = previous.written[id] { existing[id] = written } } }
        // Each incoming resource's values as stored before this batch, wherever they were.
        var storedValues: [ResourceKey: (outcome: String, values: [OutcomeValue])] = [:]
        for id in allIDs {
            guard let outcome = existing[id] else { continue }
            for (source, value) in OutcomeValueSources.valuesWithSources(outcome) where incomingSources.contains(source) {
                storedValues[source, default: (id, [])].values.append(value)
            }
        }

        var outcomeValues = 0
        for id in allIDs {
            let stored = existing[id]
            var pairs = stored.map(OutcomeValueSources.valuesWithSources) ?? []
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
                var values = OutcomeValueSources.withoutPositions(contributions[item].values)
                if source.type == "QuestionnaireResponse", let task = group?.task.task { values = try surveyKinds(values, of: task) }
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
            let sources = OutcomeValueSources.encode(pairs.map(\.source), provenance: provenance)
            let outcome: Outcome
            if let group {
                let task = group.task.task
                // A log's reading days have one event each, in order: its element is the occurrence's.
                let readingDay = task.isObservationLog && LogTaskStart.isReadingDays(task.schedule) && group.occurrence < task.schedule.elements.count
                    ? task.schedule.elements[group.occurrence].start : nil
                let effective = readingDay ?? task.schedule.eventStart(occurrence: group.occurrence) ?? task.metadata.effectiveDate
                // The store keeps a new version from taking effect before the one it follows (`.noEarlierThanPrevious`).
                var metadata = EntityMetadata(effectiveDate: effective, timezone: options.mapping.timeZone, provenance: provenance)
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
            var changes: [StoreChange] = [stored == nil ? .add(.outcome(outcome)) : .upsert(.outcome(outcome), effective: .noEarlierThanPrevious)]
            // The store links a new version to the resource of its provenance; the others are linked here.
            let linked = outcome.metadata.provenance.map { ResourceKey(type: $0.fhirType, id: $0.fhirID) }
            for source in Set(pairs.map(\.source)) where source != linked {
                changes.append(.link(ResourceLink(sourceSystem: options.mapping.sourceSystem, resourceType: source.type, resourceID: source.id,
                                                  entityKind: .outcome, entityID: id)))
            }
            plan.written[id] = consume outcome
            plan.groups.append((incoming.union(removed), changes))
        }
        plan.reporting.append { [outcomeValues] in $0.addOutcomeValues(outcomeValues) }
        let removedAnything = Set(removedOutcomes.values.flatMap { $0 })
        for key in plan.removedSources where plan.byKey[key] != nil {
            if removedAnything.contains(key) {
                plan.reporting.append { $0.count(key.type) { $0.deleted += 1 } }
            } else {
                plan.reporting.append { ledger in
                    ledger.count(key.type) { $0.skipped += 1 }
                    ledger.note(key.description, MappingNote(.info, at: key.type, "marked for deletion, and nothing of it is in the store"))
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

    /// The values of a response placed on survey task `task`, their kinds written against the
    /// Questionnaire the task asks when the store keeps it (else as mapped).
    private func surveyKinds(_ values: [OutcomeValue], of task: CareTask) throws -> [OutcomeValue] {
        guard let surveys, case .found(let questionnaire, _) = try surveys.lookup(task) else { return values }
        return SurveyAnswerKinds.canonical(values, in: questionnaire)
    }

    /// Observations this store wrote back itself (they carry the export mapping's identifier, whose
    /// value is an outcome id) are that outcome as the provider now holds it: when the store has the
    /// outcome as a patient recorded it (no FHIR provenance), the store's version is the authority and
    /// the echo changes nothing; its values would otherwise be added to the outcome a second time. In a
    /// store without the outcome (a fresh one), the Observation maps as any other.
    private func dropOwnWriteBacks(_ pending: [MappedInput], from contributions: inout [OutcomeContribution], plan: inout OutcomePlan) throws {
        guard let system = writeBackSystem else { return }
        var echoes: [ResourceKey: String] = [:]
        for input in pending where input.mapped.key.type == "Observation" || input.mapped.key.type == "QuestionnaireResponse" {
            guard case .mapped = input.mapped.result,
                  let identifier = input.raw.children(named: "identifier").first(where: { $0.childValue("system") == system }),
                  let outcomeID = identifier.childValue("value") else { continue }
            echoes[input.mapped.key] = outcomeID
        }
        guard !echoes.isEmpty else { return }
        var recordedByApp: Set<String> = []
        for chunk in Array(Set(echoes.values)).chunked(500) {
            for outcome in try reads.outcomes(ids: chunk) where outcome.metadata.provenance == nil {
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
        for link in try reads.links(ofResources: sources.map { ($0.type, $0.id) })
        where link.entityKind == .outcome && link.sourceSystem == options.mapping.sourceSystem {
            outcomes[link.entityID, default: []].insert(link.resource)
        }
        for source in sources {
            if let id = previous?.outcomeOfSource[source] { outcomes[id, default: []].insert(source) }
        }
        return outcomes
    }
}
