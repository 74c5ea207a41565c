import Foundation

/// One repeating rule of a schedule (CareKit `OCKScheduleElement`): a first start, an optional exclusive
/// end, an interval in calendar components, a duration (or all day), text and target values.
///
/// Occurrences follow CareKit exactly: each one starts at the previous start plus the interval, added with
/// a Gregorian calendar in the element's own (stored) time zone, so a daily 08:00 stays at 08:00 wall-clock
/// time across DST changes, a monthly event from Jan 31 falls on Feb 28 and then the 28th, and a daily
/// 02:30 moves to 03:30 on the spring-forward day and stays there. A CareKit app computing the events of
/// the same element gets the same dates for the same occurrence indices (see `OccurrenceRule`).
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
    /// How occurrences follow each other (CareKit's steps and the shortcut over them).
    let rule: OccurrenceRule
    /// The checked points of the occurrence sequence, found as queries need them; shared by copies.
    let anchors: OccurrenceAnchors
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
        let rule = try OccurrenceRule(interval: interval, steps: steps, isAllDay: duration == .allDay, calendar: calendar)
        if case .seconds(let seconds) = duration, !(seconds.isFinite && seconds >= 0) {
            throw ScheduleError.invalidDuration(seconds)
        }
        let normalizedStart = duration == .allDay ? DayStarts.start(of: start, in: calendar) : start
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
        self.rule = rule
        anchors = OccurrenceAnchors(rule: rule, start: normalizedStart)
        if let end {
            occurrenceCount = firstOccurrence(startingAtOrAfter: end, strictlyAfter: false)
        }
    }

    public static func == (lhs: ScheduleElement, rhs: ScheduleElement) -> Bool {
        lhs.start == rhs.start && lhs.end == rhs.end && lhs.interval == rhs.interval && lhs.duration == rhs.duration
            && lhs.text == rhs.text && lhs.targetValues == rhs.targetValues && lhs.calendar == rhs.calendar
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(start)
        hasher.combine(end)
        hasher.combine(interval)
        hasher.combine(duration)
        hasher.combine(text)
        hasher.combine(targetValues)
        hasher.combine(calendar)
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
