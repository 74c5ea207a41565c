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
    private(set) var notes: [MappingNote] = []

    init(timeZone: TimeZone, wakingHours: WakingHours) {
        self.timeZone = timeZone
        self.wakingHours = wakingHours
    }

    private var calendar: Calendar {
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

    /// The instant just after the `count`-th occurrence of all the specs together, in time order.
    private func endAfter(_ count: Int, specs: [(start: Date, interval: DateComponents, allDay: Bool)], duration: ScheduleElement.Duration?) -> Date? {
        var schedules: [ScheduleElement] = []
        for spec in specs {
            if let element = try? ScheduleElement(
                start: spec.start, end: nil, interval: spec.interval, duration: spec.allDay ? .allDay : .hours(1), timeZone: timeZone) {
                schedules.append(element)
            }
        }
        guard let schedule = try? Schedule(composing: schedules), let start = schedule.eventStart(occurrence: count - 1) else { return nil }
        return start.addingTimeInterval(1)
    }

    private func element(
        start: Date, end: Date?, interval: DateComponents, duration: ScheduleElement.Duration, text: String?, targets: [OutcomeValue], path: String
    ) throws(MappingFailure) -> ScheduleElement {
        do {
            return try ScheduleElement(
                start: start, end: end, interval: interval, text: text, targetValues: targets, duration: duration, timeZone: timeZone)
        } catch {
            throw MappingFailure(at: path, "cannot make a schedule: \(error)")
        }
    }

    /// `start`, or, when nothing gives one, the start every such schedule is given (a warning at `path`
    /// says `missing` and the day assumed).
    private mutating func knownStart(_ start: Date?, at path: String, missing: String) -> Date {
        if let start { return start }
        let assumed = Self.unknownStart(in: timeZone)
        notes.append(MappingNote(.warning, at: path, "\(missing): assumed to start \(Self.isoDay(assumed, timeZone))"))
        return assumed
    }

    /// The schedule assumed when the data does not say (reported as such).
    private mutating func assumed(
        _ rule: DefaultRule, start: Date?, end: Date?, targets: [OutcomeValue], text: String?, path: String, reason: String
    ) throws(MappingFailure) -> Schedule? {
        if rule == .none { return nil }
        let startDate = knownStart(start, at: path, missing: "no start date")
        let element: ScheduleElement
        switch rule {
        case .dailyAllDay:
            element = try self.element(start: startDate, end: end, interval: DateComponents(day: 1), duration: .allDay, text: text, targets: targets, path: path)
        case .daily:
            let day = calendar.startOfDay(for: startDate)
            let first = calendar.date(bySettingHour: wakingHours.startMinutes / 60, minute: wakingHours.startMinutes % 60, second: 0, of: day) ?? day
            element = try self.element(start: first, end: end, interval: DateComponents(day: 1), duration: .hours(1), text: text, targets: targets, path: path)
        case .once, .none:
            element = try self.element(start: startDate, end: startDate.addingTimeInterval(1), interval: DateComponents(day: 1), duration: .allDay, text: text, targets: targets, path: path)
        }
        notes.append(MappingNote(.info, at: path, "\(reason): assumed \(rule.description)"))
        do {
            return try Schedule(composing: [element])
        } catch {
            throw MappingFailure(at: path, "cannot make a schedule: \(error)")
        }
    }

    /// The start assumed when neither the timing nor the mapping's `start` gives one: 2000-01-01 in the
    /// import's zone, fixed so that re-imports agree.
    static func unknownStart(in zone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar.date(from: DateComponents(year: 2000, month: 1, day: 1)) ?? Date(timeIntervalSince1970: 946_684_800)
    }

    private func add(quantity: Element, to date: Date, path: String) throws(MappingFailure) -> Date {
        guard let text = quantity.childValue("value"), let value = Double(text), value > 0 else {
            throw MappingFailure(at: "\(path).value", "a bound needs a positive value")
        }
        let unit = quantity.childValue("code") ?? quantity.childValue("unit") ?? ""
        guard let seconds = Self.seconds(per: unit) else { throw MappingFailure(at: "\(path).code", "unknown time unit '\(unit)'") }
        if let components = Self.components(value, unit: unit, minimumUnit: "s"), let end = calendar.date(byAdding: components, to: date) {
            return end
        }
        guard value * seconds <= Self.maximumSpan else {
            throw MappingFailure(at: "\(path).value", "a bound of \(Self.describe(value, unit)) is longer than the \(Self.maximumSpanText) a schedule spans")
        }
        return date.addingTimeInterval(value * seconds)
    }

    /// The bounds every number of a Timing is checked against before it becomes a date or a whole number
    /// of seconds (one definition, which `caregate validate` warns from too).
    static let maximumSpan = TimingLimits.maximumSpan
    static let maximumSpanText = TimingLimits.maximumSpanText
    static let maximumFrequency = TimingLimits.maximumFrequency
    static let maximumCount = TimingLimits.maximumCount

    /// The Timing.repeat a GTS abbreviation code stands for (R4 timing-abbreviation value set).
    private mutating func codedRepeat(_ code: Element, path: String) -> Element? {
        let codes = code.children(named: "coding").compactMap { $0.childValue("code") }
        for value in codes {
            if let (frequency, period, unit) = Self.abbreviations[value] {
                var children = [
                    Element(name: "frequency", value: String(frequency)), Element(name: "period", value: String(period)),
                    Element(name: "periodUnit", value: unit),
                ]
                if value == "AM" { children.append(Element(name: "when", value: "MORN")) }
                if value == "PM" { children.append(Element(name: "when", value: "EVE")) }
                return Element(name: "repeat", children: children)
            }
        }
        notes.append(MappingNote(.warning, at: path, "timing code \(codes.isEmpty ? "(text only)" : codes.joined(separator: ", ")) has no defined frequency"))
        return nil
    }

    static let abbreviations: [String: (Int, Int, String)] = [
        "QD": (1, 1, "d"), "BID": (2, 1, "d"), "TID": (3, 1, "d"), "QID": (4, 1, "d"), "AM": (1, 1, "d"), "PM": (1, 1, "d"),
        "QOD": (1, 2, "d"), "Q1H": (1, 1, "h"), "Q2H": (1, 2, "h"), "Q3H": (1, 3, "h"), "Q4H": (1, 4, "h"), "Q6H": (1, 6, "h"),
        "Q8H": (1, 8, "h"), "WK": (1, 1, "wk"), "MO": (1, 1, "mo"),
    ]

    static let weekdays: [String: Int] = ["sun": 1, "mon": 2, "tue": 3, "wed": 4, "thu": 5, "fri": 6, "sat": 7]

    /// R4 EventTiming codes as words.
    static let eventTimingText: [String: String] = [
        "MORN": "morning", "MORN.early": "early morning", "MORN.late": "late morning", "NOON": "noon", "AFT": "afternoon",
        "AFT.early": "early afternoon", "AFT.late": "late afternoon", "EVE": "evening", "EVE.early": "early evening",
        "EVE.late": "late evening", "NIGHT": "night", "PHS": "after sleep", "HS": "before sleep", "WAKE": "on waking",
        "C": "with a meal", "CM": "with breakfast", "CD": "with lunch", "CV": "with dinner", "AC": "before a meal",
        "ACM": "before breakfast", "ACD": "before lunch", "ACV": "before dinner", "PC": "after a meal",
        "PCM": "after breakfast", "PCD": "after lunch", "PCV": "after dinner",
    ]

    /// Seconds in one `unit` (UCUM units of time as Timing uses them; months and years as averages).
    static func seconds(per unit: String) -> Double? {
        TimingLimits.seconds(per: unit)
    }

    /// `value` `unit` as calendar components, when it is whole in that unit (and the unit is at least
    /// `minimumUnit`); nil otherwise.
    static func components(_ value: Double, unit: String, minimumUnit: String) -> DateComponents? {
        let order = ["s", "min", "h", "d", "wk", "mo", "a"]
        guard let index = order.firstIndex(of: unit), let minimum = order.firstIndex(of: minimumUnit), index >= minimum,
              value == value.rounded(), value >= 1, value < 1_000_000 else { return nil }
        let whole = Int(value)
        switch unit {
        case "s": return DateComponents(second: whole)
        case "min": return DateComponents(minute: whole)
        case "h": return DateComponents(hour: whole)
        case "d": return DateComponents(day: whole)
        case "wk": return DateComponents(weekOfYear: whole)
        case "mo": return DateComponents(month: whole)
        default: return DateComponents(year: whole)
        }
    }

    static func describe(_ value: Double, _ unit: String) -> String {
        let names = ["s": "second", "min": "minute", "h": "hour", "d": "day", "wk": "week", "mo": "month", "a": "year"]
        let name = names[unit] ?? unit
        // Whole numbers without ".0", as long as they are whole numbers an Int holds (the text of any other).
        let whole = value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
        return value == 1 ? name : "\(whole) \(name)s"
    }

    static func clock(_ minutes: Int) -> String {
        String(format: "%02d:%02d", minutes / 60, minutes % 60)
    }

    static func isoDay(_ date: Date, _ zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }

}

extension TimingSchedule.DefaultRule: CustomStringConvertible {
    var description: String {
        switch self {
        case .dailyAllDay: return "daily, all day"
        case .daily: return "daily at the start of the waking hours"
        case .once: return "once"
        case .none: return "no schedule"
        }
    }
}
