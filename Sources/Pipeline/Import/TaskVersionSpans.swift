import CareModel
import Foundation
import Mapping

/// Cuts a long-running plan or order task into versions that each hold a bounded number of events
/// (Docs/measurement-history.md, "Plan and order tasks"). Pure: it reads and writes nothing.
///
/// CareKit computes a version's events of a day by stepping through its schedule from the schedule's start
/// (`OCKScheduleElement.events(from:to:)`), and only for the days the version is in effect (from its
/// effective date to the next version's, `makePartialEvents`). A version whose schedule starts at its own
/// effective date and which holds at most ``maximumEvents`` events before the next one takes effect costs
/// at most that many steps on any of its days; the last one, on any day up to today. Each new version
/// continues every element of the one before from its first event on or after the cut
/// (``ScheduleElement/continued(from:)``: the same events, numbered from 0).
enum TaskVersionSpans {
    /// The events a version may hold before the next takes effect: about a year of a daily task. The
    /// trade-off (measured, Docs/measurement-history.md): every version is one more entity a new device
    /// pulls; halving this halves what the worst day costs and doubles the versions.
    static let maximumEvents = 366
    /// The fewest days a version a cut makes spans: a task with more events a day than the bound allows
    /// gets a version a month, not one a day.
    static let minimumDays = 28

    /// How many events CareKit steps through on `task`'s schedule to reach `date`.
    static func steps(_ task: CareTask, before date: Date) -> Int {
        task.schedule.elements.reduce(0) { $0 + $1.stepsBefore(date) }
    }

    /// The versions to write after `tip` (its current version, as stored or about to be): none when
    /// `today` (a day number of `options`) costs at most `maximumEvents` steps on it; else versions taking
    /// effect at day starts, none before day `firstDay` (the day after the task's last outcome, and no
    /// earlier than `tip` takes effect), each holding at most `maximumEvents` events where the cuts allow,
    /// the last one in effect today. Empty when a schedule cannot be continued.
    static func versions(after tip: CareTask, notBefore firstDay: Int, today: Int, options: MappingOptions, maximumEvents: Int = maximumEvents) -> [CareTask] {
        guard let endOfToday = options.startOfDay(number: today + 1) else { return [] }
        var versions: [CareTask] = []
        var base = tip
        var from = max(firstDay, options.firstDayStarting(atOrAfter: tip.metadata.effectiveDate))
        // Each round moves `from` on (by ``minimumDays`` but for the first cut), up to today.
        while from <= today, steps(base, before: endOfToday) > maximumEvents {
            // The latest cut day whose start the base reaches within the bound; `from` when it is past it.
            var (low, high) = (from, today)
            while low < high {
                let middle = (low + high + 1) / 2
                if let start = options.startOfDay(number: middle), steps(base, before: start) <= maximumEvents { low = middle } else { high = middle - 1 }
            }
            if !versions.isEmpty { low = min(max(low, from - 1 + minimumDays), today) }
            guard let next = RecentTaskStart.version(of: base, from: low, options: options) else { return [] }
            // Under a uuid of its own, so that outcomes planned before it is written can name it.
            let fresh = base.nextVersion(schedule: next.schedule, effectiveDate: next.metadata.effectiveDate)
            versions.append(fresh)
            base = fresh
            from = low + 1
        }
        return versions
    }
}
