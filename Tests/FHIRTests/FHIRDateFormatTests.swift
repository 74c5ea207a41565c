import Foundation
import FHIRCore
import XCTest

/// FHIRDateFormat writes a FHIR dateTime by civil arithmetic: the same text as Foundation's Gregorian
/// calendar gives, in zones with whole-hour, half-hour and quarter-hour offsets, across DST changes, and
/// with or without milliseconds.
final class FHIRDateFormatTests: XCTestCase {
    /// The dateTime as Calendar.dateComponents spells it (the way FHIRDateFormat wrote it before).
    private func reference(_ date: Date, in zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .nanosecond], from: date)
        let milliseconds = Int((Double(parts.nanosecond ?? 0) / 1_000_000).rounded())
        var text = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0,
                          parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0)
        if milliseconds > 0, milliseconds < 1000 { text += String(format: ".%03d", milliseconds) }
        let offset = zone.secondsFromGMT(for: date)
        if offset == 0 { return text + "Z" }
        let minutes = abs(offset) / 60
        return text + String(format: "%@%02d:%02d", offset < 0 ? "-" : "+", minutes / 60, minutes % 60)
    }

    func testSameTextAsTheGregorianCalendar() throws {
        let zones = ["UTC", "America/Chicago", "Asia/Kolkata", "Pacific/Chatham", "America/St_Johns", "Australia/Lord_Howe"]
            .compactMap(TimeZone.init(identifier:))
        XCTAssertEqual(zones.count, 6)
        // Every 7,919 seconds (a prime, so every hour and minute comes round) over four years around
        // 2024, a leap year, with a millisecond part on every other step.
        let start = Date(timeIntervalSince1970: 1_640_000_000)
        for step in 0..<16_000 {
            let milliseconds = step % 2 == 0 ? 0 : Double(step % 997) / 1000
            let date = start.addingTimeInterval(Double(step) * 7_919 + milliseconds)
            for zone in zones {
                XCTAssertEqual(FHIRDateFormat.dateTime(date, in: zone), reference(date, in: zone), "\(date) in \(zone.identifier)")
            }
        }
        // Before 1970, and an instant.
        let early = Date(timeIntervalSince1970: -1_000_000_000.25)
        XCTAssertEqual(FHIRDateFormat.dateTime(early, in: zones[1]), reference(early, in: zones[1]))
        XCTAssertEqual(FHIRDateFormat.instant(Date(timeIntervalSince1970: 0)), "1970-01-01T00:00:00Z")
    }
}
