import CareModel
import Foundation
import Mapping
import Store

extension OutcomePlanningReads {
    /// Without a history, the current version alone (what reads kept in memory know).
    func versions(ofTask id: String) throws -> [CareTask] { try tasks(ids: [id]) }
}

/// Which version of a log a value of a given day goes on: the one whose span holds the day, as
/// `store events` finds a day's version (from its effective date to the next version's).
///
/// A log stored before its start was moved off 1900-01-01 (`StoredLogUpgrade`) has two versions: the
/// 1900 one owns the days up to its last reading, whose outcomes keep their version and index (the id
/// they were exported under); the new one owns the days after. A value re-imported for an old day goes
/// back where it was; a new day's value goes on the new version with a small index. A day before the
/// first version's start goes on that version, which the planner refuses (``LogTaskStart/refusal(day:log:startDay:)``).
final class LogVersionPlacement {
    private let reads: any OutcomePlanningReads
    private let options: MappingOptions
    /// The versions of each log asked for, oldest first, tombstones left out: read once per import.
    private var versions: [String: [PlannedTask]] = [:]
    /// The first day each version owns, by version uuid: worked out once, compared for every value.
    private var firstOwnedDays: [UUID: Int] = [:]

    init(reads: any OutcomePlanningReads, options: MappingOptions) {
        self.reads = reads
        self.options = options
    }

    /// The version of log `current` (its current version) that owns day `day` (`MappingOptions/dayNumber(of:)`).
    /// The store's history is read only for a day before `current` took effect.
    func owner(ofDay day: Int, current: PlannedTask) throws -> PlannedTask {
        guard day < firstOwnedDay(of: current.task) else { return current }
        let id = current.task.id
        let all: [PlannedTask]
        if let known = versions[id] {
            all = known
        } else {
            all = try reads.versions(ofTask: id).filter { $0.metadata.deletedDate == nil }
                .map { $0.uuid == current.task.uuid ? current : PlannedTask($0) }
            versions[id] = all
        }
        // The last version in effect at the day's start; before the first one's start, the first one.
        return all.last { firstOwnedDay(of: $0.task) <= day } ?? all.first ?? current
    }

    /// The first day whose start `version` owns: that of its effective date, or the next one when it
    /// takes effect during the day.
    private func firstOwnedDay(of version: CareTask) -> Int {
        if let known = firstOwnedDays[version.uuid] { return known }
        let day = options.firstDayStarting(atOrAfter: version.metadata.effectiveDate)
        firstOwnedDays[version.uuid] = day
        return day
    }
}

extension MappingOptions {
    /// The number (``dayNumber(of:)``) of the first day starting at or after `date`; 0 before the epoch.
    func firstDayStarting(atOrAfter date: Date) -> Int {
        guard let day = dayNumber(of: date) else { return 0 }
        return startOfDay(number: day).map { $0 < date } == true ? day + 1 : day
    }
}
