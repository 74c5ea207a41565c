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

/// CareKit's algorithm written the slow, obvious way: every occurrence of every element from its start,
/// all sorted by (start, element order), numbered, then filtered by the query rule. The fast
/// implementation must agree with it.
enum ReferenceEvents {
    static func events(of schedule: Schedule, from: Date, to: Date) -> [(start: Date, end: Date, occurrence: Int)] {
        var all: [(start: Date, end: Date, element: Int)] = []
        for (index, element) in schedule.elements.enumerated() {
            var n = 0
            while let start = element.startOfOccurrence(n), start < to {
                if let end = element.end, start >= end { break }
                all.append((start, element.endOfEvent(startingAt: start), index))
                n += 1
            }
        }
        all.sort { ($0.start, $0.element) < ($1.start, $1.element) }
        return all.enumerated()
            .filter { $0.element.start >= from || $0.element.end > from }
            .map { ($0.element.start, $0.element.end, $0.offset) }
    }
}

extension XCTestCase {
    /// Asserts that `schedule.events(from:to:)` equals the brute-force reference.
    func assertMatchesReference(_ schedule: Schedule, from: Date, to: Date, file: StaticString = #filePath, line: UInt = #line) {
        let fast = schedule.events(from: from, to: to).map { "\($0.occurrence)@\($0.start.timeIntervalSince1970)-\($0.end.timeIntervalSince1970)" }
        let slow = ReferenceEvents.events(of: schedule, from: from, to: to).map { "\($0.occurrence)@\($0.start.timeIntervalSince1970)-\($0.end.timeIntervalSince1970)" }
        XCTAssertEqual(fast, slow, "events from \(Clock.text(from)) to \(Clock.text(to))", file: file, line: line)
    }
}
