import CareModel
import Foundation
import Mapping

/// Where a reading goes: the occurrence of a task version it falls in.
///
/// The candidates are the patient's tasks coded with one of the reading type's LOINC codes (or the code
/// of the panel it is part of: a blood-pressure log keeps systolic and diastolic together), plans' and
/// orders' tasks (and HealthKit-linked ones) before logs. For each, the version in effect at the
/// reading's time owns it, and the reading belongs to that version's occurrence at the time
/// (``Schedule/occurrence(at:)``: the last event starting at or before it, unless it ended more than a day
/// before), provided the event starts while that version is in effect. The first candidate with such an
/// occurrence takes the reading.
struct ReadingPlacement {
    /// A task's versions, oldest first.
    let versions: [String: [CareTask]]
    /// The current versions of the patient's tasks, in the order they are tried.
    let tasks: [CareTask]

    init(tasks: [CareTask], versions: [CareEntity]) {
        var byID: [String: [CareTask]] = [:]
        for entity in versions {
            if case .task(let task) = entity { byID[task.id, default: []].append(task) }
        }
        self.versions = byID
        // Plans' and orders' tasks before logs: a reading the plan asked for fills its occurrence.
        self.tasks = tasks.filter { !$0.isObservationLog } + tasks.filter(\.isObservationLog)
    }

    /// The task version and occurrence a reading that may be any of `kinds` (`ReadingKinds/kinds(forCodings:)`)
    /// taken at `time` belongs to, with the row the task records (which fixes the unit), or nil.
    ///
    /// For each row in turn, the tasks that record it best come first: one linked to its HealthKit type,
    /// then one coded with its own code, then one coded with its panel's (a blood-pressure task takes
    /// both components; each component's linked task is coded with its own code and the panel's).
    func target(for kinds: [ReadingKind], at time: Date) -> (task: CareTask, occurrence: Int, kind: ReadingKind)? {
        for kind in kinds {
            let own = Set(kind.loincCodes.map { "\(ReadingKind.loinc)|\($0)" })
            let panel = kind.panelCode.map { "\(ReadingKind.loinc)|\($0)" }
            let ranks: [(CareTask) -> Bool] = [
                { $0.healthKitLinkage?.quantityIdentifier == kind.healthKitIdentifier },
                { !own.isDisjoint(with: $0.metadata.linkage.codes) },
                { task in panel.map { task.metadata.linkage.codes.contains($0) } ?? false },
            ]
            for rank in ranks {
                for task in tasks where rank(task) {
                    if let found = occurrence(of: task, at: time) { return (found.task, found.occurrence, kind) }
                }
            }
        }
        return nil
    }

    /// The outcomes a reading of rows `kinds` at `time` could have gone on under any version of the tasks
    /// that record them (a task's new version moves its occurrences): where a resent sample may be.
    func possibleOutcomeIDs(for kinds: [ReadingKind], at time: Date) -> [String] {
        let keys = kinds.reduce(into: Set<String>()) { $0.formUnion(ReadingKindCodes($1).keys) }
        let identifiers = Set(kinds.map(\.healthKitIdentifier))
        var ids: [String] = []
        for task in tasks where !keys.isDisjoint(with: task.metadata.linkage.codes)
            || task.healthKitLinkage.map({ identifiers.contains($0.quantityIdentifier) }) == true {
            for version in versions[task.id] ?? [task] where version.deletedDate == nil {
                if let occurrence = version.schedule.occurrence(at: time) { ids.append(Outcome.id(taskUUID: version.uuid, occurrence: occurrence)) }
            }
        }
        return ids
    }

    /// The occurrence at `time` of the version of `task` in effect then.
    private func occurrence(of task: CareTask, at time: Date) -> (task: CareTask, occurrence: Int)? {
        let chain = versions[task.id] ?? [task]
        for (position, version) in chain.enumerated().reversed() where version.effectiveDate <= time {
            guard version.deletedDate == nil, let occurrence = version.schedule.occurrence(at: time),
                  let start = version.schedule.eventStart(occurrence: occurrence) else { return nil }
            let next = chain.indices.contains(position + 1) ? chain[position + 1].effectiveDate : nil
            if start >= version.effectiveDate, next.map({ start < $0 }) ?? true { return (version, occurrence) }
            // The event started before this version: it is the earlier version's.
        }
        return nil
    }
}

/// The `system|code` keys a task carrying a reading type has (its own LOINC codes, and its panel's).
struct ReadingKindCodes {
    let keys: Set<String>

    init(_ kind: ReadingKind) {
        var keys = Set(kind.loincCodes.map { "\(ReadingKind.loinc)|\($0)" })
        if let panel = kind.panelCode { keys.insert("\(ReadingKind.loinc)|\(panel)") }
        self.keys = keys
    }
}
