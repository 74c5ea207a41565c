import Foundation

/// When a task happens (CareKit `OCKSchedule`): one or more ``ScheduleElement``s whose events are merged
/// in time order and numbered by one occurrence index across the whole schedule.
///
/// ### Members
/// - ``events(from:to:)``: the events of a time range, by CareKit's rule (an event ending at or after the
///   start counts; one starting at or after the end does not).
/// - ``event(occurrence:)``, ``hasOccurrence(_:)``: what an outcome's occurrence index names.
public struct Schedule: Sendable, Hashable {
    /// The rules that make up the schedule; never empty.
    public let elements: [ScheduleElement]

    /// A schedule of `elements`, ordered by start as CareKit's `OCKSchedule(composing:)` orders them
    /// (elements with equal starts keep their given order); refuses an empty list.
    public init(composing elements: [ScheduleElement]) throws {
        guard !elements.isEmpty else { throw ScheduleError.noElements }
        self.elements = elements.enumerated()
            .sorted { ($0.element.start, $0.offset) < ($1.element.start, $1.offset) }
            .map(\.element)
    }

    /// The first start of any element.
    public var startDate: Date {
        elements.map(\.start).min() ?? .distantPast
    }

    /// The latest end of all elements; `nil` if any element repeats forever.
    public var endDate: Date? {
        var latest: Date?
        for element in elements {
            guard let end = element.end else { return nil }
            latest = max(latest ?? end, end)
        }
        return latest
    }

    /// How many occurrences the schedule has in all; `nil` if it repeats forever.
    public var occurrenceCount: Int? {
        var total = 0
        for element in elements {
            guard let count = element.occurrenceCount else { return nil }
            total += count
        }
        return total
    }

    /// Whether occurrence index `occurrence` exists (an outcome may only name one that does).
    public func hasOccurrence(_ occurrence: Int) -> Bool {
        guard occurrence >= 0 else { return false }
        guard let count = occurrenceCount else { return true }
        return occurrence < count
    }

    /// No occurrence of any schedule starts after this date (4001-01-01): queries and occurrence indices
    /// beyond it find nothing, at once.
    public static var horizon: Date { OccurrenceAnchors.horizon }

    /// The events of `[from, to)`, in time order, numbered across all elements, as CareKit's
    /// `OCKSchedule.events(from:to:)` selects them: an event counts if it starts before `to` and ends at or
    /// after `from` (one ending exactly at `from` counts); an all-day event counts if it starts before `to`
    /// and its day is `from`'s day or later.
    public func events(from: Date, to: Date) -> [ScheduleEvent] {
        if elements.count == 1, let element = elements.first {
            return element.localEvents(from: from, to: to)
        }
        var merged: [(event: ScheduleEvent, elementIndex: Int)] = []
        for (index, element) in elements.enumerated() {
            for event in element.localEvents(from: from, to: to) {
                merged.append((event, index))
            }
        }
        merged.sort { ($0.event.start, $0.elementIndex) < ($1.event.start, $1.elementIndex) }
        // Every occurrence starting in [from, to) is in the list, so from the first such event on the index
        // just counts up. Events starting before `from` that still count may have unlisted occurrences between them, so
        // each of those (and the first event starting at or after `from`) is counted in full.
        var events: [ScheduleEvent] = []
        events.reserveCapacity(merged.count)
        var previous: Int?
        // The elements' lookups, made once when an event is counted in full.
        var lookups: [OccurrenceLookup]?
        for item in merged {
            var event = item.event
            if let previous, event.start >= from {
                event.occurrence = previous + 1
            } else {
                let all = lookups ?? elements.map(\.occurrenceLookup)
                lookups = all
                event.occurrence = Self.globalIndex(localOccurrence: item.event.occurrence, start: item.event.start,
                                                    elementIndex: item.elementIndex, in: all)
            }
            if event.start >= from { previous = event.occurrence }
            events.append(event)
        }
        return events
    }

    /// The start of the event with schedule-wide occurrence index `occurrence`, or `nil` if there is none:
    /// ``event(occurrence:)``'s start, without building the event (a store checks this once per outcome).
    public func eventStart(occurrence: Int) -> Date? {
        // `elements[0]` read in place: copying an element costs more than the arithmetic.
        guard elements.count == 1 else { return located(occurrence: occurrence)?.start }
        return elements[0].existingStart(ofLocalOccurrence: occurrence)
    }

