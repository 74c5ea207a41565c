import Foundation
import XCTest
@testable import CareModel

/// `DayStarts` remembers the day starts all-day schedule elements normalise their starts to: its answers
/// are the calendar's, asked once or again, in zones whose days start at other hours or are skipped.
final class DayStartsTests: XCTestCase {
    func testDayStartsAreTheCalendarsAskedOnceOrAgain() throws {
        for name in ["UTC", "America/Sao_Paulo", "Asia/Tehran", "Pacific/Apia", "America/Havana", "Europe/Paris"] {
            let zone = try XCTUnwrap(TimeZone(identifier: name))
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            // Every 7 hours over 2010-2013 (Apia skipped 2011-12-30; Sao Paulo's and Havana's saving
            // started at midnight).
            let dates = stride(from: 1_262_304_000.0, to: 1_388_534_400.0, by: 7 * 3600).map(Date.init(timeIntervalSince1970:))
            for date in dates + dates.prefix(200) {
                XCTAssertEqual(DayStarts.start(of: date, in: calendar), calendar.startOfDay(for: date), "\(name) \(date)")
            }
        }
    }

    func testAnAllDayElementStartsAtItsDaysStart() throws {
        let zone = try XCTUnwrap(TimeZone(identifier: "America/Sao_Paulo"))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let start = Date(timeIntervalSince1970: 1_541_332_800)  // 2018-11-04 09:00 there: the day started at 01:00
        let element = try ScheduleElement(start: start, end: nil, interval: DateComponents(day: 1), duration: .allDay, timeZone: zone)
        XCTAssertEqual(element.start, calendar.startOfDay(for: start))
    }
}
