import Foundation
import XCTest
@testable import CareModel

/// Dates and a brute-force event reference for the schedule tests.
enum Clock {
    static let newYork = TimeZone(identifier: "America/New_York") ?? .gmt
    static let utc = TimeZone.gmt

    /// A wall-clock date in `zone` (second 0 unless given).
    static func date(
        _ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0, _ second: Int = 0,
        in zone: TimeZone = newYork
    ) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return calendar.date(from: components) ?? .distantPast
    }

    /// `date` as `yyyy-MM-dd HH:mm zzz`-ish text in `zone`, with the UTC offset, for readable assertions.
    static func text(_ date: Date, in zone: TimeZone = newYork) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = zone
        return formatter.string(from: date)
    }
}

/// CareKit's algorithm written the slow, obvious way (`OCKScheduleElement.computeEventsWhile` and
/// `OCKSchedule.events(from:to:)`, CareKitStore/Structs): every element stepped from its start, one
/// `calendar.date(byAdding: interval, to: previous)` at a time (all-day: moved to the start of the day),
/// in the element's own time zone; all events sorted by (start, element order), numbered, then kept if
/// they end at or after `from` (all-day: if their day is `from`'s day or later). It uses nothing of the
/// fast implementation, which must agree with it.
enum ReferenceEvents {
    /// The starts of `element`'s occurrences that begin before `limit` (and before the element's end).
    static func starts(of element: ScheduleElement, before limit: Date) -> [Date] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = element.timeZone
        let allDay = element.duration == .allDay
        var starts: [Date] = []
        var start = allDay ? calendar.startOfDay(for: element.start) : element.start
        while start < limit, element.end.map({ start < $0 }) ?? true {
            starts.append(start)
            guard let next = calendar.date(byAdding: element.interval, to: start) else { break }
            let nextStart = allDay ? calendar.startOfDay(for: next) : next
            guard nextStart > start else { break }  // CareKit would loop forever here; no test goes there
            start = nextStart
        }
        return starts
    }

    /// CareKit's end of an event starting at `start`.
    static func end(of element: ScheduleElement, startingAt start: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = element.timeZone
        switch element.duration {
        case .allDay: return calendar.date(byAdding: DateComponents(day: 1, second: -1), to: start) ?? start
        case .seconds(let seconds): return start.addingTimeInterval(seconds)
        }
    }

    static func events(of schedule: Schedule, from: Date, to: Date) -> [(start: Date, end: Date, occurrence: Int)] {
        Timeline(schedule, until: to).events(from: from, to: to)
    }

    /// All events of a schedule that start before a limit, numbered, computed once and queried many times.
    struct Timeline {
        let schedule: Schedule
        /// Sorted by (start, element order); the position is the occurrence index.
        let all: [(start: Date, end: Date, element: Int)]

        init(_ schedule: Schedule, until limit: Date) {
            self.schedule = schedule
            var all: [(start: Date, end: Date, element: Int)] = []
            for (index, element) in schedule.elements.enumerated() {
                for start in ReferenceEvents.starts(of: element, before: limit) {
                    all.append((start, ReferenceEvents.end(of: element, startingAt: start), index))
                }
            }
            all.sort { ($0.start, $0.element) < ($1.start, $1.element) }
            self.all = all
        }

        /// CareKit's query rule over the events (`to` must not pass the limit; no event lasts over 3 days).
        func events(from: Date, to: Date) -> [(start: Date, end: Date, occurrence: Int)] {
            let earliest = from.addingTimeInterval(-3 * 86_400)
            var low = 0
            var high = all.count
            while low < high {
                let middle = (low + high) / 2
                if all[middle].start < earliest { low = middle + 1 } else { high = middle }
            }
            var events: [(start: Date, end: Date, occurrence: Int)] = []
            for occurrence in low..<all.count {
                let event = all[occurrence]
                guard event.start < to else { break }
                let element = schedule.elements[event.element]
                var calendar = Calendar(identifier: .gregorian)
                calendar.timeZone = element.timeZone
                let counts = element.duration == .allDay ? event.start >= calendar.startOfDay(for: from) : event.end >= from
                if counts { events.append((event.start, event.end, occurrence)) }
            }
            return events
        }
    }
}

extension XCTestCase {
    /// Asserts that `schedule.events(from:to:)` equals the brute-force reference.
    func assertMatchesReference(_ schedule: Schedule, from: Date, to: Date, file: StaticString = #filePath, line: UInt = #line) {
        let fast = schedule.events(from: from, to: to).map { "\($0.occurrence)@\(Clock.text($0.start))-\(Clock.text($0.end))" }
        let slow = ReferenceEvents.events(of: schedule, from: from, to: to).map { "\($0.occurrence)@\(Clock.text($0.start))-\(Clock.text($0.end))" }
        XCTAssertEqual(fast, slow, "events from \(Clock.text(from)) to \(Clock.text(to))", file: file, line: line)
    }
}
