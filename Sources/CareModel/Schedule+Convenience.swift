import Foundation

/// CareKit's schedule shortcuts (`OCKSchedule.dailyAtTime`, `.weeklyAtTime`): a time of day every day, or
/// on one weekday every week, in a given time zone.
extension Schedule {
    /// Every day at `hour`:`minutes` wall-clock time in `timeZone`, from the day of `start` (the first
    /// occurrence is on `start`'s day, even if that time has passed) until the exclusive `end`.
    public static func dailyAtTime(
        hour: Int, minutes: Int, start: Date, end: Date?, text: String?,
        duration: ScheduleElement.Duration = .hours(1), targetValues: [OutcomeValue] = [],
        timeZone: TimeZone = .current
    ) throws -> Schedule {
        let first = try firstTime(hour: hour, minutes: minutes, weekday: nil, onOrAfterDayOf: start, timeZone: timeZone)
        let element = try ScheduleElement(start: first, end: end, interval: DateComponents(day: 1), text: text,
                                          targetValues: targetValues, duration: duration, timeZone: timeZone)
        return try Schedule(composing: [element])
    }

    /// Every week on `weekday` (1 = Sunday … 7 = Saturday) at `hour`:`minutes` in `timeZone`, from the first
    /// such day on or after `start`'s day, until the exclusive `end`.
    public static func weeklyAtTime(
        weekday: Int, hours: Int, minutes: Int, start: Date, end: Date?, targetValues: [OutcomeValue] = [],
        text: String?, duration: ScheduleElement.Duration = .hours(1), timeZone: TimeZone = .current
    ) throws -> Schedule {
        let first = try firstTime(hour: hours, minutes: minutes, weekday: weekday, onOrAfterDayOf: start, timeZone: timeZone)
        let element = try ScheduleElement(start: first, end: end, interval: DateComponents(weekOfYear: 1), text: text,
                                          targetValues: targetValues, duration: duration, timeZone: timeZone)
        return try Schedule(composing: [element])
    }

    /// The first date on or after `start`'s day (in `timeZone`) at the given time (and weekday).
    private static func firstTime(
        hour: Int, minutes: Int, weekday: Int?, onOrAfterDayOf start: Date, timeZone: TimeZone
    ) throws -> Date {
        guard (0...23).contains(hour), (0...59).contains(minutes) else {
            throw ScheduleError.invalidTimeOfDay(hour: hour, minute: minutes)
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        var day = calendar.startOfDay(for: start)
        if let weekday {
            guard (1...7).contains(weekday) else { throw ScheduleError.invalidWeekday(weekday) }
            let current = calendar.component(.weekday, from: day)
            let ahead = (weekday - current + 7) % 7
            day = calendar.date(byAdding: .day, value: ahead, to: day) ?? day
        }
        let parts = calendar.dateComponents([.year, .month, .day], from: day)
        var wanted = DateComponents(year: parts.year, month: parts.month, day: parts.day, hour: hour, minute: minutes)
        wanted.calendar = calendar
        wanted.timeZone = timeZone
        guard let date = calendar.date(from: wanted) else {
            throw ScheduleError.invalidTimeOfDay(hour: hour, minute: minutes)
        }
        return date
    }
}
