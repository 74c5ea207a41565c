import CareModel
import FHIR
import Foundation

/// FHIR Timing (and the other forms of `scheduled[x]`: Period, string) to a CareKit schedule.
///
/// The rules, from the R4 Timing definition (datatypes.html#Timing):
/// - `event`: one element per listed time, each with a single occurrence; with a `repeat` (or `code`) too,
///   the events are occurrences of the repeat (as R4 says), which starts at the first of them.
/// - `repeat.frequency` per `period` `periodUnit`: with `timeOfDay`, one element per time, stepping by the
///   period; with `dayOfWeek`, one weekly element per day (and time); 1 per period, one element stepping
///   by the period (every 8 hours; once a day is all day unless a time or a duration says otherwise);
///   N per day without times, N daily elements spread over the waking hours; N per hour or minute, one
///   element stepping by period/N; N per week, month or year without days, N elements spread evenly.
/// - `bounds[x]`: Period gives start and end, Duration and Range an end after the start; without
///   bounds the schedule starts at `start` (the plan's start).
/// - `count`: the schedule ends after that many occurrences, counted over all its elements in time order.
/// - `duration`/`durationUnit`: how long each event lasts.
/// - `when` and `offset`: kept as the elements' text ("30 min before breakfast").
/// - `code` (BID, TID, Q8H...) when there is no `repeat`: read as its defined frequency.
///
/// What CareKit cannot represent (frequencyMax, periodMax, durationMax, countMax, a Range's low bound,
/// `when` without a time) is a warning naming the element, never a silent approximation. A Timing that
/// cannot work (period 0, a negative count, an unknown unit) is an error.
struct TimingSchedule {
    /// The schedule a mapping names for an activity with no timing at all.
    enum DefaultRule: Equatable {
        case dailyAllDay, daily, once, none

        init?(_ text: String) {
            switch text.lowercased() {
            case "daily all-day", "daily-all-day", "all-day": self = .dailyAllDay
            case "daily": self = .daily
            case "once": self = .once
            case "none": self = .none
            default: return nil
            }
        }
    }

    let timeZone: TimeZone
    let wakingHours: WakingHours
    var notes: [MappingNote] = []

    init(timeZone: TimeZone, wakingHours: WakingHours) {
        self.timeZone = timeZone
        self.wakingHours = wakingHours
    }

