import CareModel
import Foundation

/// The part of "the events of patient P between two dates" that is the same in every store: which
/// occurrences a task version owns, which of several current outcomes an occurrence shows, and how
/// events are made and ordered. Each store reads the task versions and outcomes its own way
/// (SQLite's `EventQuery`, PostgreSQL's `ReadEvents`) and assembles them with this, so that both answer
/// alike.
public enum EventAssembly {
    /// The occurrences of task version `task` that overlap `interval` (start inclusive, running events
    /// count; end exclusive) and whose start falls in the time the version owns: from its effective date
    /// to `nextEffective`, the next version's (nil: no next version).
    public static func occurrences(of task: CareTask, ownedUntil nextEffective: Date?, in interval: DateInterval) -> [ScheduleEvent] {
        // Ask the schedule for at least a moment, so that an event still running at the interval's start
        // is found even when the version stopped owning new events before it.
        let until = max(min(interval.end, nextEffective ?? interval.end), interval.start.addingTimeInterval(0.001))
        return task.schedule.events(from: interval.start, to: until).filter { event in
            event.start >= task.effectiveDate && nextEffective.map({ event.start < $0 }) ?? true && event.start < interval.end
        }
    }

    /// Whether `outcome` is shown rather than `other`, both current versions of one occurrence (devices'
    /// versions in conflict): the one created last; of two created at once, the one read last (so a
    /// store reads them in one order: by task version, event start, occurrence, version number).
    public static func shows(_ outcome: Outcome, over other: Outcome) -> Bool {
        (other.metadata.createdDate ?? .distantPast) <= (outcome.metadata.createdDate ?? .distantPast)
    }

    /// The events of `scheduled` occurrences, each with the outcome `outcome` finds for its task version
    /// and occurrence index, by start, task id and occurrence. A log's occurrences are no to-dos: only
    /// those with an outcome (a reading) are events.
    public static func events(_ scheduled: [(task: CareTask, event: ScheduleEvent)], outcome: (UUID, Int) -> Outcome?) -> [Event] {
        scheduled
            .compactMap { item in
                let found = outcome(item.task.uuid, item.event.occurrence)
                if item.task.isObservationLog && found == nil { return nil }
                return Event(task: item.task, outcome: found, scheduleEvent: item.event)
            }
            .sorted { ($0.scheduleEvent.start, $0.task.id, $0.scheduleEvent.occurrence) < ($1.scheduleEvent.start, $1.task.id, $1.scheduleEvent.occurrence) }
    }
}
