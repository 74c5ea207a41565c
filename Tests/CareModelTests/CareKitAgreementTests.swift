import Foundation
import XCTest
@testable import CareModel

/// The fast occurrence arithmetic against CareKit's step-by-step algorithm (``ReferenceEvents``) over many
/// schedules whose steps clamp or land in DST gaps, queried on single days years after their start: the
/// transition days themselves, the days around them and month ends.
final class CareKitAgreementTests: XCTestCase {
    private static let newYork = Clock.newYork
    private static let sydney = TimeZone(identifier: "Australia/Sydney") ?? .gmt
    /// Chile moves its clocks at midnight, so some days start at 01:00.
    private static let santiago = TimeZone(identifier: "America/Santiago") ?? .gmt
    /// Lord Howe Island moves its clocks by half an hour.
    private static let lordHowe = TimeZone(identifier: "Australia/Lord_Howe") ?? .gmt
    private static let zones = [newYork, sydney, santiago, lordHowe]
    private static let limit = Clock.date(2033, 1, 1, in: .gmt)

    private struct Case {
        let name: String
        let element: ScheduleElement
    }

    /// Elements starting 2024–2025 at wall-clock times that fall in DST gaps, on days that clamp, all day.
    private func cases(in zone: TimeZone) throws -> [Case] {
        func at(_ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0) -> Date {
            Clock.date(year, month, day, hour, minute, in: zone)
        }
        func element(_ name: String, _ start: Date, _ interval: DateComponents, _ duration: ScheduleElement.Duration = .hours(1),
                     end: Date? = nil) throws -> Case {
            Case(name: name, element: try ScheduleElement(start: start, end: end, interval: interval, duration: duration, timeZone: zone))
        }
        var cases: [Case] = []
        for (hour, minute) in [(2, 30), (2, 15), (0, 30), (3, 0), (9, 0)] {
            let time = "\(hour):\(minute)"
            cases.append(try element("daily \(time)", at(2024, 1, 3, hour, minute), DateComponents(day: 1)))
            cases.append(try element("every 2 days \(time)", at(2024, 1, 4, hour, minute), DateComponents(day: 2)))
            cases.append(try element("every 3 days \(time)", at(2024, 2, 4, hour, minute), DateComponents(day: 3)))
            for weekday in 0..<7 {
                cases.append(try element("weekly \(time) +\(weekday)", at(2024, 1, 7 + weekday, hour, minute), DateComponents(weekOfYear: 1)))
            }
            cases.append(try element("weekly by weekOfMonth \(time)", at(2024, 1, 7, hour, minute), DateComponents(weekOfMonth: 1)))
            cases.append(try element("day+hour \(time)", at(2024, 1, 7, hour, minute), DateComponents(day: 1, hour: 1)))
            cases.append(try element("week+2h \(time)", at(2024, 1, 7, hour, minute), DateComponents(hour: 2, weekOfYear: 1)))
        }
        for day in [28, 29, 30, 31] {
            cases.append(try element("monthly \(day)th 09:00", at(2024, 1, day, 9), DateComponents(month: 1)))
            cases.append(try element("monthly \(day)th 02:30", at(2024, 1, day, 2, 30), DateComponents(month: 1)))
            cases.append(try element("monthly \(day)th 00:30", at(2024, 3, day, 0, 30), DateComponents(month: 1)))
            cases.append(try element("every 2 months \(day)th", at(2024, 3, day, 2, 30), DateComponents(month: 2)))
            cases.append(try element("all-day monthly \(day)th", at(2024, 1, day), DateComponents(month: 1), .allDay))
        }
        cases.append(try element("yearly Feb 29", at(2024, 2, 29, 12), DateComponents(year: 1)))
        cases.append(try element("yearly Feb 29 02:30", at(2024, 2, 29, 2, 30), DateComponents(year: 1)))
        cases.append(try element("yearly via 12 months Feb 29", at(2024, 2, 29, 2, 30), DateComponents(month: 12)))
        cases.append(try element("every 4 years Feb 29", at(2024, 2, 29, 2, 30), DateComponents(year: 4)))
        // Yearly on each day around the transitions of 2024, at a time inside the gap.
        for month in [3, 4, 9, 10, 11] {
            for day in 1...14 {
                cases.append(try element("yearly \(month)/\(day) 02:30", at(2024, month, day, 2, 30), DateComponents(year: 1)))
            }
        }
        cases.append(try element("hourly", at(2024, 1, 1, 0, 30), DateComponents(hour: 1), .minutes(10)))
        cases.append(try element("every 90 minutes", at(2024, 1, 1, 0, 45), DateComponents(minute: 90), .minutes(30)))
        cases.append(try element("every 25 hours", at(2024, 1, 1, 2, 30), DateComponents(hour: 25)))
        for (name, interval) in [("daily", DateComponents(day: 1)), ("every 3 days", DateComponents(day: 3)),
                                 ("weekly", DateComponents(weekOfYear: 1)), ("every 36 hours", DateComponents(hour: 36)),
                                 ("every 49 hours", DateComponents(hour: 49)), ("day+12h", DateComponents(day: 1, hour: 12))] {
            cases.append(try element("all-day \(name)", at(2024, 1, 5, 15), interval, .allDay))
        }
        cases.append(try element("month+2 days", at(2024, 1, 31, 2, 30), DateComponents(month: 1, day: 2)))
        cases.append(try element("year+month", at(2024, 1, 31, 2, 30), DateComponents(year: 1, month: 1)))
        cases.append(try element("month+1h", at(2024, 1, 31, 23, 30), DateComponents(month: 1, hour: 1)))
        cases.append(try element("daily with end", at(2024, 1, 3, 2, 30), DateComponents(day: 1), end: at(2031, 3, 20)))
        cases.append(try element("monthly with end", at(2024, 1, 31, 2, 30), DateComponents(month: 1), end: at(2030, 10, 2)))
        cases.append(try element("all-day with end", at(2024, 1, 31), DateComponents(day: 1), .allDay, end: at(2029, 4, 2, 12)))
        return cases
    }

