import CareModel
import FHIR
import Foundation
import XCTest
@testable import Mapping

/// Timing -> schedule through the default CarePlan mapping: the hard cases the issue names, and the
/// Timings that cannot be schedules.
final class TimingScheduleTests: XCTestCase {
    private let chicago = TimeZone(identifier: "America/Chicago")!

    /// Maps a CarePlan (period from 2025-03-03) whose one activity has `timing` as its scheduledTiming.
    private func map(timing: String, zone: TimeZone? = nil, planStart: String = "2025-03-03") throws -> MappedResource {
        let json = """
            {"resourceType":"CarePlan","id":"cp","status":"active","intent":"plan","subject":{"reference":"Patient/p"},
             "period":{"start":"\(planStart)"},
             "activity":[{"detail":{"status":"scheduled","code":{"text":"Take it"},"scheduledTiming":\(timing)}}]}
            """
        let resource = try FHIRJSON.read(Data(json.utf8))
        var builder = ResourceIndex.Builder()
        let key = try XCTUnwrap(builder.add(resource, fullUrl: nil))
        let engine = MappingEngine(mappings: try MappingSet.defaults(), options: MappingOptions(timeZone: zone ?? chicago))
        return engine.map(resource, key: key, index: builder.build())
    }

    private func schedule(_ timing: String, zone: TimeZone? = nil) throws -> Schedule {
        let mapped = try map(timing: timing, zone: zone)
        guard case .mapped(let entities, _) = mapped.result else { throw XCTSkip("not mapped: \(mapped.result)") }
        for case .task(let task) in entities { return task.schedule }
        throw XCTSkip("no task")
    }

    /// Local "yyyy-MM-dd HH:mm" of each event start in [from, from + days).
    private func starts(_ schedule: Schedule, from day: String, days: Int, zone: TimeZone? = nil) -> [String] {
        let zone = zone ?? chicago
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let formatter = DateFormatter()
        formatter.timeZone = zone
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        formatter.locale = Locale(identifier: "en_US_POSIX")
        let start = formatter.date(from: day + " 00:00")!
        let end = calendar.date(byAdding: .day, value: days, to: start)!
        return schedule.events(from: start, to: end).map { formatter.string(from: $0.start) }
    }

