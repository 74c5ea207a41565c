import CareModel
import Foundation
import Mapping

/// The schedule of a log task, and how its occurrences count (Docs/measurement-history.md).
///
/// A log version's schedule is its *reading days*: one all-day element per day with a reading of its code,
/// starting at that day's start (in the mapping zone) and ending at the next day's, so CareKit gives it one
/// event on each of those days and none on any other. CareKit numbers a union's events in time order, so
/// a day's occurrence is the number of the version's days before it. A version's days never change once it
/// is written (its outcomes' ids, exported as Observation ids, hold their indexes): new days go on a new
/// version (`StoredLogUpgrade`).
///
/// A new log's first version takes the days the index pass noted for it (`logDays`, by log id: every
/// outcome-making resource of its patient and code in the import, known before the first batch so every
/// batch agrees), and those of the batch that makes it, and takes effect at the first one's start.
/// Logs stored before this shape are *daily*: one all-day element from their start, without end; a
/// value's occurrence there is its day less the start's, as it always was.
struct LogTaskStart {
    let options: MappingOptions
    /// The day numbers (`MappingOptions/dayNumber(of:)`) with a reading of each log, by log id, sorted.
    let logDays: [String: [Int]]
    /// The starts of the days asked for: the logs of one patient share days, and the calendar's answer
    /// costs more than the rest of an element.
    private var dayStarts: [Int: Date] = [:]

    init(options: MappingOptions, logDays: [String: [Int]]) {
        self.options = options
        self.logDays = logDays
    }

    /// `log` (as the mapping proposes it) with the schedule of its reading days: those the index pass
    /// noted for it and `batchDays`. Nil when its schedule cannot be made.
    mutating func started(_ log: CareTask, batchDays: Set<Int>) -> CareTask? {
        let days = Set(logDays[log.id] ?? []).union(batchDays).sorted()
        guard let first = days.first, let schedule = schedule(days: days, like: log), let start = dayStart(first) else { return nil }
        var started = log
        started.schedule = schedule
        started.metadata.effectiveDate = start
        return started
    }

    /// The reading-day schedule of `days` (sorted day numbers), in the zone of `log`'s first element
    /// (``LogReadingDays/readingDaysSchedule(_:zone:options:)``).
    private mutating func schedule(days: [Int], like log: CareTask) -> Schedule? {
        LogReadingDays.readingDaysSchedule(days, zone: log.schedule.elements.first?.timeZone ?? options.timeZone, options: options)
    }

    private mutating func dayStart(_ day: Int) -> Date? {
        if let known = dayStarts[day] { return known }
        let start = options.startOfDay(number: day)
        dayStarts[day] = start
        return start
    }

    /// Whether `schedule` is a log's reading days (``LogReadingDays/isReadingDays(_:)``).
    static func isReadingDays(_ schedule: Schedule) -> Bool { LogReadingDays.isReadingDays(schedule) }

    typealias Days = LogReadingDays.Days

    func days(of log: CareTask) -> Days { LogReadingDays.days(of: log, options: options) }

    /// The occurrence of day `day` on a version counting as `days` (``LogReadingDays/occurrence(ofDay:in:)``).
    static func occurrence(ofDay day: Int, in days: Days) -> Int? { LogReadingDays.occurrence(ofDay: day, in: days) }

    /// Why a value of day `day` cannot go on `log`; nil when it can (``LogReadingDays``' refusal).
    func refusal(day: Int, log: CareTask, days: Days) -> String? {
        guard Self.occurrence(ofDay: day, in: days) == nil else { return nil }
        return LogReadingDays(options: options).refusal(day: day, log: log, days: days).description
    }
}
