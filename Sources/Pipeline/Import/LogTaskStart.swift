import CareModel
import Foundation
import Mapping

/// Where log tasks start, and how their occurrences count.
///
/// A new log task's first version starts (schedule and effective date) at the start of the day, in the
/// log's zone, of its patient's earliest outcome-making resource in the import that creates it, as the
/// index pass noted it (`firstDays`): one day per patient, known before the first batch, so every batch
/// of the import agrees. A stored log starts where its current version's schedule does (1900-01-01 for
/// logs made before this rule). The mapping numbers a log value's day from the epoch
/// (``MappingOptions/dayNumber(of:)``); its occurrence is that number less the log's start day. A value
/// dated before its log's start cannot go on it: a new version may not take effect earlier than the one it
/// follows, and the log's outcomes (exported with their ids) are counted from its start.
struct LogTaskStart {
    let options: MappingOptions
    /// The earliest day number of each patient's outcome-making resources in this import, by patient entity id.
    let firstDays: [String: Int]
    /// The starts of the days asked for: the logs of one patient share a day, and the calendar's answer
    /// costs more than the rest of a new log.
    private var dayStarts: [Int: Date] = [:]

    init(options: MappingOptions, firstDays: [String: Int]) {
        self.options = options
        self.firstDays = firstDays
    }

    /// `log` (as the mapping proposes it, starting on the epoch) starting on its patient's first day, or
    /// on `earliestValueDay` when that is earlier (the index pass did not resolve the patient as the
    /// mapping did). Nil when its schedule cannot be remade.
    mutating func started(_ log: CareTask, earliestValueDay: Int) -> CareTask? {
        let patientDay = log.metadata.linkage.patientID.flatMap { firstDays[$0] }
        let day = min(patientDay ?? earliestValueDay, earliestValueDay)
        if dayStarts[day] == nil { dayStarts[day] = options.startOfDay(number: day) }
        guard let start = dayStarts[day], let element = log.schedule.elements.first else { return nil }
        guard let moved = try? ScheduleElement(
            start: start, end: element.end, interval: element.interval, text: element.text, targetValues: element.targetValues,
            duration: element.duration, timeZone: element.timeZone),
            let schedule = try? Schedule(composing: [moved]) else { return nil }
        var started = log
        started.schedule = schedule
        started.metadata.effectiveDate = schedule.elements.first?.start ?? start
        return started
    }

    /// The day number `log`'s occurrences count from: that of its schedule's start.
    func startDay(of log: CareTask) -> Int {
        log.schedule.elements.first.flatMap { options.dayNumber(of: $0.start) } ?? 0
    }

    /// Why a value of day `day` cannot go on `log`, which starts on `startDay`; nil when it can.
    func refusal(day: Int, log: CareTask, startDay: Int) -> String? {
        guard day < startDay else { return nil }
        return "its day \(options.isoDay(number: day)) is before the start of log task \(log.id) (\(options.isoDay(number: startDay))): "
            + "a log's outcomes count from its start, which cannot move earlier"
    }
}
