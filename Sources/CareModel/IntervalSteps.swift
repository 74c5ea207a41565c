import Foundation

/// A schedule element's interval, checked and taken apart once, so that occurrence arithmetic does not
/// re-read `DateComponents` on every step.
struct IntervalSteps: Sendable, Hashable {
    var years = 0
    var months = 0
    var weeks = 0
    var days = 0
    var hours = 0
    var minutes = 0
    var seconds = 0

    /// An interval of `days` days only (all-day elements step whole days; see ``OccurrenceRule``).
    static func days(_ days: Int) -> IntervalSteps {
        var steps = IntervalSteps()
        steps.days = days
        return steps
    }

    private init() {}

    /// Takes `interval` apart, refusing one that does not step forward: no component set, any negative,
    /// all zero, or a component other than year, month, week, day, hour, minute, second.
    init(_ interval: DateComponents) throws {
        let unsupported: [(String, Int?)] = [
            ("era", interval.era), ("nanosecond", interval.nanosecond), ("weekday", interval.weekday),
            ("weekdayOrdinal", interval.weekdayOrdinal), ("quarter", interval.quarter),
            ("yearForWeekOfYear", interval.yearForWeekOfYear),
        ]
        if let name = unsupported.first(where: { $0.1 != nil })?.0 {
            throw ScheduleError.unsupportedIntervalComponent(name)
        }
        let weekParts = [interval.weekOfYear, interval.weekOfMonth].compactMap { $0 }
        let parts = [interval.year, interval.month, interval.day, interval.hour, interval.minute, interval.second]
            .compactMap { $0 } + weekParts
        if parts.isEmpty { throw ScheduleError.emptyInterval }
        if parts.contains(where: { $0 < 0 }) || !parts.contains(where: { $0 > 0 }) {
            throw ScheduleError.intervalNotForward(interval)
        }
        let (weeks, overflow) = (interval.weekOfYear ?? 0).addingReportingOverflow(interval.weekOfMonth ?? 0)
        if overflow { throw ScheduleError.intervalNotForward(interval) }
        years = interval.year ?? 0
        months = interval.month ?? 0
        self.weeks = weeks
        days = interval.day ?? 0
        hours = interval.hour ?? 0
        minutes = interval.minute ?? 0
        seconds = interval.second ?? 0
    }

    /// Whether any of year, month, week or day is set: parts that step wall-clock dates, not elapsed time.
    var hasCalendarPart: Bool { years != 0 || months != 0 || weeks != 0 || days != 0 }

    /// Hours, minutes and seconds together, in seconds: elapsed time, for the calendar too.
    var timeSeconds: Double { Double(hours) * 3600 + Double(minutes) * 60 + Double(seconds) }

    /// A rough length in seconds, only for guessing where to start looking.
    var approximateSeconds: Double {
        Double(years) * 31_556_952 + Double(months) * 2_629_746 + Double(weeks) * 604_800 + Double(days) * 86_400
            + Double(hours) * 3600 + Double(minutes) * 60 + Double(seconds)
    }

    /// The interval taken `n` times, as calendar components; `nil` if a component overflows.
    func times(_ n: Int) -> DateComponents? {
        var overflow = false
        func scaled(_ value: Int) -> Int? {
            guard value != 0 else { return nil }
            let (product, overflowed) = value.multipliedReportingOverflow(by: n)
            overflow = overflow || overflowed
            return product
        }
        let result = DateComponents(year: scaled(years), month: scaled(months), day: scaled(days), hour: scaled(hours),
                                    minute: scaled(minutes), second: scaled(seconds), weekOfYear: scaled(weeks))
        return overflow ? nil : result
    }
}
