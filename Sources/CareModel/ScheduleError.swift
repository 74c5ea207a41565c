import Foundation

/// Why a schedule or schedule element was refused. CareKit stops the program on these (preconditions);
/// CareGate reports them, because schedules arrive from outside (FHIR Timing, JSON files).
public enum ScheduleError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The interval sets no component at all, so the events would never move forward.
    case emptyInterval
    /// The interval is zero or has a negative component, so it does not move forward in time.
    case intervalNotForward(DateComponents)
    /// The interval uses a component other than year, month, week, day, hour, minute, second.
    case unsupportedIntervalComponent(String)
    /// An all-day element stepped by hours, minutes and seconds of less than 25 hours: CareKit steps
    /// all-day events from the start of their day, so such an element never leaves its first day and
    /// CareKit computes its events forever.
    case allDayIntervalTooShort(DateComponents)
    /// The element's exclusive end is not after its start.
    case endNotAfterStart(start: Date, end: Date)
    /// The duration is negative or not a finite number.
    case invalidDuration(Double)
    /// A schedule needs at least one element.
    case noElements
    /// A time of day outside 00:00–23:59.
    case invalidTimeOfDay(hour: Int, minute: Int)
    /// A weekday outside 1 (Sunday) … 7 (Saturday).
    case invalidWeekday(Int)

    public var description: String {
        switch self {
        case .emptyInterval:
            return "schedule element has an empty interval (no calendar component set)"
        case .intervalNotForward(let interval):
            return "schedule element interval \(ScheduleElement.describe(interval)) does not move forward in time"
        case .unsupportedIntervalComponent(let name):
            return "schedule element interval uses unsupported component '\(name)' (use year, month, weekOfYear, day, hour, minute or second)"
        case .allDayIntervalTooShort(let interval):
            return "all-day schedule element interval \(ScheduleElement.describe(interval)) is shorter than 25 hours and never leaves the first day (use a day interval)"
        case .endNotAfterStart(let start, let end):
            return "schedule element end \(end) is not after its start \(start)"
        case .invalidDuration(let seconds):
            return "schedule element duration \(seconds) s is not a finite, non-negative number of seconds"
        case .noElements:
            return "schedule has no elements"
        case .invalidTimeOfDay(let hour, let minute):
            return "time of day \(hour):\(minute) is not between 00:00 and 23:59"
        case .invalidWeekday(let weekday):
            return "weekday \(weekday) is not between 1 (Sunday) and 7 (Saturday)"
        }
    }
}
