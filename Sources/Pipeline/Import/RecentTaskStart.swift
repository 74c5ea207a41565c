import CareModel
import Foundation
import Mapping
import Store

/// Long-running plan and order tasks get versions that each hold about a year of events
/// (``TaskVersionSpans``, Docs/measurement-history.md), so that a CareKit app asking for any day does not
/// walk every event since the task began (`OCKScheduleElement.events(from:to:)` steps from the element's
/// start: a daily medication ordered in 1928 costs some 35,800 steps a day).
///
/// Twice in an import:
/// - *before outcomes are placed* (``planBeforeOutcomes(catalog:today:)``): every task the catalog holds as
///   the store will (new to the store, or unchanged) whose day costs more than the bound today gets its
///   versions from its start (a new task) or from the day after its last stored outcome, put in the
///   catalog so that each Observation goes on the version in effect on its day
///   (``ImportTaskCatalog/earlierVersions(of:)``, `OutcomeContribution.taskUUID`), and written
///   (``write(_:)``) once the entities are, before the first outcome;
/// - *at the end* (``run(taskIDs:today:)``): any other (a task whose plan or order changed, so written as a
///   new version with the mapped schedule) gets its versions from the day after its last outcome.
///
/// No version takes effect on or before the day of a stored outcome (of any version, tombstones included)
/// nor before the current version: earlier outcomes keep their version and index (exported Observation
/// ids unchanged). A new version keeps the provenance, content hash included, of the one it follows: it
/// is the same source content, so the next import of an unchanged plan or order leaves it; a changed one
/// is a new version with the mapped schedule, which the same import cuts again. Written as updates (new
/// versions after the current one, in the patient's revision log), so devices pull them as new versions.
struct RecentTaskStart {
    let store: any Store
    let options: ImportOptions
    let ledger: ImportLedger

    /// Plans the versions of the catalog's long-running tasks it holds as the store will, and puts them in
    /// the catalog. Returns them by task, oldest first, for ``write(_:)``. Nothing in a dry run.
    func planBeforeOutcomes(catalog: ImportTaskCatalog, today: Date = Date()) throws -> [[CareTask]] {
        guard !options.dryRun, let todayNumber = options.mapping.dayNumber(of: today) else { return [] }
        let candidates = catalog.plannedTaskIDs.sorted().compactMap { id -> CareTask? in
            guard catalog.holdsWrittenVersion(of: id), let task = catalog.task(id: id) else { return nil }
            return task
        }
        let planned = try plan(candidates, today: todayNumber, storedIDs: candidates.map(\.id).filter(catalog.wasStored))
        for versions in planned { catalog.append(versions: versions) }
        return planned
    }

    /// Gives the long-running tasks among `taskIDs` (as the store holds them now) their versions. Returns
    /// the new versions. Writes nothing in a dry run.
    ///
    /// - Throws: only the store failing; versions the store refuses leave their task as it was, with a warning.
    @discardableResult
    func run(taskIDs: [String], today: Date = Date()) throws -> [CareTask] {
        guard !options.dryRun, !taskIDs.isEmpty, let todayNumber = options.mapping.dayNumber(of: today) else { return [] }
        var tasks: [CareTask] = []
        for chunk in taskIDs.sorted().chunked(500) { tasks += try store.tasks(EntityQuery(ids: chunk)) }
        return try write(plan(tasks, today: todayNumber, storedIDs: tasks.map(\.id)))
    }

    /// The versions of each long-running one of `tasks` (current versions), from the day after its last
    /// stored outcome (read for `storedIDs`).
    private func plan(_ tasks: [CareTask], today: Int, storedIDs: [String]) throws -> [[CareTask]] {
        let mapping = options.mapping
        guard let endOfToday = mapping.startOfDay(number: today + 1) else { return [] }
        let longRunning = tasks.filter { task in
            !task.isObservationLog && task.metadata.deletedDate == nil
                && TaskVersionSpans.steps(task, before: endOfToday) > TaskVersionSpans.maximumEvents
        }
        guard !longRunning.isEmpty else { return [] }
        let stored = Set(storedIDs)
        let lastOutcomes = try store.lastOutcomeEventStarts(ofTasks: longRunning.map(\.id).filter(stored.contains))
        var planned: [[CareTask]] = []
        for task in longRunning {
            let firstDay = lastOutcomes[task.id].flatMap(mapping.dayNumber(of:)).map { $0 + 1 } ?? 0
            let versions = TaskVersionSpans.versions(after: task, notBefore: firstDay, today: today, options: mapping)
            if versions.isEmpty {
                ledger.note(task.id, MappingNote(.info, at: "Task", "long-running, but no version can start after its last outcome and hold fewer events: it keeps its schedule"))
            } else {
                planned.append(versions)
            }
        }
        return planned
    }

    /// About how many versions one transaction of ``write(_:)`` holds (a task's versions are never split).
    static let versionsPerTransaction = 1_000

