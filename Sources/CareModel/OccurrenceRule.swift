import Foundation

/// How one schedule element's occurrences follow each other, exactly as CareKit computes them, plus the
/// shortcut that makes a far-away occurrence cheap to find.
///
/// CareKit (`OCKScheduleElement.computeEventsWhile`, CareKitStore/Structs/OCKScheduleElement.swift) starts
/// at the element's start and takes one step per occurrence, `calendar.date(byAdding: interval, to:
/// previous.start)`, moving all-day events to the start of their day. A step is not always the same length
/// in wall-clock terms: a month step from Jan 31 is clamped to Feb 28, and from then on the day is 28; a day
/// step onto 02:30 on a spring-forward day gives 03:30, and from then on the time is 03:30. ``step(from:)``
/// is that rule.
///
/// The shortcut, ``jump(from:by:)``, adds the interval `j` times in one calendar call. It gives the same
/// date as `j` single steps as long as no step comes near a time-zone transition (where wall-clock times
/// are skipped or repeated) and no month or year step clamps the day of the month: with a constant UTC
/// offset, adding days, weeks and elapsed time is plain arithmetic, and adding months or years alone only
/// differs from repeated addition when a day is clamped. ``OccurrenceAnchors`` finds those places and
/// restarts the shortcut after each one.
struct OccurrenceRule: Sendable {
    /// How the shortcut works for this interval.
    enum Progression: Sendable {
        /// Hours, minutes and seconds only, not all day: elapsed time, so occurrence `n` starts at
        /// `start + n × seconds` with no exceptions.
        case fixed(seconds: Double)
        /// `linear` taken `j` times matches `j` steps away from transitions and clamped days. `clamp` says
        /// which clamping can happen (months or years alone).
        case linear(IntervalSteps, clamp: Clamp)
        /// Months or years combined with anything else: repeated addition drifts on almost every step (month
        /// lengths differ), so occurrences are computed one step at a time (and remembered).
        case stepwise
    }

    /// Day-of-month clamping in a linear progression.
    enum Clamp: Sendable {
        case none
        /// Every step adds this many months.
        case months(Int)
        /// Every step adds this many years (only Feb 29 clamps).
        case years(Int)
    }

    let calendar: Calendar
    /// The interval as given: CareKit's step adds exactly this.
    let interval: DateComponents
    let isAllDay: Bool
    let progression: Progression
    /// A rough length of one step in seconds, only for guessing where to look.
    let approximateSeconds: Double
    /// Whether the shortcut keeps the wall-clock time of day (or the start of the day, all day): a linear
    /// progression of days, weeks, months or years without hours, minutes or seconds.
    let keepsTimeOfDay: Bool

    /// The rule for `interval` (already checked by ``IntervalSteps``) in `calendar`. Refuses an all-day
    /// element stepped by hours, minutes and seconds of less than 25 hours: CareKit steps an all-day event
    /// from the start of its day, so such a step never leaves a day of 24 or 25 hours and CareKit loops
    /// forever.
    init(interval: DateComponents, steps: IntervalSteps, isAllDay: Bool, calendar: Calendar) throws {
        self.calendar = calendar
        self.interval = interval
        self.isAllDay = isAllDay
        var progression: Progression
        let monthsOrYears = steps.months != 0 || steps.years != 0
        let others = steps.weeks != 0 || steps.days != 0 || steps.timeSeconds != 0
        if !steps.hasCalendarPart {
            if !isAllDay {
                progression = .fixed(seconds: steps.timeSeconds)
            } else {
                // From a day's start, the step lands `seconds` later and falls back to that day's start:
                // whole days forward (with constant offset), the remainder dropped.
                let days = (steps.timeSeconds / 86_400).rounded(.down)
                guard steps.timeSeconds >= 25 * 3600, days < Double(Int32.max) else {
                    throw ScheduleError.allDayIntervalTooShort(interval)
                }
                progression = .linear(.days(Int(days)), clamp: .none)
            }
        } else if !monthsOrYears, !isAllDay, steps.weeks <= 1_000, steps.days <= 10_000, Self.hasConstantOffset(calendar) {
            // Without clock changes a day is always 86,400 s: weeks, days and time are elapsed time too.
            progression = .fixed(seconds: Double(steps.weeks) * 604_800 + Double(steps.days) * 86_400 + steps.timeSeconds)
        } else if !monthsOrYears {
            if isAllDay {
                let extraDays = (steps.timeSeconds / 86_400).rounded(.down)
                let (weekDays, overflow) = steps.weeks.multipliedReportingOverflow(by: 7)
                let (days, overflow2) = weekDays.addingReportingOverflow(steps.days)
                guard !overflow, !overflow2, extraDays < Double(Int32.max), days < Int(Int32.max) else {
                    throw ScheduleError.intervalNotForward(interval)
                }
                progression = .linear(.days(days + Int(extraDays)), clamp: .none)
            } else {
                progression = .linear(steps, clamp: .none)
            }
        } else if others || (steps.months != 0 && steps.years != 0) {
            progression = .stepwise
        } else {
            progression = .linear(steps, clamp: steps.months != 0 ? .months(steps.months) : .years(steps.years))
        }
        // All day in a zone without clock changes, each day starts 86,400 s after the one before.
        if isAllDay, case .linear(let linear, .none) = progression, linear == .days(linear.days), Self.hasConstantOffset(calendar) {
            progression = .fixed(seconds: Double(linear.days) * 86_400)
        }
        self.progression = progression
        switch progression {
        case .linear(let linear, _):
            approximateSeconds = linear.approximateSeconds
            keepsTimeOfDay = linear.timeSeconds == 0
        default:
            approximateSeconds = steps.approximateSeconds
            keepsTimeOfDay = false
        }
    }

