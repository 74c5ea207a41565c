import Foundation

/// Occurrence arithmetic of one element. Occurrence `n` starts at `calendar.date(byAdding: interval × n,
/// to: start)` in the element's own time zone (for all-day elements, the start of that day).
///
/// Deviation from CareKit, on purpose: `OCKScheduleElement` (CareKitStore/Structs/OCKScheduleElement.swift,
/// `computeEventsWhile` / `date(ofOccurrence:)` in every version read) steps from each occurrence to the
/// next, `date(byAdding: interval, to: previous)`. The two agree unless a step is clamped or lands in a DST
/// gap: monthly from Jan 31 CareKit gives 31, 28, 28, …, this gives 31, 28, 31, 30, …; a daily 02:30 becomes
/// 03:30 on the spring-forward day in both, but CareKit then stays at 03:30 while this returns to 02:30.
/// Counting from the start keeps wall-clock times, and it lets a query jump to the first candidate
/// occurrence instead of walking every occurrence since the start: starts never decrease with `n`, so `n`
/// is estimated from the interval's rough length and corrected by a galloping search.
///
/// The query rule differs slightly too: CareKit's `events(from:to:)` keeps an event whose end equals the
/// query start; here an event must start at or after it or still be running (end after it).
extension ScheduleElement {
    /// The start of occurrence `n`, ignoring the element's end; `nil` only if the date overflows.
    func startOfOccurrence(_ n: Int) -> Date? {
        guard n > 0 else { return n == 0 ? start : nil }
        if !isAllDay, let seconds = steps.fixedSeconds {
            return start.addingTimeInterval(Double(n) * seconds)
        }
        guard let step = steps.times(n), let date = calendar.date(byAdding: step, to: start) else { return nil }
        return isAllDay ? calendar.startOfDay(for: date) : date
    }

    private var isAllDay: Bool {
        if case .allDay = duration { return true }
        return false
    }

    /// The end of an event starting at `eventStart` (CareKit: all-day events end one second before the
    /// next day starts).
    func endOfEvent(startingAt eventStart: Date) -> Date {
        switch duration {
        case .seconds(let seconds):
            return eventStart.addingTimeInterval(seconds)
        case .allDay:
            let nextDay = calendar.date(byAdding: .day, value: 1, to: eventStart) ?? eventStart.addingTimeInterval(86400)
            return nextDay.addingTimeInterval(-1)
        }
    }

    /// The event of occurrence `n` of this element alone (its `occurrence` is `n`), or `nil` if the element
    /// has ended by then.
    public func event(atLocalOccurrence n: Int) -> ScheduleEvent? {
        guard let eventStart = startOfOccurrence(n) else { return nil }
        if let end, eventStart >= end { return nil }
        return ScheduleEvent(start: eventStart, end: endOfEvent(startingAt: eventStart), element: self, occurrence: n)
    }

    /// The number of occurrences that start before `date` (or at `date` too, when `including` is true),
    /// counting only occurrences that exist before the element's end.
    func countOccurrences(startingBefore date: Date, including: Bool) -> Int {
        let n = firstOccurrence(startingAtOrAfter: date, strictlyAfter: including)
        guard let count = occurrenceCount else { return n }
        return min(n, count)
    }

    /// The smallest `n` whose start is at or after `date` (strictly after when `strictlyAfter`), ignoring the
    /// element's end. Estimates `n` from the interval's approximate length, then gallops and bisects.
    /// (Occurrence starts never decrease with `n`: every interval component is non-negative, one positive;
    /// all-day starts of a sub-day interval can repeat a day.)
    func firstOccurrence(startingAtOrAfter date: Date, strictlyAfter: Bool) -> Int {
        firstIndex(near: estimatedOccurrence(near: date)) { n in
            guard let start = startOfOccurrence(n) else { return true }  // overflow: infinitely late
            return strictlyAfter ? start > date : start >= date
        }
    }

    /// A guess of the occurrence starting near `date`, from the interval's approximate length in seconds.
    func estimatedOccurrence(near date: Date) -> Int {
        let seconds = steps.approximateSeconds
        guard seconds > 0 else { return 0 }
        let guess = (date.timeIntervalSince(start) / seconds).rounded(.down)
        guard guess.isFinite, guess > 0 else { return 0 }
        return guess >= Double(Int.max / 4) ? Int.max / 4 : Int(guess)
    }

    /// This element's events that overlap `[from, to)`: an event counts if it starts before `to` and either
    /// starts at or after `from` or is still running at `from` (ends after it). `occurrence` is the local
    /// index within the element.
    public func localEvents(from: Date, to: Date) -> [ScheduleEvent] {
        guard from < to else { return [] }
        // The earliest start that could still be running at `from`.
        let reach: TimeInterval
        switch duration {
        case .seconds(let seconds): reach = seconds
        case .allDay: reach = 86400 + 3600  // a day, plus a DST hour
        }
        var n = firstOccurrence(startingAtOrAfter: from.addingTimeInterval(-reach), strictlyAfter: false)
        var events: [ScheduleEvent] = []
        while let event = event(atLocalOccurrence: n), event.start < to {
            if event.start >= from || event.end > from {
                events.append(event)
            }
            n += 1
        }
        return events
    }
}
