import Foundation
import XCTest
@testable import CareModel

/// Schedule queries far from the start. Fuzzing the schedule engine found elements every few minutes,
/// asked about 3,600-5,400 years after their start or for an occurrence near 1.7e9, that ran for 30-45 s:
/// past the horizon (year 4001) the events of a query were followed one by one. Nothing starts after
/// the horizon now, so such a query answers at once, and queries before it are unchanged.
final class ScheduleDistanceTests: XCTestCase {
    private static let zones = ["UTC", "Asia/Kathmandu", "Pacific/Apia", "Australia/Lord_Howe", "America/Santiago"]
    private let start = Date(timeIntervalSince1970: 1_700_000_000)  // 2023-11-14

    func testNothingExistsPastTheHorizonWhateverTheQuery() throws {
        for name in Self.zones {
            let zone = try XCTUnwrap(TimeZone(identifier: name))
            for minutes in [2, 7, 15] {
                let element = try ScheduleElement(start: start, end: nil, interval: DateComponents(minute: minutes), duration: .minutes(1), timeZone: zone)
                let schedule = try Schedule(composing: [element])
                for years in [3_600.0, 5_400.0] {
                    let from = start.addingTimeInterval(years * 365.25 * 86_400)
                    XCTAssertEqual(schedule.events(from: from, to: from.addingTimeInterval(3600)).count, 0, "\(name) \(minutes) min, \(years) years")
                }
                XCTAssertNil(schedule.event(occurrence: 1_700_000_000), "\(name) \(minutes) min")
                XCTAssertNil(schedule.eventStart(occurrence: Int.max))
                // A query that straddles the horizon stops at it.
                let before = OccurrenceAnchors.horizon.addingTimeInterval(-3600)
                let straddling = schedule.events(from: before, to: before.addingTimeInterval(1e9))
                XCTAssertFalse(straddling.isEmpty)
                XCTAssertTrue(straddling.allSatisfy { $0.start <= OccurrenceAnchors.horizon })
            }
        }
    }

    /// The fuzzer's second finding: an all-day element every 26,767 minutes in Santiago, asked about a day
    /// 30,000 years ahead, took seconds in the calendar's start-of-day before the horizon was looked at.
    func testAnAllDayQueryFarPastTheHorizonFindsNothing() throws {
        let zone = try XCTUnwrap(TimeZone(identifier: "America/Santiago"))
        let begin = Date(timeIntervalSince1970: 357_458_960)
        let element = try ScheduleElement(start: begin, end: nil, interval: DateComponents(minute: 26_767), duration: .allDay, timeZone: zone)
        let schedule = try Schedule(composing: [element])
        let from = begin.addingTimeInterval(955_617_024_000)
        XCTAssertEqual(schedule.events(from: from, to: from.addingTimeInterval(86_400)).count, 0)
        // The last day before the horizon still has its event.
        let lastDays = OccurrenceAnchors.horizon.addingTimeInterval(-40 * 86_400)
        XCTAssertFalse(schedule.events(from: lastDays, to: OccurrenceAnchors.horizon.addingTimeInterval(86_400)).isEmpty)
    }

    func testQueriesBeforeTheHorizonStillAnswerCorrectlyFarAhead() throws {
        for name in Self.zones {
            let zone = try XCTUnwrap(TimeZone(identifier: name))
            let quarterHourly = try ScheduleElement(start: start, end: nil, interval: DateComponents(minute: 15), duration: .minutes(1), timeZone: zone)
            let from = start.addingTimeInterval(1_900 * 365.25 * 86_400)
            let events = try Schedule(composing: [quarterHourly]).events(from: from, to: from.addingTimeInterval(3600))
            XCTAssertEqual(events.count, 4, name)
            XCTAssertEqual(events.first?.occurrence, Int((from.timeIntervalSince(start) / 900).rounded(.up)), name)
            // Daily at the start's wall-clock time, with every DST change of the zone on the way.
            let daily = try ScheduleElement(start: start, end: nil, interval: DateComponents(day: 1), duration: .minutes(30), timeZone: zone)
            let week = try Schedule(composing: [daily]).events(from: from, to: from.addingTimeInterval(7 * 86_400))
            XCTAssertEqual(week.count, 7, name)
            let first = try XCTUnwrap(week.first)
            XCTAssertEqual(try Schedule(composing: [daily]).eventStart(occurrence: first.occurrence), first.start, name)
        }
    }
}
