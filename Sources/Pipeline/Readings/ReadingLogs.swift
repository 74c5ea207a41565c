import CareModel
import Foundation
import Mapping
import Store

/// The occurrence of a patient's measurement log a reading goes on, when no plan's or order's task has one
/// at its time: the log of its code (an existing log coded with the reading's code, or its panel's: a
/// blood-pressure log keeps systolic and diastolic together), else a new one keyed by that code, planned
/// by ``LogReadingDays`` (Docs/measurement-history.md): a day the log has no event gets one on a new
/// version, stored in the same batch as the outcomes.
struct ReadingLogs {
    /// Where a reading goes: an occurrence of a task version.
    struct Target: Hashable {
        var taskID: String
        var taskUUID: UUID
        var occurrence: Int
        var eventStart: Date
        var timeZone: TimeZone

        var outcomeID: String { Outcome.id(taskUUID: taskUUID, occurrence: occurrence) }
    }

    /// One reading waiting for its log: its place in the batch and the row it is read by.
    struct Waiting {
        var index: Int
        var path: String
        var time: Date
        var zone: TimeZone
        var kind: ReadingKind
        var value: OutcomeValue
    }

    let store: any Store
    let patientID: String
    /// The patient's current log tasks.
    let logs: [CareTask]
    /// The table's panels: a panel's log is titled by it.
    let panels: [String: ReadingPanel]
    private(set) var waiting: [String: [Waiting]] = [:]
    private var logOf: [String: (log: CareTask?, key: String, title: String)] = [:]

    init(store: any Store, patientID: String, logs: [CareTask], panels: [String: ReadingPanel]) {
        self.store = store
        self.patientID = patientID
        self.logs = logs
        self.panels = panels
    }

    /// The row a reading of rows `kinds` is kept in on the patient's log: the row of an existing log's code,
    /// else the first row (its log made from its panel's code, or its own).
    func row(for kinds: [ReadingKind]) -> (kind: ReadingKind, log: CareTask?) {
        for kind in kinds {
            let keys = ReadingKindCodes(kind).keys
            if let log = logs.first(where: { !Set($0.metadata.linkage.codes).isDisjoint(with: keys) }) { return (kind, log) }
        }
        return (kinds[0], nil)
    }

    /// Queues `reading` for the log of its row (`log`, or a new one).
    mutating func add(_ reading: Waiting, log: CareTask?) {
        let key = "\(ReadingKind.loinc)|\(reading.kind.panelCode ?? reading.kind.loincCodes.first ?? reading.kind.healthKitIdentifier)"
        let id = log?.id ?? MappingEngine.logTaskID(patientID: patientID, logKey: key)
        if logOf[id] == nil { logOf[id] = (log, key, reading.kind.panelCode.flatMap { panels[$0]?.display } ?? reading.kind.title ?? key) }
        waiting[id, default: []].append(reading)
    }

    /// Each waiting reading's target, or its refusal; and the log versions to store with them.
    func plan(now: Date) throws -> (targets: [(Waiting, Target)], versions: [String: [CareTask]], refusals: [ReadingRefusal]) {
        var targets: [(Waiting, Target)] = []
        var versions: [String: [CareTask]] = [:]
        var refusals: [ReadingRefusal] = []
        for (id, readings) in waiting.sorted(by: { $0.key < $1.key }) {
            guard let (log, key, title) = logOf[id] else { continue }
            let stored = try log.map { log in
                try store.history(.task, id: log.id).compactMap { entity -> CareTask? in
                    if case .task(let task) = entity { return task } else { return nil }
                }
            } ?? []
            // A log's days are numbered in its own zone; a new one's in its first reading's.
            let zone = log?.schedule.elements.first?.timeZone ?? readings[0].zone
            let options = MappingOptions(timeZone: zone)
            let last = try log.flatMap { log in LogReadingDays.isReadingDays(log.schedule) ? nil : try store.lastOutcomeEventStarts(ofTasks: [log.id])[log.id] }
            let newLog = log == nil ? LogReadingDays.NewLog(patientID: patientID, logKey: key, title: title, timeZone: zone) : nil
            let plan = LogReadingDays(options: options).plan(stored: stored, newLog: newLog, times: readings.map(\.time), lastOutcomeStart: last, today: now)
            versions[id] = plan.versions
            for reading in readings {
                switch plan.result(at: reading.time) {
                case .success(let placement):
                    targets.append((reading, Target(
                        taskID: placement.taskID, taskUUID: placement.taskUUID, occurrence: placement.occurrence, eventStart: placement.eventStart,
                        timeZone: zone)))
                case .failure(let refusal):
                    refusals.append(ReadingRefusal(index: reading.index, path: reading.path, reason: "cannot go on the patient's log: \(refusal)"))
                }
            }
        }
        return (targets, versions, refusals)
    }
}
