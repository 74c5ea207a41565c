import Foundation
import XCTest
@testable import CareModel

/// Schedules of several elements (one occurrence index across them), the query rule, and the refusals.
final class ScheduleTests: XCTestCase {
    private let ny = Clock.newYork

    private func daily(_ hour: Int, from day: Int, duration: ScheduleElement.Duration = .hours(1), end: Date? = nil) throws -> ScheduleElement {
        try ScheduleElement(start: Clock.date(2026, 5, day, hour), end: end, interval: DateComponents(day: 1),
                            duration: duration, timeZone: ny)
    }

    /// The shortcut export takes agrees with occurrence(at:) everywhere: one element and several,
    /// short, long (overlapping the next) and all-day events, a week apart, an element that ends, times
    /// before, inside and well after each event (weeks after, as an app recording late).
    func testOccurrenceHoldsAgreesWithOccurrenceAt() throws {
        let schedules = [
            try Schedule(composing: [try daily(8, from: 1)]),
            try Schedule(composing: [try daily(0, from: 1, duration: .allDay)]),
            try Schedule(composing: [try ScheduleElement(start: Clock.date(2026, 5, 1, 9), end: nil, interval: DateComponents(day: 7),
                                                         duration: .minutes(30), timeZone: ny)]),
            try Schedule(composing: [try daily(20, from: 1), try daily(8, from: 1)]),
            try Schedule(composing: [try daily(8, from: 2, duration: .hours(30))]),
            try Schedule(composing: [try daily(8, from: 1, end: Clock.date(2026, 5, 6))]),
            try Schedule(composing: [try daily(9, from: 3, duration: .allDay), try daily(7, from: 1, duration: .hours(50))]),
            try Schedule(composing: [try daily(8, from: 1, end: Clock.date(2026, 5, 4)), try daily(18, from: 8)]),
        ]
        for schedule in schedules {
            for hours in stride(from: -30, to: 24 * 40, by: 5) {
                let time = Clock.date(2026, 5, 1).addingTimeInterval(Double(hours) * 3600 + 1234)
                for occurrence in -1..<14 {
                    XCTAssertEqual(schedule.occurrence(occurrence, holds: time), schedule.occurrence(at: time) == occurrence,
                                   "\(schedule) at \(Clock.text(time)), occurrence \(occurrence)")
                }
            }
        }
    }

    func testOccurrenceIndexCountsAcrossElementsInTimeOrder() throws {
        // Evening element listed first: the schedule orders elements by start, and numbers events by time.
        let schedule = try Schedule(composing: [try daily(20, from: 1), try daily(8, from: 1)])
        let events = schedule.events(from: Clock.date(2026, 5, 1), to: Clock.date(2026, 5, 3))
        XCTAssertEqual(events.map { Clock.text($0.start) }, [
            "2026-05-01T08:00:00-04:00", "2026-05-01T20:00:00-04:00", "2026-05-02T08:00:00-04:00", "2026-05-02T20:00:00-04:00",
        ])
        XCTAssertEqual(events.map(\.occurrence), [0, 1, 2, 3])
        let later = schedule.events(from: Clock.date(2026, 5, 6), to: Clock.date(2026, 5, 7))
        XCTAssertEqual(later.map(\.occurrence), [10, 11])
    }

    func testElementStartingLaterJoinsTheNumbering() throws {
        let schedule = try Schedule(composing: [try daily(8, from: 1), try daily(20, from: 4)])
        let events = schedule.events(from: Clock.date(2026, 5, 1), to: Clock.date(2026, 5, 6))
        XCTAssertEqual(events.map(\.occurrence), [0, 1, 2, 3, 4, 5, 6])  // 5 mornings, 2 evenings
        XCTAssertEqual(events.map { Clock.text($0.start) }[3...4], ["2026-05-04T08:00:00-04:00", "2026-05-04T20:00:00-04:00"])
        for event in events {
            XCTAssertEqual(schedule.event(occurrence: event.occurrence)?.start, event.start, "occurrence \(event.occurrence)")
        }
        assertMatchesReference(schedule, from: Clock.date(2026, 5, 2, 12), to: Clock.date(2026, 5, 9))
    }

    func testSimultaneousEventsGoInElementOrder() throws {
        let first = try ScheduleElement(start: Clock.date(2026, 5, 1, 9), end: nil, interval: DateComponents(day: 1),
                                        text: "first", timeZone: ny)
        let second = try ScheduleElement(start: Clock.date(2026, 5, 1, 9), end: nil, interval: DateComponents(day: 2),
                                         text: "second", timeZone: ny)
        let schedule = try Schedule(composing: [first, second])
        let events = schedule.events(from: Clock.date(2026, 5, 3), to: Clock.date(2026, 5, 4))
        XCTAssertEqual(events.map(\.element.text), ["first", "second"])
        XCTAssertEqual(events.map(\.occurrence), [3, 4])  // 1st: days 1,2 (0,2); 2nd: day 1 (1); day 3: 3, 4
        XCTAssertEqual(schedule.event(occurrence: 4)?.element.text, "second")
        assertMatchesReference(schedule, from: Clock.date(2026, 5, 1), to: Clock.date(2026, 5, 20))
    }