    /// The occurrence a measurement taken at `time` belongs to: the last event that started by then,
    /// unless it ended more than a day before (then none). Import places an Observation by its time this
    /// way, and export chooses an Observation's time so that it lands back in the same occurrence.
    public func occurrence(at time: Date) -> Int? {
        let events = events(from: time.addingTimeInterval(-2 * 86_400), to: time.addingTimeInterval(1))
        guard let event = events.last(where: { $0.start <= time }) else { return nil }
        return time.timeIntervalSince(event.end) > 86_400 ? nil : event.occurrence
    }

    /// Whether a measurement taken at `time` belongs to `occurrence` (``occurrence(at:)`` is
    /// `occurrence`), from that event and the next one's start rather than every event of the two days
    /// before `time`. Occurrence indices follow the events' starts (ties in element order), so the last
    /// event that started by `time` is `occurrence` exactly when it started by then and the next did not;
    /// ``occurrence(at:)`` then takes it unless it ended more than a day before. (An event that ended
    /// before its two-day window ended more than a day before, so the window never changes the answer.)
    public func occurrence(_ occurrence: Int, holds time: Date) -> Bool {
        guard let event = event(occurrence: occurrence), event.start <= time,
              time.timeIntervalSince(event.end) <= 86_400
        else { return false }
        if let next = eventStart(occurrence: occurrence + 1), next <= time { return false }
        return true
    }

    /// The event with schedule-wide occurrence index `occurrence`, or `nil` if there is none.
    public func event(occurrence: Int) -> ScheduleEvent? {
        if elements.count == 1, let element = elements.first {
            return element.event(atLocalOccurrence: occurrence)
        }
        guard let (elementIndex, local, _) = located(occurrence: occurrence),
              var event = elements[elementIndex].event(atLocalOccurrence: local)
        else { return nil }
        event.occurrence = occurrence
        return event
    }

    /// The element, local occurrence and start of the event with schedule-wide index `occurrence` of a
    /// schedule of several elements, or `nil` if there is none. Starts only: an event's end (a calendar
    /// step for an all-day one) is made once, for the event found, not for every index tried.
    private func located(occurrence: Int) -> (element: Int, local: Int, start: Date)? {
        guard hasOccurrence(occurrence) else { return nil }
        // The global index grows with each element's local index: search each element for the local
        // index whose global index is `occurrence`, starting from a guess that shares `occurrence` out by
        // the elements' rates.
        let rates = elements.map { 1 / max($0.rule.approximateSeconds, 1) }
        let totalRate = rates.reduce(0, +)
        // Each element's lookup made once: an element read out of the array is copied whole to be read
        // (a log's schedule has an element per run of reading days, read for every index tried).
        let lookups = elements.map { $0.occurrenceLookup }
        for index in lookups.indices {
            let share = Double(occurrence) * rates[index] / totalRate
            let guess = share.isFinite ? Int(min(share, Double(occurrence))) : 0
            let local = firstIndex(near: guess) { n in
                guard let start = lookups[index].existingStart(ofLocalOccurrence: n) else { return true }
                return Self.globalIndex(localOccurrence: n, start: start, elementIndex: index, in: lookups) >= occurrence
            }
            guard let start = lookups[index].existingStart(ofLocalOccurrence: local),
                  Self.globalIndex(localOccurrence: local, start: start, elementIndex: index, in: lookups) == occurrence
            else { continue }
            return (index, local, start)
        }
        return nil
    }

    /// The schedule-wide index of an element's local occurrence, given every element's lookup: how many
    /// events of all elements come before it in time order (ties go to the element listed first).
    private static func globalIndex(localOccurrence: Int, start: Date, elementIndex: Int, in lookups: [OccurrenceLookup]) -> Int {
        var index = localOccurrence
        for other in lookups.indices where other != elementIndex {
            index += lookups[other].countOccurrences(startingBefore: start, including: other < elementIndex)
        }
        return index
    }
}