    /// Days to query in `zone`: every transition day from 2026 on, the days around it, and month ends.
    private func queryDays(in zone: TimeZone) -> [Date] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        var days: [Date] = []
        var cursor = Clock.date(2026, 1, 1, in: zone)
        while let transition = zone.nextDaylightSavingTimeTransition(after: cursor), transition < Clock.date(2032, 6, 1, in: .gmt) {
            let day = calendar.startOfDay(for: transition)
            for offset in [-1, 0, 1, 2] {
                if let date = calendar.date(byAdding: .day, value: offset, to: day) { days.append(calendar.startOfDay(for: date)) }
            }
            cursor = transition
        }
        for year in [2026, 2028, 2031] {
            for (month, day) in [(1, 31), (2, 28), (2, 29), (3, 1), (3, 28), (3, 29), (3, 31), (4, 30), (9, 30), (12, 31)] {
                let date = Clock.date(year, month, day, in: zone)
                if calendar.component(.day, from: date) == day { days.append(date) }
            }
        }
        return days
    }

    func testOneDayQueriesYearsAfterTheStartAgreeWithCareKit() throws {
        var queries = 0
        var events = 0
        var elements = 0
        for zone in Self.zones {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            let days = queryDays(in: zone)
            for (number, item) in try cases(in: zone).enumerated() {
                let schedule = try Schedule(composing: [item.element])
                let reference = ReferenceEvents.Timeline(schedule, until: Self.limit)
                elements += 1
                // Half the elements are asked about the latest days first, so anchors are found out of order.
                let order = number % 2 == 0 ? days : days.reversed()
                for day in order {
                    let next = calendar.date(byAdding: .day, value: 1, to: day).map { calendar.startOfDay(for: $0) } ?? day
                    let fast = schedule.events(from: day, to: next).map { "\($0.occurrence)@\(Clock.text($0.start, in: zone))" }
                    let slow = reference.events(from: day, to: next).map { "\($0.occurrence)@\(Clock.text($0.start, in: zone))" }
                    XCTAssertEqual(fast, slow, "\(zone.identifier) \(item.name) on \(Clock.text(day, in: zone))")
                    queries += 1
                    events += slow.count
                }
                if let end = item.element.end {
                    XCTAssertEqual(item.element.occurrenceCount, reference.all.count, "\(zone.identifier) \(item.name) count")
                    XCTAssertLessThan(reference.all.last?.start ?? .distantPast, end)
                }
            }
        }
        print("CareKit agreement: \(elements) elements, \(queries) one-day queries, \(events) events")
        XCTAssertGreaterThan(events, 1000)
    }

    func testOccurrenceIndexLookupsAgreeWithCareKit() throws {
        var checked = 0
        for zone in Self.zones {
            for item in try cases(in: zone) {
                let reference = ReferenceEvents.starts(of: item.element, before: Self.limit)
                // A fresh element for each sample: every lookup starts without remembered anchors.
                let stride = max(1, reference.count / 7)
                for n in Swift.stride(from: reference.count - 1, through: 0, by: -stride) {
                    let element = try ScheduleElement(start: item.element.start, end: item.element.end, interval: item.element.interval,
                                                      duration: item.element.duration, timeZone: zone)
                    XCTAssertEqual(element.event(atLocalOccurrence: n)?.start, reference[n], "\(zone.identifier) \(item.name) #\(n)")
                    XCTAssertEqual(element.firstOccurrence(startingAtOrAfter: reference[n], strictlyAfter: false), n)
                    XCTAssertEqual(element.firstOccurrence(startingAtOrAfter: reference[n], strictlyAfter: true), n + 1)
                    checked += 1
                }
            }
        }
        print("CareKit agreement: \(checked) occurrence lookups")
    }

    /// In a zone whose offset never changes, days and weeks are stepped as elapsed time (no calendar
    /// call): the starts must still be CareKit's.
    func testConstantOffsetZonesAgreeWithCareKit() throws {
        let zones = [TimeZone.gmt, TimeZone(identifier: "UTC"), TimeZone(secondsFromGMT: 5 * 3600 + 1800)].compactMap { $0 }
        var checked = 0
        for zone in zones {
            for item in try cases(in: zone) {
                let reference = ReferenceEvents.starts(of: item.element, before: Self.limit)
                let stride = max(1, reference.count / 11)
                for n in Swift.stride(from: reference.count - 1, through: 0, by: -stride) {
                    XCTAssertEqual(item.element.event(atLocalOccurrence: n)?.start, reference[n], "\(zone.identifier) \(item.name) #\(n)")
                    XCTAssertEqual(item.element.firstOccurrence(startingAtOrAfter: reference[n], strictlyAfter: false), n)
                    XCTAssertEqual(item.element.firstOccurrence(startingAtOrAfter: reference[n], strictlyAfter: true), n + 1)
                    checked += 1
                }
            }
        }
        print("CareKit agreement in constant-offset zones: \(checked) occurrence lookups")
        XCTAssertGreaterThan(checked, 100)
    }

    func testSeveralElementsNumberedAcrossAgreeWithCareKit() throws {
        let zone = Self.newYork
        let schedule = try Schedule(composing: try cases(in: zone).filter {
            ["daily 2:30", "monthly 31th 02:30", "every 2 days 0:30", "all-day every 3 days", "yearly Feb 29"].contains($0.name)
        }.map(\.element))
        XCTAssertEqual(schedule.elements.count, 5)
        let reference = ReferenceEvents.Timeline(schedule, until: Clock.date(2031, 1, 1))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        for day in queryDays(in: zone) where day < Clock.date(2030, 12, 30) {
            let next = calendar.date(byAdding: .day, value: 1, to: day) ?? day
            let fast = schedule.events(from: day, to: next).map { "\($0.occurrence)@\(Clock.text($0.start))" }
            let slow = reference.events(from: day, to: next).map { "\($0.occurrence)@\(Clock.text($0.start))" }
            XCTAssertEqual(fast, slow, "on \(Clock.text(day))")
        }
        for n in Swift.stride(from: reference.all.count - 1, through: 0, by: -97) {
            XCTAssertEqual(schedule.event(occurrence: n)?.start, reference.all[n].start, "occurrence \(n)")
        }
    }

    func testConcurrentQueriesOfOneElementAgree() throws {
        // The anchors are found on demand and shared by copies of the element; queries from many threads at
        // once must still see CareKit's dates.
        let schedule = try Schedule.dailyAtTime(hour: 2, minutes: 30, start: Clock.date(2024, 1, 3), end: nil, text: nil,
                                                timeZone: Self.newYork)
        let reference = ReferenceEvents.Timeline(schedule, until: Clock.date(2033, 1, 1))
        let days = queryDays(in: Self.newYork)
        let expected = days.map { day in reference.events(from: day, to: day.addingTimeInterval(86_400)).map(\.start) }
        let mismatches = Mismatches()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for (position, day) in days.enumerated().reversed() where position % 8 != worker {
                let starts = schedule.events(from: day, to: day.addingTimeInterval(86_400)).map(\.start)
                if starts != expected[position] { mismatches.add() }
            }
        }
        XCTAssertEqual(mismatches.count, 0)
    }

    /// A thread-safe counter for the concurrent test.
    private final class Mismatches: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        var count: Int { lock.withLock { value } }
        func add() { lock.withLock { value += 1 } }
    }

    func testAllDayStepThatWouldStayOnALongDayMovesToTheNextDay() throws {
        // Antarctica/Troll moves its clocks by two hours, so its fall-back day lasts 26 hours: an all-day step of
        // 25 hours from its start stays on that day, where CareKit would loop forever. CareGate moves on.
        guard let troll = TimeZone(identifier: "Antarctica/Troll"),
              let transition = troll.nextDaylightSavingTimeTransition(after: Clock.date(2026, 9, 1, in: .gmt)),
              troll.secondsFromGMT(for: transition) < troll.secondsFromGMT(for: transition.addingTimeInterval(-1))
        else { throw XCTSkip("no Antarctica/Troll fall-back in this time zone database") }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = troll
        let longDay = calendar.startOfDay(for: transition)
        let start = calendar.date(byAdding: .day, value: -3, to: longDay) ?? longDay
        let element = try ScheduleElement(start: start, end: nil, interval: DateComponents(hour: 25), duration: .allDay, timeZone: troll)
        let days = (0..<6).compactMap { element.event(atLocalOccurrence: $0)?.start }
        XCTAssertEqual(days, (0..<6).compactMap { calendar.date(byAdding: .day, value: $0, to: start) })
    }
}