    func testThreeTimesADaySpreadsOverTheWakingHours() throws {
        let schedule = try schedule(#"{"repeat":{"frequency":3,"period":1,"periodUnit":"d"}}"#)
        XCTAssertEqual(starts(schedule, from: "2025-03-04", days: 1), ["2025-03-04 08:00", "2025-03-04 14:00", "2025-03-04 20:00"])
    }

    func testEveryEightHours() throws {
        let schedule = try schedule(#"{"repeat":{"frequency":1,"period":8,"periodUnit":"h"}}"#)
        XCTAssertEqual(starts(schedule, from: "2025-03-04", days: 1), ["2025-03-04 00:00", "2025-03-04 08:00", "2025-03-04 16:00"])
    }

    func testMondayWednesdayFridayAtNine() throws {
        let schedule = try schedule(#"{"repeat":{"frequency":1,"period":1,"periodUnit":"wk","dayOfWeek":["mon","wed","fri"],"timeOfDay":["09:00:00"]}}"#)
        XCTAssertEqual(starts(schedule, from: "2025-03-03", days: 7), ["2025-03-03 09:00", "2025-03-05 09:00", "2025-03-07 09:00"])
    }

    func testBoundedByCount() throws {
        let schedule = try schedule(#"{"repeat":{"count":5,"frequency":2,"period":1,"periodUnit":"d","timeOfDay":["08:00:00","20:00:00"]}}"#)
        XCTAssertEqual(starts(schedule, from: "2025-03-01", days: 10),
                       ["2025-03-03 08:00", "2025-03-03 20:00", "2025-03-04 08:00", "2025-03-04 20:00", "2025-03-05 08:00"])
    }

    func testBoundedByAPeriod() throws {
        let schedule = try schedule(#"{"repeat":{"boundsPeriod":{"start":"2025-03-10","end":"2025-03-12"},"frequency":1,"period":1,"periodUnit":"d","timeOfDay":["07:30:00"]}}"#)
        XCTAssertEqual(starts(schedule, from: "2025-03-01", days: 20), ["2025-03-10 07:30", "2025-03-11 07:30", "2025-03-12 07:30"])
    }

    func testAPeriodEndWithoutATimeIncludesEverythingItsPrecisionCovers() throws {
        let bounded = try schedule(#"{"repeat":{"boundsPeriod":{"start":"2025-03-10","end":"2025-03"},"frequency":1,"period":1,"periodUnit":"d","timeOfDay":["07:30:00"]}}"#)
        XCTAssertEqual(starts(bounded, from: "2025-03-29", days: 5), ["2025-03-29 07:30", "2025-03-30 07:30", "2025-03-31 07:30"],
                       "an end of 2025-03 includes the whole of March")
        XCTAssertEqual(FHIRDates.periodEnd("2025-06-30", in: chicago), FHIRDateText.date("2025-07-01", in: chicago))
        XCTAssertEqual(FHIRDates.periodEnd("2025", in: chicago), FHIRDateText.date("2026-01-01", in: chicago))
        XCTAssertEqual(FHIRDates.periodEnd("2025-06-30T12:00:00Z", in: chicago), FHIRDateText.date("2025-06-30T12:00:00Z", in: chicago))
    }

    func testEventsWithARepeatAreItsOccurrencesFromTheFirstEvent() throws {
        let mapped = try map(timing: #"{"event":["2025-03-12T09:00:00-05:00"],"repeat":{"frequency":1,"period":1,"periodUnit":"d","timeOfDay":["09:00:00"]}}"#)
        guard case .mapped(let entities, _) = mapped.result else { return XCTFail("not mapped: \(mapped.result)") }
        let schedule = try XCTUnwrap(entities.compactMap { entity -> Schedule? in if case .task(let task) = entity { task.schedule } else { nil } }.first)
        XCTAssertEqual(starts(schedule, from: "2025-03-10", days: 5), ["2025-03-12 09:00", "2025-03-13 09:00", "2025-03-14 09:00"],
                       "the repeat starts at the event, and the event is not a second occurrence")
        XCTAssertFalse(mapped.notes.contains { $0.severity == .warning }, "\(mapped.notes)")
    }

    func testTimesOfDayWithoutAFrequencyAreNotAWarning() throws {
        let mapped = try map(timing: #"{"repeat":{"timeOfDay":["08:00:00","20:00:00"]}}"#)
        XCTAssertFalse(mapped.notes.contains { $0.severity == .warning }, "\(mapped.notes)")
    }

    func testBoundedByADuration() throws {
        let schedule = try schedule(#"{"repeat":{"boundsDuration":{"value":3,"unit":"days","system":"http://unitsofmeasure.org","code":"d"},"frequency":1,"period":1,"periodUnit":"d","timeOfDay":["10:00:00"]}}"#)
        XCTAssertEqual(starts(schedule, from: "2025-03-01", days: 20), ["2025-03-03 10:00", "2025-03-04 10:00", "2025-03-05 10:00"])
    }

    func testNoTimingIsAssumedDailyAllDayAndReported() throws {
        let mapped = try map(timing: "{}")
        guard case .mapped(let entities, _) = mapped.result, case .task(let task)? = entities.last else { return XCTFail("\(mapped.result)") }
        XCTAssertEqual(task.schedule.elements.first?.duration, .allDay)
        XCTAssertEqual(starts(task.schedule, from: "2025-03-04", days: 2), ["2025-03-04 00:00", "2025-03-05 00:00"])
        XCTAssertTrue(mapped.notes.contains { $0.message.contains("assumed daily, all day") }, "\(mapped.notes)")
    }

    func testTimesOfDayKeepWallClockTimeAcrossDST() throws {
        // US daylight saving time starts on 2025-03-09.
        let schedule = try schedule(#"{"repeat":{"frequency":1,"period":1,"periodUnit":"d","timeOfDay":["08:00:00"]}}"#)
        XCTAssertEqual(starts(schedule, from: "2025-03-08", days: 3), ["2025-03-08 08:00", "2025-03-09 08:00", "2025-03-10 08:00"])
        XCTAssertEqual(schedule.elements.first?.timeZone.identifier, "America/Chicago")
    }

    func testEventTimesAreSingleOccurrences() throws {
        let schedule = try schedule(#"{"event":["2025-03-04T09:00:00-06:00","2025-03-06T15:00:00-06:00"]}"#)
        XCTAssertEqual(starts(schedule, from: "2025-03-01", days: 10), ["2025-03-04 09:00", "2025-03-06 15:00"])
    }

    func testCodedTimingWithoutRepeatUsesItsFrequency() throws {
        let schedule = try schedule(#"{"code":{"coding":[{"system":"http://terminology.hl7.org/CodeSystem/v3-GTSAbbreviation","code":"BID"}]}}"#)
        XCTAssertEqual(starts(schedule, from: "2025-03-04", days: 1), ["2025-03-04 08:00", "2025-03-04 20:00"])
    }

    func testWhenIsKeptAsText() throws {
        let mapped = try map(timing: #"{"repeat":{"frequency":1,"period":1,"periodUnit":"d","when":["ACM"],"offset":30}}"#)
        guard case .mapped(let entities, _) = mapped.result, case .task(let task)? = entities.last else { return XCTFail("\(mapped.result)") }
        XCTAssertEqual(task.schedule.elements.first?.text, "30 min before breakfast")
    }

    func testFrequencyMaxIsAWarningNotASilentApproximation() throws {
        let mapped = try map(timing: #"{"repeat":{"frequency":1,"frequencyMax":3,"period":1,"periodUnit":"d"}}"#)
        XCTAssertTrue(mapped.notes.contains { $0.severity == .warning && $0.path.hasSuffix("repeat.frequencyMax") }, "\(mapped.notes)")
    }

    func testPeriodZeroFailsWithItsLocation() throws {
        let mapped = try map(timing: #"{"repeat":{"frequency":1,"period":0,"periodUnit":"d"}}"#)
        guard case .failed(let failure) = mapped.result else { return XCTFail("\(mapped.result)") }
        XCTAssertEqual(failure.path, "CarePlan.activity[0].detail.scheduledTiming.repeat.period")
        XCTAssertTrue(failure.message.contains("greater than 0"), failure.message)
    }

    func testNegativeCountFailsWithItsLocation() throws {
        let mapped = try map(timing: #"{"repeat":{"count":-2,"frequency":1,"period":1,"periodUnit":"d"}}"#)
        guard case .failed(let failure) = mapped.result else { return XCTFail("\(mapped.result)") }
        XCTAssertEqual(failure.path, "CarePlan.activity[0].detail.scheduledTiming.repeat.count")
    }

    /// Numbers a schedule cannot represent fail the one resource with their place and the bound, never a
    /// crash (a period of 1e12 years once brought the whole import down).
    func testNumbersOutsideWhatAScheduleRepresentsFailWithTheirPlace() throws {
        let cases: [(String, String, String)] = [
            (#"{"repeat":{"frequency":1,"period":1e12,"periodUnit":"a"}}"#, "repeat.period", "longer than the 100 years"),
            (#"{"repeat":{"frequency":1,"period":99999999999,"periodUnit":"h"}}"#, "repeat.period", "longer than the 100 years"),
            (#"{"repeat":{"frequency":1000,"period":1,"periodUnit":"s"}}"#, "repeat.frequency", "more often than once a second"),
            (#"{"repeat":{"frequency":1e9,"period":1,"periodUnit":"a"}}"#, "repeat.frequency", "more than the 10000 events"),
            (#"{"repeat":{"count":1e15,"frequency":1,"period":1,"periodUnit":"d"}}"#, "repeat.count", "more than the 1000000 occurrences"),
            (#"{"repeat":{"frequency":1,"period":1,"periodUnit":"d","duration":1e300,"durationUnit":"h"}}"#, "repeat.duration", "longer than the 100 years"),
            (#"{"repeat":{"frequency":1,"period":1,"periodUnit":"d","boundsDuration":{"value":1e20,"code":"a"}}}"#, "repeat.boundsDuration.value", "longer than the 100 years"),
        ]
        for (timing, place, message) in cases {
            let mapped = try map(timing: timing)
            guard case .failed(let failure) = mapped.result else { XCTFail("\(timing): \(mapped.result)"); continue }
            XCTAssertEqual(failure.path, "CarePlan.activity[0].detail.scheduledTiming." + place, timing)
            XCTAssertTrue(failure.message.contains(message), "\(timing): \(failure.message)")
        }
        // The largest of each that is still a schedule maps.
        XCTAssertNoThrow(try schedule(#"{"repeat":{"frequency":1,"period":100,"periodUnit":"a"}}"#))
        XCTAssertNoThrow(try schedule(#"{"repeat":{"frequency":1440,"period":1,"periodUnit":"d","count":3}}"#))
    }

    func testDatesAgreeWithFoundationsCalendar() throws {
        // The arithmetic the importer uses on every Observation time, checked against Calendar across
        // DST changes, leap days, offsets and partial dates.
        let zone = try XCTUnwrap(TimeZone(identifier: "America/Chicago"))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let texts = ["2024-02-29", "2024-03", "2023", "2024-03-10T01:30:00", "2024-03-10T03:30:00", "2024-11-03T00:59:59",
                     "2024-07-04T12:00:00.250", "1969-12-31T23:59:59Z", "2024-03-10T02:30:00-06:00", "2000-01-01T00:00:00+14:00"]
        for text in texts {
            let date = try XCTUnwrap(FHIRDateText.date(text, in: zone), text)
            let parts = text.split(separator: "T")
            if parts.count == 1 || !(text.hasSuffix("Z") || text.dropFirst(19).contains("+") || text.dropFirst(19).contains("-")) {
                var components = DateComponents(year: Int(text.prefix(4)), month: 1, day: 1, hour: 0, minute: 0, second: 0)
                let numbers = text.split(whereSeparator: { "-T:.".contains($0) }).compactMap { Int($0) }
                if numbers.count > 1 { components.month = numbers[1] }
                if numbers.count > 2 { components.day = numbers[2] }
                if numbers.count > 5 { (components.hour, components.minute, components.second) = (numbers[3], numbers[4], numbers[5]) }
                let expected = try XCTUnwrap(calendar.date(from: components))
                XCTAssertEqual(date.timeIntervalSince1970.rounded(.down), expected.timeIntervalSince1970, text)
            }
        }
        XCTAssertEqual(FHIRDateText.date("1969-12-31T23:59:59Z", in: zone)?.timeIntervalSince1970, -1)
        XCTAssertEqual(FHIRDateText.date("2000-01-01T00:00:00+14:00", in: zone)?.timeIntervalSince1970, 946_634_400)
        XCTAssertEqual(FHIRDateText.date("2024-07-04T12:00:00.250Z", in: zone)?.timeIntervalSince1970, 1_720_094_400.25)
        for bad in ["2025-02-30", "2023-02-29", "2024-04-31", "2024-13-01", "2024-01-01T25:00:00Z", "2024-01-01T10:60"] {
            XCTAssertNil(FHIRDateText.date(bad, in: zone), bad)
        }
    }

    func testDayIndexCountsCalendarDaysInTheZone() throws {
        let zone = try XCTUnwrap(TimeZone(identifier: "America/Chicago"))
        let start = try XCTUnwrap(FHIRDateText.date("2024-03-09", in: zone))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        for hours in stride(from: 0, to: 24 * 400, by: 7) {
            let time = start.addingTimeInterval(Double(hours) * 3600)
            let expected = calendar.dateComponents([.day], from: calendar.startOfDay(for: start), to: calendar.startOfDay(for: time)).day
            XCTAssertEqual(FHIRDates.dayIndex(of: time, from: start, in: zone), expected, "\(time)")
        }
        XCTAssertNil(FHIRDates.dayIndex(of: start.addingTimeInterval(-1), from: start, in: zone))
    }
}
