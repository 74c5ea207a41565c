import Foundation
import XCTest
@testable import CareModel

/// Schedule math of single elements: intervals, the element end, all-day events and DST in a named zone.
final class ScheduleElementTests: XCTestCase {
    private let ny = Clock.newYork

    func testDailyAtTimeGivesOneEventPerDayAtThatTime() throws {
        let schedule = try Schedule.dailyAtTime(hour: 8, minutes: 15, start: Clock.date(2026, 5, 1, 17), end: nil,
                                                text: "with breakfast", timeZone: ny)
        let events = schedule.events(from: Clock.date(2026, 5, 3), to: Clock.date(2026, 5, 5))
        XCTAssertEqual(events.map { Clock.text($0.start) }, ["2026-05-03T08:15:00-04:00", "2026-05-04T08:15:00-04:00"])
        XCTAssertEqual(events.map(\.occurrence), [2, 3], "the first occurrence is on the start's own day")
        XCTAssertEqual(events.first.map { $0.end.timeIntervalSince($0.start) }, 3600, "CareKit's default duration is 1 hour")
        XCTAssertEqual(events.first?.element.text, "with breakfast")
    }

    func testWeeklyByWeekdayStartsOnTheFirstSuchDay() throws {
        // 2026-05-01 is a Friday; weekday 3 is Tuesday.
        let schedule = try Schedule.weeklyAtTime(weekday: 3, hours: 18, minutes: 0, start: Clock.date(2026, 5, 1, 9),
                                                 end: nil, text: nil, timeZone: ny)
        let events = schedule.events(from: Clock.date(2026, 5, 1), to: Clock.date(2026, 5, 31))
        XCTAssertEqual(events.map { Clock.text($0.start) }, [
            "2026-05-05T18:00:00-04:00", "2026-05-12T18:00:00-04:00", "2026-05-19T18:00:00-04:00", "2026-05-26T18:00:00-04:00",
        ])
        XCTAssertEqual(events.map(\.occurrence), [0, 1, 2, 3])
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = ny
        XCTAssertTrue(events.allSatisfy { calendar.component(.weekday, from: $0.start) == 3 })
    }

    func testEveryEightHours() throws {
        let element = try ScheduleElement(start: Clock.date(2026, 6, 1, 6), end: nil, interval: DateComponents(hour: 8),
                                          duration: .minutes(30), timeZone: ny)
        let schedule = try Schedule(composing: [element])
        let events = schedule.events(from: Clock.date(2026, 6, 3), to: Clock.date(2026, 6, 4))
        XCTAssertEqual(events.map { Clock.text($0.start) }, [
            "2026-06-03T06:00:00-04:00", "2026-06-03T14:00:00-04:00", "2026-06-03T22:00:00-04:00",
        ])
        XCTAssertEqual(events.map(\.occurrence), [6, 7, 8])
        assertMatchesReference(schedule, from: Clock.date(2026, 6, 3), to: Clock.date(2026, 6, 4))
    }

    func testMonthlyFromTheThirtyFirstClampsAndStaysClamped() throws {
        // CareKit steps from the previous event (OCKScheduleElement.computeEventsWhile:
        // `calendar.date(byAdding: interval, to: event.start)`): Jan 31 + 1 month is Feb 28, and Feb 28
        // + 1 month is Mar 28, so every later event is on the 28th.
        let element = try ScheduleElement(start: Clock.date(2026, 1, 31, 9), end: nil, interval: DateComponents(month: 1),
                                          timeZone: ny)
        let schedule = try Schedule(composing: [element])
        let events = schedule.events(from: Clock.date(2026, 1, 1), to: Clock.date(2026, 7, 1))
        XCTAssertEqual(events.map { Clock.text($0.start) }, [
            "2026-01-31T09:00:00-05:00", "2026-02-28T09:00:00-05:00", "2026-03-28T09:00:00-04:00",
            "2026-04-28T09:00:00-04:00", "2026-05-28T09:00:00-04:00", "2026-06-28T09:00:00-04:00",
        ])
        // Leap February, 25 months later, and one day's query far from the start: still the 28th.
        XCTAssertTrue(schedule.events(from: Clock.date(2028, 2, 29), to: Clock.date(2028, 3, 1)).isEmpty)
        let leap = schedule.events(from: Clock.date(2028, 2, 28), to: Clock.date(2028, 2, 29))
        XCTAssertEqual(leap.map { Clock.text($0.start) }, ["2028-02-28T09:00:00-05:00"])
        XCTAssertEqual(leap.map(\.occurrence), [25])
        assertMatchesReference(schedule, from: Clock.date(2027, 11, 15), to: Clock.date(2028, 4, 2))
    }

