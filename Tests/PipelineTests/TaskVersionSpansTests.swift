import CareModel
import Foundation
import Mapping
@testable import Pipeline
import XCTest

/// ``TaskVersionSpans``: the versions that cut a long-running task keep its events, each holding a
/// bounded number of them.
final class TaskVersionSpansTests: XCTestCase {
    private let zone = TimeZone(identifier: "Europe/Paris")!
    private var options: MappingOptions { MappingOptions(timeZone: zone) }

    /// A task since 2000-01-01: once a day at 08:00, and every 8 hours from 2010-03-01.
    private func task() throws -> CareTask {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let daily = try ScheduleElement(
            start: XCTUnwrap(calendar.date(from: DateComponents(year: 2000, month: 1, day: 1, hour: 8))), end: nil,
            interval: DateComponents(day: 1), duration: .seconds(600), timeZone: zone)
        let often = try ScheduleElement(
            start: XCTUnwrap(calendar.date(from: DateComponents(year: 2010, month: 3, day: 1, hour: 6))), end: nil,
            interval: DateComponents(hour: 8), duration: .seconds(600), timeZone: zone)
        return CareTask(id: "t", title: "t", schedule: try Schedule(composing: [daily, often]),
                        metadata: EntityMetadata(effectiveDate: daily.start, timezone: zone))
    }

    /// The event starts of the version chain `chain` over `interval`, each from the version in effect.
    private func starts(_ chain: [CareTask], in interval: DateInterval) -> [Date] {
        var result: [Date] = []
        for (position, version) in chain.enumerated() {
            let from = max(version.metadata.effectiveDate, interval.start)
            let to = min(position + 1 < chain.count ? chain[position + 1].metadata.effectiveDate : interval.end, interval.end)
            guard from < to else { continue }
            result += version.schedule.events(from: from, to: to).map(\.start).filter { $0 >= from }
        }
        return result
    }

    func testEveryVersionHoldsAtMostTheBoundAndTheChainKeepsEveryEvent() throws {
        let task = try task()
        let today = try XCTUnwrap(options.dayNumber(of: Date()))
        let versions = TaskVersionSpans.versions(after: task, notBefore: 0, today: today, options: options)
        let chain = [task] + versions
        XCTAssertGreaterThan(versions.count, 20)
        let todayEnd = try XCTUnwrap(options.startOfDay(number: today + 1))
        for (position, version) in chain.enumerated() {
            let next = position + 1 < chain.count ? chain[position + 1].metadata.effectiveDate : todayEnd
            XCTAssertLessThanOrEqual(TaskVersionSpans.steps(version, before: next), TaskVersionSpans.maximumEvents, "version \(position)")
            if position > 0 {
                XCTAssertEqual(version.metadata.previousVersionUUIDs, [chain[position - 1].uuid])
                XCTAssertGreaterThan(version.metadata.effectiveDate, chain[position - 1].metadata.effectiveDate)
            }
        }
        // The same events as the one schedule, on every sampled stretch, across the cuts.
        for year in [2000, 2005, 2010, 2015, 2020, 2024] {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            let start = try XCTUnwrap(calendar.date(from: DateComponents(year: year, month: 1, day: 1)))
            let interval = DateInterval(start: start, duration: 400 * 86_400)
            XCTAssertEqual(starts(chain, in: interval), starts([task], in: interval), "\(year)")
        }
    }

    func testNoVersionBeforeTheDayAfterTheLastOutcomeNorForAShortTask() throws {
        let task = try task()
        let today = try XCTUnwrap(options.dayNumber(of: Date()))
        let notBefore = today - 100
        let versions = TaskVersionSpans.versions(after: task, notBefore: notBefore, today: today, options: options)
        // The first cut is the first day allowed (the task's own days before it cost what they cost); a
        // hundred days of four events hold more than the bound: a second version.
        XCTAssertEqual(versions.count, 2)
        XCTAssertEqual(try options.dayNumber(of: XCTUnwrap(versions.first).metadata.effectiveDate), notBefore)
        // A task cut already costs little today: nothing more.
        XCTAssertEqual(TaskVersionSpans.versions(after: try XCTUnwrap(versions.last), notBefore: 0, today: today, options: options).count, 0)
    }
}