    /// Whether `calendar` is Gregorian in a zone whose offset from UTC never changes (UTC, GMT, a fixed
    /// offset), where adding days is adding multiples of 86,400 seconds.
    static func hasConstantOffset(_ calendar: Calendar) -> Bool {
        let zone = calendar.timeZone
        return calendar.identifier == .gregorian && zone.nextDaylightSavingTimeTransition(after: .distantPast) == nil
            && zone.secondsFromGMT(for: .distantPast) == zone.secondsFromGMT(for: .distantFuture)
    }

    /// CareKit's step: the start of the occurrence after the one starting at `eventStart`; `nil` if the
    /// date overflows. For all-day elements, where CareKit would stay on the same day forever (a step of 25
    /// hours or more on a longer day), it moves to the next day instead.
    func step(from eventStart: Date) -> Date? {
        guard let next = calendar.date(byAdding: interval, to: eventStart) else { return nil }
        guard isAllDay else { return next > eventStart ? next : nil }
        let day = calendar.startOfDay(for: next)
        if day > eventStart { return day }
        return calendar.date(byAdding: .day, value: 1, to: eventStart).map { calendar.startOfDay(for: $0) }
    }

    /// The shortcut: the start `j` occurrences after an occurrence starting at `anchor`, with the interval
    /// added `j` times at once; `nil` if the date overflows. Equal to `j` calls of ``step(from:)`` only
    /// within a stretch that ``OccurrenceAnchors`` has checked.
    func jump(from anchor: Date, by j: Int) -> Date? {
        guard j > 0 else { return j == 0 ? anchor : nil }
        switch progression {
        case .fixed(let seconds):
            return anchor.addingTimeInterval(Double(j) * seconds)
        case .linear(let linear, _):
            guard let components = linear.times(j), let date = calendar.date(byAdding: components, to: anchor) else {
                return nil
            }
            return isAllDay ? calendar.startOfDay(for: date) : date
        case .stepwise:
            return j == 1 ? step(from: anchor) : nil
        }
    }

    /// The first `j` in `1...limit` at which ``jump(from:by:)`` from `anchor` clamps the day of the month
    /// (months or years alone); `nil` if none does. `jump(from: anchor, by: j)` is still right at that `j`;
    /// the jumps after it are not.
    func firstClamp(from anchor: Date, limit: Int) -> Int? {
        guard limit >= 1, case .linear(_, let clamp) = progression else { return nil }
        let monthStep: Int
        switch clamp {
        case .none: return nil
        case .months(let months): monthStep = months
        case .years(let years): monthStep = years.multipliedReportingOverflow(by: 12).overflow ? 0 : years * 12
        }
        let wall = calendar.dateComponents([.year, .month, .day], from: anchor)
        guard monthStep > 0, let year = wall.year, let month = wall.month, let day = wall.day, day > 28 else { return nil }
        // The months reached repeat with the 400-year Gregorian cycle (4800 months), so a clamp, if any, comes
        // within 4800 steps.
        var monthIndex = year * 12 + (month - 1)
        for j in 1...min(limit, 4800) {
            let (next, overflow) = monthIndex.addingReportingOverflow(monthStep)
            if overflow { return nil }
            monthIndex = next
            let targetYear = monthIndex >= 0 ? monthIndex / 12 : (monthIndex - 11) / 12
            if Self.daysInMonth(year: targetYear, month: monthIndex - targetYear * 12 + 1) < day { return j }
        }
        return nil
    }

    /// The length of a Gregorian month.
    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
