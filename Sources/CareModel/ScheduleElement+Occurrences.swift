import Foundation

/// The events of one element, as CareKit's `OCKScheduleElement` computes them (CareKitStore/Structs/
/// OCKScheduleElement.swift): occurrence `n + 1` starts one `calendar.date(byAdding: interval, to:)` step
/// after occurrence `n` (all-day: at the start of that day), in the element's own time zone; an event
/// exists while it starts before the element's end. ``OccurrenceAnchors`` finds occurrence `n`, or the
/// first occurrence after a date, without stepping through all earlier ones.
extension ScheduleElement {
    /// The start of occurrence `n`, ignoring the element's end; `nil` if the date overflows.
    func startOfOccurrence(_ n: Int) -> Date? {
        occurrenceLookup.startOfOccurrence(n)
    }

    /// What finding this element's occurrences reads, apart from the element.
    var occurrenceLookup: OccurrenceLookup {
        OccurrenceLookup(anchors: anchors, occurrenceCount: occurrenceCount, end: end)
    }

    private var isAllDay: Bool { rule.isAllDay }

    /// The end of an event starting at `eventStart`: CareKit ends all-day events one second before the
    /// next day starts (`date(byAdding: DateComponents(day: 1, second: -1), to: start)`).
    func endOfEvent(startingAt eventStart: Date) -> Date {
        switch duration {
        case .seconds(let seconds):
            return eventStart.addingTimeInterval(seconds)
        case .allDay:
            return calendar.date(byAdding: DateComponents(day: 1, second: -1), to: eventStart)
                ?? eventStart.addingTimeInterval(86_399)
        }
    }

    /// The start of occurrence `n` when the element has it (it starts before the element's end):
    /// ``event(atLocalOccurrence:)``'s start, without the end.
    func existingStart(ofLocalOccurrence n: Int) -> Date? {
        occurrenceLookup.existingStart(ofLocalOccurrence: n)
    }

    /// The event of occurrence `n` of this element alone (its `occurrence` is `n`), or `nil` if the element
    /// has ended by then.
    public func event(atLocalOccurrence n: Int) -> ScheduleEvent? {
        guard let eventStart = existingStart(ofLocalOccurrence: n) else { return nil }
        return ScheduleEvent(start: eventStart, end: endOfEvent(startingAt: eventStart), element: self, occurrence: n)
    }

    /// The number of occurrences that start before `date` (or at `date` too, when `including` is true),
    /// counting only occurrences that exist before the element's end.
    func countOccurrences(startingBefore date: Date, including: Bool) -> Int {
        occurrenceLookup.countOccurrences(startingBefore: date, including: including)
    }

    /// The smallest `n` whose start is at or after `date` (strictly after when `strictlyAfter`), ignoring the
    /// element's end. (CareKit's starts never decrease with `n`: every step moves forward.)
    func firstOccurrence(startingAtOrAfter date: Date, strictlyAfter: Bool) -> Int {
        occurrenceLookup.firstOccurrence(startingAtOrAfter: date, strictlyAfter: strictlyAfter)
    }

    /// This element's events for a query over `[from, to)`, by CareKit's rule (`OCKSchedule.events(from:to:)`):
    /// those that start before `to` and end at or after `from` (one ending exactly at `from` counts); an
    /// all-day event counts if its day is `from`'s day or later. `occurrence` is the local index within the
    /// element.
    public func localEvents(from: Date, to: Date) -> [ScheduleEvent] {
        guard from < to else { return [] }
        // The earliest start that can still count (for timed events less a second, against rounding).
        let earliest: Date
        switch duration {
        case .seconds(let seconds): earliest = from.addingTimeInterval(-seconds - 1)
        case .allDay:
            // No all-day event runs more than a day past the horizon; and the calendar's arithmetic on a
            // date tens of thousands of years ahead takes seconds (a fuzzer's finding).
            guard from <= OccurrenceAnchors.horizon.addingTimeInterval(2 * 86_400) else { return [] }
            earliest = calendar.startOfDay(for: from)
        }
        // Nothing starts after the horizon: a query whose earliest start is past it finds nothing, at once.
        guard earliest <= OccurrenceAnchors.horizon else { return [] }
        var n = firstOccurrence(startingAtOrAfter: earliest, strictlyAfter: false)
        var events: [ScheduleEvent] = []
        while let event = event(atLocalOccurrence: n), event.start < to {
            if isAllDay ? event.start >= earliest : event.end >= from {
                events.append(event)
            }
            n += 1
        }
        return events
    }
}

extension ScheduleElement {
    /// How many events CareKit computes to reach `date` (`OCKScheduleElement.events(from:to:)` steps from
    /// the element's start): those starting before it, within the element's end.
    public func stepsBefore(_ date: Date) -> Int {
        countOccurrences(startingBefore: date, including: false)
    }

    /// The same element from its first event starting at or after `date` on: the same events from there
    /// (CareKit steps from each event's start, so the sequence from any event on is the one from the
    /// start), numbered from 0. Nil when no event starts at or after `date`.
    public func continued(from date: Date) throws -> ScheduleElement? {
        let n = firstOccurrence(startingAtOrAfter: date, strictlyAfter: false)
        guard let event = event(atLocalOccurrence: n) else { return nil }
        return try ScheduleElement(
            start: event.start, end: end, interval: interval, text: text, targetValues: targetValues, duration: duration, timeZone: timeZone)
    }
}
