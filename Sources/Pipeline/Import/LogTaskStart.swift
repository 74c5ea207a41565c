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
/// version (``StoredLogUpgrade``).
///
/// A new log's first version takes the days the index pass noted for it (`logDays`, by log id: every
/// outcome-making resource of its patient and code in the import, known before the first batch so every
/// batch agrees), and those of the batch that makes it, and takes effect at the first one's start.
/// Logs stored before this shape are *daily*: one all-day element from their start, without end; a
/// value's occurrence there is its day less the start's, as it always was.
struct LogTaskStart {
    let options: MappingOptions
    /// The day numbers (``MappingOptions/dayNumber(of:)``) with a reading of each log, by log id, sorted.
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

    /// A version of `log` taking effect at the start of day `effectiveDay`, with reading days `days` (all on
    /// or after it). When there are none, its one element is the day before it takes effect: CareKit
    /// refuses an empty schedule, and computes a version's events only from its effective date, so that
    /// one is never shown.
    mutating func version(of log: CareTask, effectiveDay: Int, days: [Int]) -> CareTask? {
        guard let start = dayStart(effectiveDay), let schedule = schedule(days: days.isEmpty ? [effectiveDay - 1] : days, like: log)
        else { return nil }
        var version = log
        version.schedule = schedule
        version.metadata.effectiveDate = start
        return version
    }

    /// The reading-day schedule of `days` (sorted day numbers), in the zone of `log`'s first element.
    private mutating func schedule(days: [Int], like log: CareTask) -> Schedule? {
        let zone = log.schedule.elements.first?.timeZone ?? options.timeZone
        var elements: [ScheduleElement] = []
        elements.reserveCapacity(days.count)
        for day in days {
            guard let start = dayStart(day), let end = dayStart(day + 1),
                  let element = try? ScheduleElement(start: start, end: end, interval: DateComponents(day: 1), duration: .allDay, timeZone: zone)
            else { return nil }
            elements.append(element)
        }
        return try? Schedule(composing: elements)
    }

    private mutating func dayStart(_ day: Int) -> Date? {
        if let known = dayStarts[day] { return known }
        let start = options.startOfDay(number: day)
        dayStarts[day] = start
        return start
    }

    /// Whether `schedule` is a log's reading days rather than the daily shape of logs stored before it:
    /// every element ends.
    static func isReadingDays(_ schedule: Schedule) -> Bool {
        schedule.elements.allSatisfy { $0.end != nil }
    }

    /// How a version's occurrences count: its reading days (sorted day numbers), or, for a daily log, the
    /// day its occurrences count from.
    enum Days {
        case readings([Int])
        case daily(start: Int)
    }

    func days(of log: CareTask) -> Days {
        if Self.isReadingDays(log.schedule) {
            return .readings(log.schedule.elements.compactMap { options.dayNumber(of: $0.start) })
        }
        return .daily(start: log.schedule.elements.first.flatMap { options.dayNumber(of: $0.start) } ?? 0)
    }

    /// The occurrence of day `day` on a version counting as `days`; nil when the version has no event that day.
    static func occurrence(ofDay day: Int, in days: Days) -> Int? {
        switch days {
        case .daily(let start):
            return day >= start ? day - start : nil
        case .readings(let list):
            var (low, high) = (0, list.count)
            while low < high {
                let middle = (low + high) / 2
                if list[middle] < day { low = middle + 1 } else { high = middle }
            }
            return low < list.count && list[low] == day ? low : nil
        }
    }

    /// Why a value of day `day` cannot go on `log`; nil when it can.
    func refusal(day: Int, log: CareTask, days: Days) -> String? {
        guard Self.occurrence(ofDay: day, in: days) == nil else { return nil }
        switch days {
        case .daily(let start):
            return "its day \(options.isoDay(number: day)) is before the start of log task \(log.id) (\(options.isoDay(number: start))): "
                + "a log's outcomes count from its start, which cannot move earlier"
        case .readings(let list):
            let span = list.first.map { first in "\(options.isoDay(number: first)) to \(options.isoDay(number: list.last ?? first))" } ?? "none"
            return "its day \(options.isoDay(number: day)) is not a reading day of the version of log task \(log.id) that owns it (days \(span)): "
                + "a log version's days are fixed when it is written, since its outcomes' indexes count them, and a new version cannot take effect earlier"
        }
    }
}
