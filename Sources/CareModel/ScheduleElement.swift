import Foundation

/// One repeating rule of a schedule (CareKit `OCKScheduleElement`): a first start, an optional exclusive
/// end, an interval in calendar components, a duration (or all day), text and target values.
///
/// The element keeps its own time zone: occurrence `n` starts at `start + n × interval` computed with a
/// Gregorian calendar in that zone, so a daily 08:00 stays at 08:00 wall-clock time across DST changes
/// (see ScheduleElement+Occurrences.swift for where this differs from CareKit's step-by-step addition).
/// Creating an element checks it (``ScheduleError``) instead of trapping as CareKit's preconditions do;
/// the fields that the checks cover can therefore only be set through the initializer.
public struct ScheduleElement: Sendable, Hashable {
    /// How long an event lasts.
    public enum Duration: Sendable, Hashable {
        /// The whole calendar day of the occurrence (CareKit: start of day to one second before the next).
        case allDay
        /// A fixed number of seconds.
        case seconds(Double)

        /// A duration of `hours` hours.
        public static func hours(_ hours: Double) -> Duration { .seconds(hours * 3600) }
        /// A duration of `minutes` minutes.
        public static func minutes(_ minutes: Double) -> Duration { .seconds(minutes * 60) }
    }

    /// The first occurrence (for all-day elements: the start of its day, as CareKit normalises it).
    public let start: Date
    /// The exclusive end: no occurrence starts at or after it. `nil` repeats forever.
    public let end: Date?
    /// The step between occurrences, in calendar components.
    public let interval: DateComponents
    /// How long each event lasts.
    public let duration: Duration
    /// Free text, e.g. "after breakfast".
    public var text: String?
    /// What the patient is expected to record, e.g. a dose.
    public var targetValues: [OutcomeValue]
    /// The Gregorian calendar in the element's own time zone, used for all date arithmetic.
    let calendar: Calendar
    /// `interval`, checked and taken apart.
    let steps: IntervalSteps
    /// How many occurrences the element has in all; `nil` when it repeats forever. Computed once, because
    /// every outcome check asks for it.
    public private(set) var occurrenceCount: Int?

    /// The element's time zone, in which wall-clock times are kept.
    public var timeZone: TimeZone { calendar.timeZone }

    /// Creates an element, refusing an empty, zero or backwards interval, an end not after the start, and a
    /// negative duration.
    public init(
        start: Date,
        end: Date?,
        interval: DateComponents,
        text: String? = nil,
        targetValues: [OutcomeValue] = [],
        duration: Duration = .hours(1),
        timeZone: TimeZone = .current
    ) throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let steps = try IntervalSteps(interval)
        if case .seconds(let seconds) = duration, !(seconds.isFinite && seconds >= 0) {
            throw ScheduleError.invalidDuration(seconds)
        }
        let normalizedStart = duration == .allDay ? calendar.startOfDay(for: start) : start
        if let end, end <= normalizedStart {
            throw ScheduleError.endNotAfterStart(start: normalizedStart, end: end)
        }
        self.start = normalizedStart
        self.end = end
        self.interval = interval
        self.duration = duration
        self.text = text
        self.targetValues = targetValues
        self.calendar = calendar
        self.steps = steps
        if let end {
            occurrenceCount = firstOccurrence(startingAtOrAfter: end, strictlyAfter: false)
        }
    }

    /// A short text form of an interval for messages, e.g. `1 day 12 hour`.
    static func describe(_ interval: DateComponents) -> String {
        let parts: [(String, Int?)] = [
            ("year", interval.year), ("month", interval.month), ("weekOfYear", interval.weekOfYear),
            ("weekOfMonth", interval.weekOfMonth), ("day", interval.day), ("hour", interval.hour),
            ("minute", interval.minute), ("second", interval.second),
        ]
        let text = parts.compactMap { name, value in value.map { "\($0) \(name)" } }
        return text.isEmpty ? "(empty)" : text.joined(separator: " ")
    }
}