    var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        return calendar
    }

    /// The schedule for `value` (a Timing, Period or string node; nil when the activity has none),
    /// starting at `start` when the Timing has no bounds, with `targets` on every element.
    ///
    /// - Returns: nil when `defaultRule` is `.none` and there is no timing.
    /// - Throws: ``MappingFailure`` naming the element of a Timing that cannot be a schedule.
    mutating func schedule(
        _ value: FHIRPathElementNode?, start: Date?, end: Date?, defaultRule: DefaultRule, targets: [OutcomeValue], path fallbackPath: String
    ) throws(MappingFailure) -> Schedule? {
        let path = value?.path ?? fallbackPath
        guard let value else {
            return try assumed(defaultRule, start: start, end: end, targets: targets, text: nil, path: path, reason: "the activity has no timing")
        }
        switch value.typeName {
        case "Period":
            let periodStart = value.element.childValue("start").flatMap { FHIRDateText.date($0, in: timeZone) } ?? start
            let periodEnd = value.element.childValue("end").flatMap { FHIRDateText.date($0, in: timeZone) } ?? end
            return try assumed(.dailyAllDay, start: periodStart, end: periodEnd, targets: targets, text: nil, path: path,
                               reason: "a Period says when, not how often")
        case "string":
            return try assumed(defaultRule, start: start, end: end, targets: targets, text: value.element.value, path: path,
                               reason: "the timing is free text ('\(MessageText.shortened(value.element.value ?? ""))'), kept as the task's text")
        default:
            return try timing(value.element, start: start, end: end, defaultRule: defaultRule, targets: targets, path: path)
        }
    }

    // MARK: - Timing

    private mutating func timing(
        _ timing: Element, start: Date?, end: Date?, defaultRule: DefaultRule, targets: [OutcomeValue], path: String
    ) throws(MappingFailure) -> Schedule? {
        var elements: [ScheduleElement] = []
        var eventDates: [(date: Date, path: String)] = []
        for (index, event) in timing.children(named: "event").enumerated() {
            guard let text = event.value, let date = FHIRDateText.date(text, in: timeZone) else {
                throw MappingFailure(at: "\(path).event[\(index)]", "'\(event.value ?? "")' is not a dateTime")
            }
            eventDates.append((date, "\(path).event[\(index)]"))
        }
        var repeatElement = timing.child(named: "repeat")
        if repeatElement == nil, let code = timing.child(named: "code") {
            repeatElement = codedRepeat(code, path: "\(path).code")
        }
        if let repeatElement {
            let repeatPath = timing.child(named: "repeat") == nil ? "\(path).code" : "\(path).repeat"
            var repeatStart = start
            if let first = eventDates.map(\.date).min() {
                // R4 Timing: "when both event and a repeating specification are provided, the list of events
                // should be understood as an interpretation of the information in the repeat structure".
                repeatStart = first
                notes.append(MappingNote(.info, at: "\(path).event", "the events are read as occurrences of the repeat, which starts at the first of them"))
            }
            elements += try repeating(repeatElement, start: repeatStart, end: end, targets: targets, path: repeatPath)
        } else {
            for (date, eventPath) in eventDates {
                elements.append(try element(start: date, end: date.addingTimeInterval(1), interval: DateComponents(day: 1),
                                            duration: .hours(1), text: nil, targets: targets, path: eventPath))
            }
        }
        if elements.isEmpty {
            return try assumed(defaultRule, start: start, end: end, targets: targets, text: nil, path: path,
                               reason: "the Timing has neither event, repeat nor a known code")
        }
        do {
            return try Schedule(composing: elements)
        } catch {
            throw MappingFailure(at: path, "cannot make a schedule: \(error)")
        }
    }

    private mutating func repeating(
        _ repeatElement: Element, start: Date?, end: Date?, targets: [OutcomeValue], path: String
    ) throws(MappingFailure) -> [ScheduleElement] {
        func number(_ name: String) throws(MappingFailure) -> Double? {
            guard let text = repeatElement.childValue(name) else { return nil }
            guard let value = Double(text), value.isFinite else { throw MappingFailure(at: "\(path).\(name)", "'\(text)' is not a number") }
            return value
        }
        // Bounds.
        var first = start
        var last = end
        if let bounds = repeatElement.child(named: "boundsPeriod") {
            if let text = bounds.childValue("start") {
                guard let date = FHIRDateText.date(text, in: timeZone) else { throw MappingFailure(at: "\(path).boundsPeriod.start", "'\(text)' is not a dateTime") }
                first = date
            }
            if let text = bounds.childValue("end") {
                guard let date = FHIRDates.periodEnd(text, in: timeZone) else { throw MappingFailure(at: "\(path).boundsPeriod.end", "'\(text)' is not a dateTime") }
                last = date
            }
        }
        let startDate = knownStart(first, at: path, missing: "no bounds and no start date")
        if let duration = repeatElement.child(named: "boundsDuration") {
            last = try add(quantity: duration, to: startDate, path: "\(path).boundsDuration")
        }
        if let range = repeatElement.child(named: "boundsRange") {
            if let high = range.child(named: "high") {
                last = try add(quantity: high, to: startDate, path: "\(path).boundsRange.high")
            }
            if range.child(named: "low") != nil {
                notes.append(MappingNote(.warning, at: "\(path).boundsRange.low", "a range's lower bound has no CareKit equivalent; the schedule starts at once"))
            }
        }
        // How many, how often.
        let count = try number("count")
        if let count, count < 1 || count != count.rounded() {
            throw MappingFailure(at: "\(path).count", "count must be a positive whole number, not \(repeatElement.childValue("count") ?? "")")
        }
        if let count, count > Double(Self.maximumCount) {
            throw MappingFailure(at: "\(path).count", "count \(repeatElement.childValue("count") ?? "") is more than the \(Self.maximumCount) occurrences a schedule counts to")
        }
        if repeatElement.childValue("countMax") != nil {
            notes.append(MappingNote(.warning, at: "\(path).countMax", "countMax is not represented: the schedule ends after count occurrences"))
        }
        let frequency = try number("frequency") ?? 1
        guard frequency >= 1, frequency == frequency.rounded() else {
            throw MappingFailure(at: "\(path).frequency", "frequency must be a positive whole number, not \(repeatElement.childValue("frequency") ?? "")")
        }
        guard frequency <= Double(Self.maximumFrequency) else {
            throw MappingFailure(at: "\(path).frequency", "frequency \(repeatElement.childValue("frequency") ?? "") is more than the \(Self.maximumFrequency) events per period a schedule holds")
        }
        if repeatElement.childValue("frequencyMax") != nil {
            notes.append(MappingNote(.warning, at: "\(path).frequencyMax", "frequencyMax is not represented: the schedule uses frequency (\(Int(frequency)))"))
        }
        if repeatElement.childValue("periodMax") != nil {
            notes.append(MappingNote(.warning, at: "\(path).periodMax", "periodMax is not represented: the schedule uses period"))
        }
        let period = try number("period")
        if let period, period <= 0 {
            throw MappingFailure(at: "\(path).period", "period must be greater than 0, not \(repeatElement.childValue("period") ?? "")")
        }
        let unit = repeatElement.childValue("periodUnit")
        if period != nil, unit == nil {
            throw MappingFailure(at: "\(path).periodUnit", "a period needs its periodUnit")
        }
        // Event length.
        var duration: ScheduleElement.Duration?
        if let length = try number("duration") {
            guard let unitText = repeatElement.childValue("durationUnit"), let seconds = Self.seconds(per: unitText) else {
                throw MappingFailure(at: "\(path).durationUnit", "a duration needs a durationUnit (s, min, h, d, wk, mo, a)")
            }
            guard length >= 0 else { throw MappingFailure(at: "\(path).duration", "duration cannot be negative") }
            guard length * seconds <= Self.maximumSpan else {
                throw MappingFailure(at: "\(path).duration", "a duration of \(Self.describe(length, unitText)) is longer than the \(Self.maximumSpanText) a schedule spans")
            }
            duration = .seconds(length * seconds)
        }
        if repeatElement.childValue("durationMax") != nil {
            notes.append(MappingNote(.warning, at: "\(path).durationMax", "durationMax is not represented: events last duration"))
        }
        // Text: when and offset.
        let whenCodes = repeatElement.children(named: "when").compactMap(\.value)
        var text: String?
        if !whenCodes.isEmpty {
            let described = whenCodes.map { Self.eventTimingText[$0] ?? $0 }.joined(separator: ", ")
            if let offset = repeatElement.childValue("offset"), let minutes = Int(offset), minutes > 0 {
                // The offset is before or after the event as the code says (ACM: before breakfast).
                text = described.hasPrefix("before") || described.hasPrefix("after") ? "\(minutes) min \(described)" : "\(minutes) min from \(described)"
            } else {
                text = described
            }
        }
        let times = repeatElement.children(named: "timeOfDay").compactMap(\.value)
        var timeMinutes: [Int] = []
        for (index, time) in times.enumerated() {
            guard let minutes = FHIRDates.minutesOfDay(time) else { throw MappingFailure(at: "\(path).timeOfDay[\(index)]", "'\(time)' is not a time") }
            timeMinutes.append(minutes)
        }
        if !whenCodes.isEmpty && times.isEmpty {
            notes.append(MappingNote(.info, at: "\(path).when", "'\(whenCodes.joined(separator: ", "))' has no clock time: kept as the task's text"))
        }
        let weekdays = try repeatElement.children(named: "dayOfWeek").enumerated().map { index, day throws(MappingFailure) -> Int in
            guard let value = day.value, let weekday = Self.weekdays[value] else {
                throw MappingFailure(at: "\(path).dayOfWeek[\(index)]", "'\(day.value ?? "")' is not a day of the week")
            }
            return weekday
        }

        let periodValue = period ?? 1
        let periodUnit = unit ?? (weekdays.isEmpty ? "d" : "wk")
        guard let unitSeconds = Self.seconds(per: periodUnit) else {
            throw MappingFailure(at: "\(path).periodUnit", "unknown unit '\(periodUnit)': expected s, min, h, d, wk, mo or a")
        }
        // What the schedule engine can step by: from one second to a century between events.
        guard periodValue * unitSeconds <= Self.maximumSpan else {
            throw MappingFailure(at: "\(path).period", "a period of \(Self.describe(periodValue, periodUnit)) is longer than the \(Self.maximumSpanText) a schedule can step by")
        }
        guard periodValue * unitSeconds / frequency >= 1 else {
            throw MappingFailure(at: "\(path).frequency", "\(Int(frequency)) times per \(Self.describe(periodValue, periodUnit)) is more often than once a second, the finest step a schedule has")
        }
        if period == nil && weekdays.isEmpty && times.isEmpty && repeatElement.childValue("frequency") == nil {
            notes.append(MappingNote(.info, at: path, "no frequency or period: assumed once a day"))
        }

        // Build the elements.
        var specs: [(start: Date, interval: DateComponents, allDay: Bool)] = []
        let dayStart = calendar.startOfDay(for: startDate)
        let calendar = self.calendar
        func at(_ minutes: Int, on day: Date) -> Date {
            calendar.date(bySettingHour: minutes / 60, minute: minutes % 60, second: 0, of: day) ?? day
        }
        if !weekdays.isEmpty {
            let weeks = max(1, Int(periodUnit == "wk" ? periodValue : 1))
            if periodUnit != "wk" && period != nil {
                notes.append(MappingNote(.warning, at: "\(path).periodUnit", "dayOfWeek with a period in '\(periodUnit)': read as every week"))
            }
            for weekday in weekdays {
                let offset = (weekday - calendar.component(.weekday, from: dayStart) + 7) % 7
                guard let day = calendar.date(byAdding: .day, value: offset, to: dayStart) else { continue }
                if timeMinutes.isEmpty {
                    if duration == nil {
                        specs.append((day, DateComponents(weekOfYear: weeks), true))
                    } else {
                        specs.append((at(wakingHours.startMinutes, on: day), DateComponents(weekOfYear: weeks), false))
                    }
                }
                for minutes in timeMinutes { specs.append((at(minutes, on: day), DateComponents(weekOfYear: weeks), false)) }
            }
            if Int(frequency) > 1 && timeMinutes.count != Int(frequency) && !timeMinutes.isEmpty {
                notes.append(MappingNote(.warning, at: "\(path).frequency", "frequency \(Int(frequency)) but \(timeMinutes.count) time(s) of day: the times are used"))
            }
        } else if !timeMinutes.isEmpty {
            guard let interval = Self.components(periodValue, unit: periodUnit, minimumUnit: "d") else {
                throw MappingFailure(at: "\(path).period", "timeOfDay with a period of \(periodValue) \(periodUnit): times of day need a period of whole days")
            }
            // Without a frequency, the times of day say how often.
            if repeatElement.child(named: "frequency") != nil && Int(frequency) != timeMinutes.count {
                notes.append(MappingNote(.warning, at: "\(path).frequency", "frequency \(Int(frequency)) but \(timeMinutes.count) time(s) of day: the times are used"))
            }
            for minutes in timeMinutes { specs.append((at(minutes, on: dayStart), interval, false)) }
        } else if frequency == 1 {
            if let interval = Self.components(periodValue, unit: periodUnit, minimumUnit: "s") {
                let calendarUnit = ["d", "wk", "mo", "a"].contains(periodUnit)
                if calendarUnit && duration == nil {
                    specs.append((dayStart, interval, true))
                } else if calendarUnit {
                    specs.append((at(wakingHours.startMinutes, on: dayStart), interval, false))
                } else {
                    specs.append((startDate, interval, false))
                }
            } else {
                let seconds = periodValue * unitSeconds
                notes.append(MappingNote(.warning, at: "\(path).period", "a period of \(periodValue) \(periodUnit) is kept as \(Int(seconds)) seconds of elapsed time"))
                specs.append((startDate, DateComponents(second: Int(seconds.rounded())), false))
            }
        } else {
            let count = Int(frequency)
            if periodUnit == "d" && periodValue == periodValue.rounded() {
                let interval = DateComponents(day: Int(periodValue))
                let spread = wakingHours.times(count)
                notes.append(MappingNote(.info, at: path, "\(count) times per \(Self.describe(periodValue, periodUnit)) with no times of day: spread over the waking hours (\(spread.map(Self.clock).joined(separator: ", ")))"))
                for minutes in spread { specs.append((at(minutes, on: dayStart), interval, false)) }
            } else {
                let stepSeconds = periodValue * unitSeconds / Double(count)
                if ["s", "min", "h"].contains(periodUnit) {
                    specs.append((startDate, DateComponents(second: Int(stepSeconds.rounded())), false))
                } else {
                    guard let interval = Self.components(periodValue, unit: periodUnit, minimumUnit: "s") else {
                        throw MappingFailure(at: "\(path).period", "cannot step by \(periodValue) \(periodUnit)")
                    }
                    notes.append(MappingNote(.warning, at: path, "\(count) times per \(Self.describe(periodValue, periodUnit)) with no days given: spread evenly from the start"))
                    for index in 0..<count {
                        let offsetDays = Int((Double(index) * stepSeconds / 86_400).rounded(.down))
                        let day = calendar.date(byAdding: .day, value: offsetDays, to: dayStart) ?? dayStart
                        specs.append((day, interval, duration == nil))
                    }
                }
            }
        }
        // End after `count` occurrences over all the elements.
        if let count, let countEnd = endAfter(Int(count), specs: specs, duration: duration) {
            last = last.map { min($0, countEnd) } ?? countEnd
        }
        var result: [ScheduleElement] = []
        for spec in specs {
            if let last, last <= (spec.allDay ? calendar.startOfDay(for: spec.start) : spec.start) { continue }
            result.append(try element(
                start: spec.start, end: last, interval: spec.interval, duration: spec.allDay ? .allDay : (duration ?? .hours(1)),
                text: text, targets: targets, path: path))
        }
        if result.isEmpty {
            throw MappingFailure(at: path, "the Timing's bounds leave no occurrence")
        }
        return result
    }
}
