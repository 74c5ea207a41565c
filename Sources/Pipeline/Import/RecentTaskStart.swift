import CareModel
import Foundation
import Mapping
import Store

/// Long-running plan and order tasks get a current version whose schedule starts recently
/// (Docs/measurement-history.md), so that a CareKit app asking for a day does not walk every event since
/// the task began (`OCKScheduleElement.events(from:to:)` steps from the element's start: a daily
/// medication ordered in 1928 costs some 35,800 steps a day).
///
/// A task whose current version starts more than two years (2 × ``recentDays``) before today and has more
/// than ``maximumSteps`` events before today gets one new version taking effect at the start of the *cut*
/// day: a year (``recentDays``) before today for a task with events to come, so that a chart of the last
/// year and today's events both walk only the new version; the day after its schedule's end for one that
/// has ended; and never before the day after its last outcome (of any version, tombstones included: no
/// outcome ever made falls in the new version's span) nor before the current version takes effect. A
/// version is so at most about two years of events when an import makes it; it gets a new one when it
/// is older (about once a year for a task still running). Each element continues from its first event on or after the cut
/// (``ScheduleElement/continued(from:)``: the same events, numbered from 0); an element that has ended
/// is left out, and a version left with none gets one all-day element on the day before it takes effect,
/// which CareKit never shows (it computes a version's events from its effective date).
///
/// The earlier version keeps its outcomes and indexes (exported Observation ids unchanged); an Observation
/// dated before the cut still goes on it (``ImportTaskCatalog/earlierVersions(of:)``). The new version
/// keeps the provenance, content hash included, of the one it follows: it is the same source content, so
/// the next import of an unchanged plan or order leaves it; a changed one is a new version with the
/// mapped schedule, which the same import's step cuts again. Written as an update (the store makes it a
/// new version after the current one, in the patient's revision log), so devices pull it as a new version.
struct RecentTaskStart {
    let store: any Store
    let options: ImportOptions
    let ledger: ImportLedger
    /// More events than this before today (a year of a daily task) make a task long-running...
    static let maximumSteps = 400
    /// ... when its schedule also starts more than twice this many days ago; the new version starts this
    /// many days before today.
    static let recentDays = 365

    /// Gives the long-running tasks among `taskIDs` their recent version. Returns the new versions.
    /// Writes nothing in a dry run.
    ///
    /// - Throws: only the store failing; a version the store refuses leaves its task as it was, with a warning.
    @discardableResult
    func run(taskIDs: [String], today: Date = Date()) throws -> [CareTask] {
        guard !options.dryRun, !taskIDs.isEmpty else { return [] }
        let mapping = options.mapping
        guard let todayNumber = mapping.dayNumber(of: today), let todayStart = mapping.startOfDay(number: todayNumber),
              let longAgo = mapping.startOfDay(number: todayNumber - 2 * Self.recentDays) else { return [] }
        var longRunning: [CareTask] = []
        for chunk in taskIDs.sorted().chunked(500) {
            for task in try store.tasks(EntityQuery(ids: chunk))
            where !task.isObservationLog && task.metadata.deletedDate == nil && task.schedule.startDate < longAgo {
                let steps = task.schedule.elements.reduce(0) { $0 + $1.stepsBefore(todayStart) }
                if steps > Self.maximumSteps { longRunning.append(task) }
            }
        }
        guard !longRunning.isEmpty else { return [] }
        let lastOutcomes = try store.lastOutcomeEventStarts(ofTasks: longRunning.map(\.id))
        var versions: [CareTask] = []
        for task in longRunning {
            var day = todayNumber - Self.recentDays
            if let end = task.schedule.endDate, end <= todayStart { day = mapping.firstDayStarting(atOrAfter: end) }
            if let last = lastOutcomes[task.id].flatMap(mapping.dayNumber(of:)) { day = max(day, last + 1) }
            day = max(day, mapping.firstDayStarting(atOrAfter: task.metadata.effectiveDate))
            guard let version = Self.version(of: task, from: day, options: mapping) else {
                ledger.note(task.id, MappingNote(.warning, at: "Task", "its schedule cannot be continued from a recent day: it keeps its start"))
                continue
            }
            versions.append(version)
        }
        var written: [CareTask] = []
        for version in versions {
            // The mapping kept the content JSON of each task it hashed, by hash, for the write of that
            // task; one found unchanged was never written, and its JSON (with the schedule from the start)
            // would be taken for this version, which keeps that hash: taking it here leaves it unused.
            _ = try? ContentJSON.payload(of: .task(version))
            var batch = StoreBatch()
            batch.append(.update(.task(version)))
            do {
                ledger.count(try store.apply(batch))
                written.append(version)
                ledger.note(version.id, MappingNote(
                    .info, at: "Task",
                    "long-running: a version starting \(mapping.dayNumber(of: version.metadata.effectiveDate).map(mapping.isoDay(number:)) ?? "?") takes effect; earlier outcomes keep theirs"))
            } catch let error as StoreError where error.isStoreFailure {
                throw error
            } catch {
                ledger.note(version.id, MappingNote(.warning, at: "Task", "keeps its start: the store refused its recent version: \(error)"))
            }
        }
        if !written.isEmpty { ledger.tick("gave \(written.count) long-running tasks a version starting recently", force: true) }
        return written
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
