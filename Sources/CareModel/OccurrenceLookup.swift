import Foundation

/// What finding an element's occurrences by index and by time reads: its ``OccurrenceAnchors``, its
/// occurrence count and its end, apart from the rest of the element. A schedule of many elements (a log
/// with an element per run of reading days) reads them for every index its search tries, and an element
/// read out of an array is copied whole (calendar, interval, targets) to be read: the lookups are made
/// once per search instead (``Schedule/eventStart(occurrence:)``: the store checks one per outcome).
struct OccurrenceLookup {
    let anchors: OccurrenceAnchors
    /// The element's ``ScheduleElement/occurrenceCount``.
    let occurrenceCount: Int?
    /// The element's exclusive end.
    let end: Date?

    /// The start of occurrence `n`, ignoring the element's end; `nil` if the date overflows.
    func startOfOccurrence(_ n: Int) -> Date? {
        if let count = occurrenceCount, n >= count { return nil }  // past the end: no need to look
        return anchors.start(ofOccurrence: n)
    }

    /// The start of occurrence `n` when the element has it (it starts before the element's end).
    func existingStart(ofLocalOccurrence n: Int) -> Date? {
        guard let start = startOfOccurrence(n) else { return nil }
        if let end, start >= end { return nil }
        return start
    }

    /// The number of occurrences that start before `date` (or at `date` too, when `including` is true),
    /// counting only occurrences that exist before the element's end.
    func countOccurrences(startingBefore date: Date, including: Bool) -> Int {
        let n = firstOccurrence(startingAtOrAfter: date, strictlyAfter: including)
        guard let count = occurrenceCount else { return n }
        return min(n, count)
    }

    /// The smallest `n` whose start is at or after `date` (strictly after when `strictlyAfter`), ignoring the
    /// element's end.
    func firstOccurrence(startingAtOrAfter date: Date, strictlyAfter: Bool) -> Int {
        if let count = occurrenceCount, let end, date >= end { return count }  // every occurrence starts before `end`
        return anchors.firstOccurrence(startingAtOrAfter: date, strictlyAfter: strictlyAfter)
    }
}