    /// Writes the versions, each task's as a revision of its own (``StoreBatch/endRevision()``, so that
    /// devices pull what they pulled when each task had a transaction), the tasks of about
    /// ``versionsPerTransaction`` versions in one transaction: a transaction per task cost about 19,000
    /// instructions a version (BEGIN and COMMIT, the pages every commit writes to the WAL again) and a
    /// quarter of the import's page writes. When the store refuses such a transaction, its tasks are
    /// written again one transaction each, so that a task the store refuses (its first version failed to
    /// be written) keeps its schedule alone: the report is the same either way. Returns those written.
    @discardableResult
    func write(_ planned: [[CareTask]]) throws -> [CareTask] {
        let planned = planned.filter { !$0.isEmpty }
        // The mapping kept the content JSON of each task it hashed, by hash, for the write of that task;
        // these versions keep that hash, and would be written with it: dropping it here leaves it unused
        // (their own payloads are encoded as they are written).
        for versions in planned { for version in versions { ContentJSON.forget(.task(version)) } }
        var written: [CareTask] = []
        var first = 0
        while first < planned.count {
            var end = first + 1
            var count = planned[first].count
            while end < planned.count, count + planned[end].count <= Self.versionsPerTransaction {
                count += planned[end].count
                end += 1
            }
            let group = planned[first..<end]
            first = end
            if group.count > 1 {
                do {
                    ledger.count(try store.apply(Self.batch(group)))
                    for versions in group { written += noteWritten(versions) }
                    continue
                } catch let error as StoreError where error.isStoreFailure {
                    throw error
                } catch {
                    // One of them is refused: each alone, below.
                }
            }
            for versions in group {
                do {
                    ledger.count(try store.apply(Self.batch([versions])))
                    written += noteWritten(versions)
                } catch let error as StoreError where error.isStoreFailure {
                    throw error
                } catch {
                    ledger.note(versions[0].id, MappingNote(.warning, at: "Task", "keeps its schedule: the store refused its versions: \(error)"))
                }
            }
        }
        let tasks = Set(written.map(\.id)).count
        if tasks > 0 { ledger.tick("gave \(tasks) long-running tasks \(written.count) versions of about a year of events", force: true) }
        return written
    }

    /// The versions of `tasks` as new versions of each, each task's a revision of its own.
    private static func batch(_ tasks: some Collection<[CareTask]>) -> StoreBatch {
        var batch = StoreBatch()
        for versions in tasks {
            for version in versions { batch.update(version) }
            batch.endRevision()
        }
        return batch
    }

    /// Notes that one task's `versions` were written, and returns them.
    private func noteWritten(_ versions: [CareTask]) -> [CareTask] {
        let mapping = options.mapping
        let days = versions.compactMap { mapping.dayNumber(of: $0.metadata.effectiveDate).map(mapping.isoDay(number:)) }
        ledger.note(versions[0].id, MappingNote(
            .info, at: "Task",
            "long-running: \(versions.count) version(s) of about a year of events each, from \(days.first ?? "?") to \(days.last ?? "?"); earlier outcomes keep theirs"))
        return versions
    }

    /// `task` taking effect at the start of day `day`, its elements continued from then.
    static func version(of task: CareTask, from day: Int, options: MappingOptions) -> CareTask? {
        guard let start = options.startOfDay(number: day) else { return nil }
        var elements: [ScheduleElement] = []
        for element in task.schedule.elements {
            do {
                if let continued = try element.continued(from: start) { elements.append(continued) }
            } catch {
                return nil
            }
        }
        if elements.isEmpty {
            let zone = task.schedule.elements.first?.timeZone ?? options.timeZone
            guard let dayBefore = options.startOfDay(number: day - 1),
                  let placeholder = try? ScheduleElement(start: dayBefore, end: start, interval: DateComponents(day: 1), duration: .allDay, timeZone: zone)
            else { return nil }
            elements = [placeholder]
        }
        guard let schedule = try? Schedule(composing: elements) else { return nil }
        var version = task
        version.schedule = schedule
        version.metadata.effectiveDate = start
        return version
    }
}

extension Store {
    /// The latest outcome event start of each of tasks `ids`, over every version of each, by task id.
    public func lastOutcomeEventStarts(ofTasks ids: [String]) throws -> [String: Date] {
        // Both reads bind their ids a statement's worth at a time themselves.
        var taskOfVersion: [UUID: String] = [:]
        for case .task(let version) in try histories(.task, ids: ids) { taskOfVersion[version.uuid] = version.id }
        var last: [String: Date] = [:]
        for (uuid, start) in try lastOutcomeEventStarts(taskUUIDs: Array(taskOfVersion.keys)) {
            guard let id = taskOfVersion[uuid] else { continue }
            last[id] = max(last[id] ?? start, start)
        }
        return last
    }
}