    func testMonthlyFromTheThirtiethClampsInFebruaryOnly() throws {
        // Apr 30 and Jun 30 exist, so the 30th holds until February, then the 28th (CareKit's steps).
        let element = try ScheduleElement(start: Clock.date(2026, 4, 30, 9), end: nil, interval: DateComponents(month: 1),
                                          timeZone: ny)
        let events = try Schedule(composing: [element]).events(from: Clock.date(2027, 1, 1), to: Clock.date(2027, 5, 1))
        XCTAssertEqual(events.map { Clock.text($0.start) }, [
            "2027-01-30T09:00:00-05:00", "2027-02-28T09:00:00-05:00", "2027-03-28T09:00:00-04:00", "2027-04-28T09:00:00-04:00",
        ])
    }

    func testYearlyOnLeapDayMovesToTheTwentyEighthForGood() throws {
        // CareKit: 2024-02-29 + 1 year is 2025-02-28; from there each step keeps the 28th, leap years too.
        let element = try ScheduleElement(start: Clock.date(2024, 2, 29, 12), end: nil, interval: DateComponents(year: 1),
                                          timeZone: ny)
        let events = try Schedule(composing: [element]).events(from: Clock.date(2025, 1, 1), to: Clock.date(2029, 1, 1))
        XCTAssertEqual(events.map { Clock.text($0.start) }, [
            "2025-02-28T12:00:00-05:00", "2026-02-28T12:00:00-05:00", "2027-02-28T12:00:00-05:00", "2028-02-28T12:00:00-05:00",
        ])
    }

    func testAllDayEventsCoverTheWholeDayAndCountWhileRunning() throws {
        let element = try ScheduleElement(start: Clock.date(2026, 3, 6, 14), end: nil, interval: DateComponents(day: 1),
                                          duration: .allDay, timeZone: ny)
        XCTAssertEqual(Clock.text(element.start), "2026-03-06T00:00:00-05:00", "CareKit moves an all-day start to midnight")
        let schedule = try Schedule(composing: [element])
        // A query in the middle of a day still sees that day's event.
        let noon = schedule.events(from: Clock.date(2026, 3, 7, 12), to: Clock.date(2026, 3, 7, 13))
        XCTAssertEqual(noon.map { Clock.text($0.start) }, ["2026-03-07T00:00:00-05:00"])
        XCTAssertEqual(noon.map { Clock.text($0.end) }, ["2026-03-07T23:59:59-05:00"])
        XCTAssertEqual(noon.map(\.occurrence), [1])
        // The spring-forward day is 23 hours long: it still ends one second before the next midnight.
        let short = schedule.events(from: Clock.date(2026, 3, 8), to: Clock.date(2026, 3, 9))
        XCTAssertEqual(short.map { Clock.text($0.end) }, ["2026-03-08T23:59:59-04:00"])
        XCTAssertEqual(short.map { $0.end.timeIntervalSince($0.start) }, [23 * 3600 - 1])
        assertMatchesReference(schedule, from: Clock.date(2026, 3, 7, 12), to: Clock.date(2026, 3, 12))
    }

    func testSpringForwardMovesTheMissingTimeForwardForGood() throws {
        // 2026-03-08 in New York: 02:00 EST jumps to 03:00 EDT, so 02:30 does not exist that day. Foundation's
        // calendar resolves it to 03:30; CareKit's next step adds a day to 03:30, so 03:30 it stays
        // (OCKScheduleElement.computeEventsWhile steps from the previous event's start).
        let schedule = try Schedule.dailyAtTime(hour: 2, minutes: 30, start: Clock.date(2026, 3, 6), end: nil, text: nil,
                                                timeZone: ny)
        let events = schedule.events(from: Clock.date(2026, 3, 7), to: Clock.date(2026, 3, 11))
        XCTAssertEqual(events.map { Clock.text($0.start) }, [
            "2026-03-07T02:30:00-05:00",
            "2026-03-08T03:30:00-04:00",  // the gap: one hour later, as Foundation's calendar resolves it
            "2026-03-09T03:30:00-04:00",  // CareKit steps on from 03:30
            "2026-03-10T03:30:00-04:00",
        ])
        XCTAssertEqual(events.map(\.occurrence), [1, 2, 3, 4])
        let springDay = schedule.events(from: Clock.date(2026, 3, 8), to: Clock.date(2026, 3, 9))
        XCTAssertEqual(springDay.count, 1)
        // Years later, still 03:30 (even in winter), and found without walking every day.
        let later = schedule.events(from: Clock.date(2031, 1, 15), to: Clock.date(2031, 1, 16))
        XCTAssertEqual(later.map { Clock.text($0.start) }, ["2031-01-15T03:30:00-05:00"])
        assertMatchesReference(schedule, from: Clock.date(2031, 1, 15), to: Clock.date(2031, 1, 16))
    }

