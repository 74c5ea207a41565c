import FHIR
import Foundation
import XCTest
@testable import Mapping

/// `MappingOptions.startOfDay(number:)` computes most day starts by arithmetic (`DayStartArithmetic`)
/// and remembers them: its answers must be those of Foundation's calendar, day for day, in zones with
/// daylight saving at midnight, half-hour saving, historical offsets and a day that was skipped.
final class DayStartTests: XCTestCase {
    private let zones = [
        "UTC", "America/New_York", "Europe/Paris", "America/Sao_Paulo", "Australia/Lord_Howe", "Asia/Kolkata",
        "Pacific/Apia", "America/Havana", "Asia/Tehran", "Africa/Casablanca",
    ]

    /// The calendar's start of day `number` from the zone's 1900-01-01, as the options computed it before.
    private func calendarStart(_ number: Int, in zone: TimeZone) -> Date? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        guard let epoch = calendar.date(from: DateComponents(year: 1900, month: 1, day: 1)) else { return nil }
        return calendar.date(byAdding: .day, value: number, to: epoch).map { calendar.startOfDay(for: $0) }
    }

    func testEveryDayStartIsTheCalendars() throws {
        for name in zones {
            let zone = try XCTUnwrap(TimeZone(identifier: name), name)
            let options = MappingOptions(timeZone: zone)
            // Every day of 1900-1902, 2010-2013 (Apia skipped 2011-12-30) and 2024-2027, and every 13th
            // day from 1900 to 2040.
            let days = Array(0..<(3 * 366)) + Array(stride(from: 0, to: 140 * 366, by: 13))
                + Array((110 * 365)..<(114 * 366)) + Array((124 * 365)..<(128 * 366))
            for day in days {
                XCTAssertEqual(options.startOfDay(number: day), calendarStart(day, in: zone), "\(name) day \(day)")
            }
            // Asked again, the remembered answer is the same.
            for day in days.prefix(50) {
                XCTAssertEqual(options.startOfDay(number: day), calendarStart(day, in: zone), "\(name) day \(day), again")
            }
        }
    }

    /// Zones of one offset for ever (UTC, GMT, `TimeZone(secondsFromGMT:)`'s `GMT+hhmm`) take their day
    /// starts by arithmetic without the zone: the calendar's, day for day, inside the range and out.
    func testFixedZonesDayStartsAreTheCalendars() throws {
        let zones = try ["UTC", "GMT", "Etc/UTC"].map { try XCTUnwrap(TimeZone(identifier: $0), $0) }
            + [19_800, -12_600, 50_400].map { try XCTUnwrap(TimeZone(secondsFromGMT: $0)) }
        for zone in zones {
            let options = MappingOptions(timeZone: zone)
            for day in Array(stride(from: 0, to: 200_000, by: 997)) + [1, 45_000, 200_000, -1, -400, 200_001] {
                XCTAssertEqual(options.startOfDay(number: day), calendarStart(day, in: zone), "\(zone.identifier) day \(day)")
            }
        }
        XCTAssertNotNil(DayStartArithmetic.FixedZone(zone: try XCTUnwrap(TimeZone(secondsFromGMT: 19_800)), epoch: Date()))
        XCTAssertNil(DayStartArithmetic.FixedZone(zone: try XCTUnwrap(TimeZone(identifier: "Europe/Paris")), epoch: Date()))
    }

    func testDaysOutsideTheArithmeticsRangeAreTheCalendars() throws {
        let zone = try XCTUnwrap(TimeZone(identifier: "Europe/Paris"))
        let options = MappingOptions(timeZone: zone)
        for day in [-1, -400, 200_001, 250_000] {
            XCTAssertNil(DayStartArithmetic.start(ofDay: day, epoch: options.epoch, zone: zone))
            XCTAssertEqual(options.startOfDay(number: day), calendarStart(day, in: zone), "day \(day)")
        }
    }

    func testChangingTheZoneForgetsTheDaysOfTheOldOne() throws {
        var options = MappingOptions(timeZone: try XCTUnwrap(TimeZone(identifier: "UTC")))
        let utc = options.startOfDay(number: 40_000)
        options.timeZone = try XCTUnwrap(TimeZone(identifier: "America/New_York"))
        XCTAssertEqual(options.startOfDay(number: 40_000), calendarStart(40_000, in: options.timeZone))
        XCTAssertNotEqual(options.startOfDay(number: 40_000), utc)
    }

    /// `isoDay(number:)` writes its digits by hand: the same text as `String(format:)` wrote, for years of
    /// one to four digits and, through `String(format:)` still, those outside them.
    func testISODayIsWhatStringFormatWrote() throws {
        let options = MappingOptions(timeZone: try XCTUnwrap(TimeZone(identifier: "UTC")))
        let days = Array(-700_000..<(-690_000)) + Array(stride(from: -694_000, to: 3_000_000, by: 997)) + Array(0..<800)
            + [-693_961, -693_960, -693_595, 2_958_000, 2_958_465, 2_958_466, 3_000_000]
        for day in days {
            let (year, month, dayOfMonth) = CivilCalendar.date(days: CivilCalendar.days(year: 1900, month: 1, day: 1) + day)
            XCTAssertEqual(options.isoDay(number: day), String(format: "%04d-%02d-%02d", year, month, dayOfMonth), "day \(day)")
        }
        XCTAssertEqual(options.isoDay(number: 0), "1900-01-01")
    }
}