    func testMixedIntervalsAgreeWithTheReference() throws {
        let schedule = try Schedule(composing: [
            try ScheduleElement(start: Clock.date(2026, 1, 31, 9), end: nil, interval: DateComponents(month: 1), timeZone: ny),
            try ScheduleElement(start: Clock.date(2026, 2, 2, 7), end: Clock.date(2026, 9, 1), interval: DateComponents(weekOfYear: 1),
                                duration: .allDay, timeZone: ny),
            try ScheduleElement(start: Clock.date(2026, 3, 1, 1, 30), end: nil, interval: DateComponents(hour: 13),
                                duration: .minutes(90), timeZone: ny),
        ])
        for (from, to) in [(Clock.date(2026, 3, 8), Clock.date(2026, 3, 9)), (Clock.date(2026, 5, 31, 8), Clock.date(2026, 6, 2)),
                           (Clock.date(2026, 11, 1), Clock.date(2026, 11, 2)), (Clock.date(2026, 1, 1), Clock.date(2026, 2, 10))] {
            assertMatchesReference(schedule, from: from, to: to)
        }
        let sample = schedule.events(from: Clock.date(2026, 6, 1), to: Clock.date(2026, 6, 8))
        XCTAssertFalse(sample.isEmpty)
        for event in sample {
            XCTAssertEqual(schedule.event(occurrence: event.occurrence), event)
        }
        XCTAssertNil(schedule.occurrenceCount)
        XCTAssertTrue(schedule.hasOccurrence(1_000_000))
    }

    func testEventByOccurrenceMatchesTheReference() throws {
        let schedule = try Schedule(composing: [
            try ScheduleElement(start: Clock.date(2026, 1, 31, 9), end: Clock.date(2027, 1, 1), interval: DateComponents(month: 1), timeZone: ny),
            try ScheduleElement(start: Clock.date(2026, 2, 2, 9), end: nil, interval: DateComponents(day: 3), timeZone: ny),
            try ScheduleElement(start: Clock.date(2026, 1, 1, 9), end: Clock.date(2026, 3, 1), interval: DateComponents(hour: 50),
                                duration: .allDay, timeZone: ny),
        ])
        let reference = ReferenceEvents.events(of: schedule, from: .distantPast, to: Clock.date(2026, 8, 1))
        XCTAssertGreaterThan(reference.count, 90)
        for expected in reference {
            let event = schedule.event(occurrence: expected.occurrence)
            XCTAssertEqual(event?.start, expected.start, "occurrence \(expected.occurrence)")
            XCTAssertEqual(event?.occurrence, expected.occurrence)
        }
        XCTAssertNil(schedule.event(occurrence: -1))
    }

    func testQueryIsInclusiveAtTheStartAndExclusiveAtTheEnd() throws {
        // One event a day, 09:00-10:00.
        let schedule = try Schedule(composing: [try daily(9, from: 1)])
        func occurrences(_ from: Date, _ to: Date) -> [Int] { schedule.events(from: from, to: to).map(\.occurrence) }
        XCTAssertEqual(occurrences(Clock.date(2026, 5, 2, 9), Clock.date(2026, 5, 2, 9, 0, 1)), [1], "starts at the query start")
        XCTAssertEqual(occurrences(Clock.date(2026, 5, 2, 9, 30), Clock.date(2026, 5, 2, 12)), [1], "still running at the query start")
        // CareKit keeps an event whose end equals the query start (OCKScheduleElement.events(from:to:):
        // `events.filter { $0.end >= start }`; OCKSchedule: `event.start + duration >= start`).
        XCTAssertEqual(occurrences(Clock.date(2026, 5, 2, 10), Clock.date(2026, 5, 2, 12)), [1], "ended exactly at the query start")
        XCTAssertEqual(occurrences(Clock.date(2026, 5, 2, 10, 0, 1), Clock.date(2026, 5, 2, 12)), [], "ended before the query start")
        XCTAssertEqual(occurrences(Clock.date(2026, 5, 2, 8), Clock.date(2026, 5, 2, 9)), [], "starts exactly at the query end")
        XCTAssertEqual(occurrences(Clock.date(2026, 5, 2, 8), Clock.date(2026, 5, 2, 9, 0, 1)), [1])
        XCTAssertEqual(occurrences(Clock.date(2026, 5, 2, 12), Clock.date(2026, 5, 2, 12)), [], "an empty range")
        XCTAssertEqual(occurrences(Clock.date(2026, 4, 1), Clock.date(2026, 5, 1, 9)), [], "before the schedule starts")
    }

    func testZeroLengthEventAtTheQueryStartCounts() throws {
        let schedule = try Schedule(composing: [try daily(9, from: 1, duration: .seconds(0))])
        XCTAssertEqual(schedule.events(from: Clock.date(2026, 5, 2, 9), to: Clock.date(2026, 5, 2, 10)).map(\.occurrence), [1])
    }