    func testFallBackHasOneEventAtTheFirstOfTheRepeatedTimes() throws {
        // 2026-11-01 in New York: 02:00 EDT falls back to 01:00 EST, so 01:30 happens twice.
        let schedule = try Schedule.dailyAtTime(hour: 1, minutes: 30, start: Clock.date(2026, 10, 30), end: nil, text: nil,
                                                timeZone: ny)
        let events = schedule.events(from: Clock.date(2026, 10, 31), to: Clock.date(2026, 11, 3))
        XCTAssertEqual(events.map { Clock.text($0.start) }, [
            "2026-10-31T01:30:00-04:00",
            "2026-11-01T01:30:00-04:00",  // the first 01:30 (EDT); no second event at 01:30 EST
            "2026-11-02T01:30:00-05:00",
        ])
        XCTAssertEqual(events.map(\.occurrence), [1, 2, 3])
        // The day is 25 hours long: from local midnight to local midnight.
        let fallDay = schedule.events(from: Clock.date(2026, 11, 1), to: Clock.date(2026, 11, 2))
        XCTAssertEqual(fallDay.count, 1)
    }

    func testHourlyIntervalsCountElapsedHoursAcrossDST() throws {
        let element = try ScheduleElement(start: Clock.date(2026, 11, 1), end: nil, interval: DateComponents(hour: 1),
                                          duration: .seconds(0), timeZone: ny)
        let events = try Schedule(composing: [element]).events(from: Clock.date(2026, 11, 1), to: Clock.date(2026, 11, 2))
        XCTAssertEqual(events.count, 25, "the fall-back day has 25 hours")
    }

    func testElementEndIsExclusive() throws {
        let schedule = try Schedule.dailyAtTime(hour: 9, minutes: 0, start: Clock.date(2026, 1, 1), end: Clock.date(2026, 1, 5, 9),
                                                text: nil, timeZone: ny)
        let events = schedule.events(from: Clock.date(2025, 12, 1), to: Clock.date(2026, 2, 1))
        XCTAssertEqual(events.map { Clock.text($0.start) }, [
            "2026-01-01T09:00:00-05:00", "2026-01-02T09:00:00-05:00", "2026-01-03T09:00:00-05:00", "2026-01-04T09:00:00-05:00",
        ])
        XCTAssertEqual(schedule.occurrenceCount, 4)
        XCTAssertTrue(schedule.hasOccurrence(3))
        XCTAssertFalse(schedule.hasOccurrence(4))
        XCTAssertFalse(schedule.hasOccurrence(-1))
        XCTAssertNil(schedule.event(occurrence: 4))
        XCTAssertEqual(schedule.event(occurrence: 3).map { Clock.text($0.start) }, "2026-01-04T09:00:00-05:00")
        XCTAssertEqual(schedule.endDate, Clock.date(2026, 1, 5, 9))
        XCTAssertTrue(schedule.events(from: Clock.date(2026, 1, 5), to: Clock.date(2026, 3, 1)).isEmpty)
    }

    func testAllDayElementEndingMidDayKeepsThatDay() throws {
        // CareKit: an all-day event counts if its day starts before the end.
        let element = try ScheduleElement(start: Clock.date(2026, 4, 1), end: Clock.date(2026, 4, 3, 10),
                                          interval: DateComponents(day: 1), duration: .allDay, timeZone: ny)
        XCTAssertEqual(element.occurrenceCount, 3)
    }

    func testOneDayFarFromTheStartIsComputedDirectly() throws {
        // A minutely schedule queried 150 years after its start: about 79 million occurrences earlier, so
        // stepping through them would not finish; the index comes out by arithmetic.
        let start = Clock.date(2000, 1, 1, in: Clock.utc)
        let element = try ScheduleElement(start: start, end: nil, interval: DateComponents(minute: 1),
                                          duration: .seconds(30), timeZone: Clock.utc)
        let from = Clock.date(2150, 6, 1, 12, in: Clock.utc)
        let events = try Schedule(composing: [element]).events(from: from, to: from.addingTimeInterval(180))
        XCTAssertEqual(events.count, 3)
        XCTAssertEqual(events.first?.occurrence, Int(from.timeIntervalSince(start) / 60))
        XCTAssertEqual(events.first?.start, from)
    }

    func testMonthAndDayIntervalStepsLikeCareKit() throws {
        // Months mixed with days: each step adds one month, then two days, to the previous start.
        let element = try ScheduleElement(start: Clock.date(2026, 1, 31, 9), end: nil,
                                          interval: DateComponents(month: 1, day: 2), timeZone: ny)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = ny
        var expected: Date? = element.start
        for n in 0...130 {
            if [0, 1, 7, 30, 123, 130].contains(n), let date = expected {
                XCTAssertEqual(element.event(atLocalOccurrence: n)?.start, date, "occurrence \(n)")
                XCTAssertEqual(element.firstOccurrence(startingAtOrAfter: date, strictlyAfter: false), n)
                XCTAssertEqual(element.firstOccurrence(startingAtOrAfter: date, strictlyAfter: true), n + 1)
            }
            expected = expected.flatMap { calendar.date(byAdding: DateComponents(month: 1, day: 2), to: $0) }
        }
    }
}