    // MARK: Refusals

    private func refusal(_ make: () throws -> Any) -> ScheduleError? {
        do {
            _ = try make()
            return nil
        } catch {
            return error as? ScheduleError
        }
    }

    func testRefusesEmptyInterval() {
        XCTAssertEqual(refusal { try ScheduleElement(start: Date(), end: nil, interval: DateComponents()) }, .emptyInterval)
    }

    func testRefusesZeroAndNegativeIntervals() {
        let zero = DateComponents(day: 0)
        XCTAssertEqual(refusal { try ScheduleElement(start: Date(), end: nil, interval: zero) }, .intervalNotForward(zero))
        let backwards = DateComponents(hour: -1)
        XCTAssertEqual(refusal { try ScheduleElement(start: Date(), end: nil, interval: backwards) }, .intervalNotForward(backwards))
        let mixed = DateComponents(month: 1, day: -1)
        XCTAssertEqual(refusal { try ScheduleElement(start: Date(), end: nil, interval: mixed) }, .intervalNotForward(mixed))
    }

    func testRefusesUnsupportedIntervalComponents() {
        var weekday = DateComponents(day: 1)
        weekday.weekday = 2
        XCTAssertEqual(refusal { try ScheduleElement(start: Date(), end: nil, interval: weekday) }, .unsupportedIntervalComponent("weekday"))
    }

    func testRefusesAllDayIntervalsThatNeverLeaveTheDay() {
        // CareKit steps all-day events from the start of their day: start of day + 20 hours is the same day,
        // so CareKit would compute events of that day forever.
        let short = DateComponents(hour: 20)
        XCTAssertEqual(refusal { try ScheduleElement(start: Date(), end: nil, interval: short, duration: .allDay) },
                       .allDayIntervalTooShort(short))
        let day = DateComponents(hour: 24)  // stays on a 25-hour fall-back day
        XCTAssertEqual(refusal { try ScheduleElement(start: Date(), end: nil, interval: day, duration: .allDay) },
                       .allDayIntervalTooShort(day))
        XCTAssertNil(refusal { try ScheduleElement(start: Date(), end: nil, interval: DateComponents(hour: 20)) }, "timed is fine")
        XCTAssertTrue(ScheduleError.allDayIntervalTooShort(short).description.contains("20 hour"))
    }

    func testRefusesEndNotAfterStart() {
        let start = Clock.date(2026, 5, 1, 9)
        XCTAssertEqual(refusal { try ScheduleElement(start: start, end: start, interval: DateComponents(day: 1)) },
                       .endNotAfterStart(start: start, end: start))
        let before = Clock.date(2026, 4, 1)
        XCTAssertEqual(refusal { try ScheduleElement(start: start, end: before, interval: DateComponents(day: 1)) },
                       .endNotAfterStart(start: start, end: before))
    }

    func testRefusesNegativeOrNonFiniteDuration() {
        XCTAssertEqual(refusal { try ScheduleElement(start: Date(), end: nil, interval: DateComponents(day: 1), duration: .seconds(-5)) },
                       .invalidDuration(-5))
        let nan = refusal { try ScheduleElement(start: Date(), end: nil, interval: DateComponents(day: 1), duration: .seconds(.nan)) }
        guard case .invalidDuration(let value)? = nan else { return XCTFail("expected invalidDuration, got \(String(describing: nan))") }
        XCTAssertTrue(value.isNaN)
    }

    func testRefusesScheduleWithoutElements() {
        XCTAssertEqual(refusal { try Schedule(composing: []) }, .noElements)
    }

    func testRefusesBadTimesInConvenienceConstructors() {
        XCTAssertEqual(refusal { try Schedule.dailyAtTime(hour: 24, minutes: 0, start: Date(), end: nil, text: nil) },
                       .invalidTimeOfDay(hour: 24, minute: 0))
        XCTAssertEqual(refusal { try Schedule.weeklyAtTime(weekday: 8, hours: 9, minutes: 0, start: Date(), end: nil, text: nil) },
                       .invalidWeekday(8))
    }

    func testDecodingABadScheduleIsATypedError() throws {
        let json = #"{"elements":[{"start":0,"interval":{},"duration":{"isAllDay":false,"seconds":60},"targetValues":[]}]}"#
        XCTAssertThrowsError(try JSONDecoder().decode(Schedule.self, from: Data(json.utf8))) { error in
            XCTAssertEqual(error as? ScheduleError, .emptyInterval, "\(error)")
        }
        let none = #"{"elements":[]}"#
        XCTAssertThrowsError(try JSONDecoder().decode(Schedule.self, from: Data(none.utf8))) { error in
            XCTAssertEqual(error as? ScheduleError, .noElements, "\(error)")
        }
    }

    func testErrorMessagesSayWhatIsWrong() {
        XCTAssertTrue(ScheduleError.emptyInterval.description.contains("empty interval"))
        XCTAssertTrue(ScheduleError.intervalNotForward(DateComponents(day: 0)).description.contains("0 day"))
    }
}
