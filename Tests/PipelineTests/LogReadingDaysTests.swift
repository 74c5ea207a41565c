import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import XCTest

/// ``LogReadingDays``: the versions a log needs for readings on given days, and each day's occurrence.
final class LogReadingDaysTests: XCTestCase {
    private let zone = TimeZone(identifier: "America/Chicago")!
    private var options: MappingOptions { MappingOptions(timeZone: zone) }
    private var planner: LogReadingDays { LogReadingDays(options: options) }
    private let weight = LogReadingDays.NewLog(patientID: "Patient/p", logKey: "http://loinc.org|29463-7", title: "Body weight", timeZone: TimeZone(identifier: "America/Chicago")!)

    private func day(_ text: String) throws -> Int {
        try XCTUnwrap(options.dayNumber(of: XCTUnwrap(FHIRDateText.date(text, in: zone))))
    }

    /// The days of a version, as ISO dates.
    private func days(of version: CareTask) -> [String] {
        guard case .readings(let list) = LogReadingDays.days(of: version, options: options) else { return ["daily"] }
        return list.map(options.isoDay(number:))
    }

    private func newLog(_ days: [String]) throws -> CareTask {
        let plan = planner.plan(stored: [], newLog: weight, days: try days.map(day), today: 0)
        return try XCTUnwrap(plan.versions.first)
    }

    func testANewLogHasOneVersionFromItsFirstDayWithEveryDayAsked() throws {
        let plan = planner.plan(stored: [], newLog: weight, days: [try day("2024-03-05"), try day("2024-03-01"), try day("2024-03-05")], today: 0)
        XCTAssertEqual(plan.versions.count, 1)
        let log = try XCTUnwrap(plan.versions.first)
        XCTAssertEqual(log.id, "Patient/p#log-http---loinc.org-29463-7")
        XCTAssertTrue(log.isObservationLog)
        XCTAssertFalse(log.impactsAdherence)
        XCTAssertEqual(log.metadata.linkage.patientID, "Patient/p")
        XCTAssertEqual(log.metadata.effectiveDate, FHIRDateText.date("2024-03-01", in: zone))
        XCTAssertEqual(days(of: log), ["2024-03-01", "2024-03-05"])
        let fifth = try plan.result(ofDay: day("2024-03-05")).get()
        XCTAssertEqual(fifth.taskUUID, log.uuid)
        XCTAssertEqual(fifth.occurrence, 1)
        XCTAssertEqual(fifth.eventStart, FHIRDateText.date("2024-03-05", in: zone))
        // CareKit's numbering agrees: the union's second event is that day's.
        XCTAssertEqual(log.schedule.eventStart(occurrence: 1), fifth.eventStart)
        XCTAssertTrue(plan.refusals.isEmpty)
    }

    func testANewDayAfterTheTipsLastGetsANewVersionFromThatDayAndEarlierDaysStayOnTheirVersion() throws {
        let tip = try newLog(["2024-03-01", "2024-03-05"])
        let today = try day("2026-11-29")
        let plan = planner.plan(stored: [tip], newLog: nil, days: [try day("2024-03-05"), today, today + 2], today: today)
        let version = try XCTUnwrap(plan.versions.first)
        XCTAssertEqual(plan.versions.count, 1)
        XCTAssertEqual(version.id, tip.id)
        XCTAssertNotEqual(version.uuid, tip.uuid, "a new version, under its own uuid, so the batch's outcomes can name it")
        XCTAssertEqual(version.metadata.effectiveDate, FHIRDateText.date("2026-11-29", in: zone))
        XCTAssertEqual(days(of: version), ["2026-11-29", "2026-12-01"])
        XCTAssertEqual(try plan.result(ofDay: today).get().taskUUID, version.uuid)
        XCTAssertEqual(try plan.result(ofDay: today).get().occurrence, 0)
        XCTAssertEqual(try plan.result(ofDay: today + 2).get().occurrence, 1)
        let old = try plan.result(ofDay: day("2024-03-05")).get()
        XCTAssertEqual(old.taskUUID, tip.uuid)
        XCTAssertEqual(old.occurrence, 1)
        // The same days again, on the stored versions: nothing new to write, the same places.
        let again = planner.plan(stored: [tip, version], newLog: nil, days: [today, today + 2], today: today)
        XCTAssertTrue(again.versions.isEmpty)
        XCTAssertEqual(try again.result(ofDay: today + 2).get(), try plan.result(ofDay: today + 2).get())
    }

    func testADayBeforeTheTipsLastThatItsVersionLacksIsRefusedWithItsReason() throws {
        let tip = try newLog(["2024-03-01", "2024-03-05"])
        let plan = planner.plan(stored: [tip], newLog: nil, days: [try day("2024-03-03"), try day("2024-02-01")], today: 0)
        XCTAssertTrue(plan.versions.isEmpty)
        XCTAssertEqual(plan.refusals[try day("2024-03-03")],
                       .notAReadingDay(logID: tip.id, day: "2024-03-03", versionDays: "2024-03-01 to 2024-03-05"))
        XCTAssertEqual(plan.refusals[try day("2024-02-01")], .notAReadingDay(logID: tip.id, day: "2024-02-01", versionDays: "2024-03-01 to 2024-03-05"))
        XCTAssertFalse("\(plan.refusals[try day("2024-03-03")]!)".isEmpty)
    }

    func testADailyLogIsCutTheDayAfterItsLastOutcomeAndItsOldDaysKeepTheirOccurrence() throws {
        let start = try day("2020-01-01")
        let schedule = try Schedule(composing: [ScheduleElement(
            start: XCTUnwrap(options.startOfDay(number: start)), end: nil, interval: DateComponents(day: 1), duration: .allDay, timeZone: zone)])
        let daily = MappingEngine.logTask(patientID: "Patient/p", logKey: weight.logKey, title: "w", schedule: schedule,
                                          effectiveDate: try XCTUnwrap(options.startOfDay(number: start)), timeZone: zone)
        let last = try day("2020-01-31")
        let plan = planner.plan(stored: [daily], newLog: nil, days: [try day("2020-01-21"), try day("2020-03-01")], lastOutcomeDay: last, today: 0)
        let version = try XCTUnwrap(plan.versions.first)
        XCTAssertEqual(version.metadata.effectiveDate, FHIRDateText.date("2020-02-01", in: zone))
        XCTAssertEqual(days(of: version), ["2020-03-01"])
        XCTAssertEqual(try plan.result(ofDay: day("2020-01-21")).get(), LogReadingDays.Placement(
            day: try day("2020-01-21"), taskID: daily.id, taskUUID: daily.uuid, occurrence: 20, eventStart: try XCTUnwrap(FHIRDateText.date("2020-01-21", in: zone))))
        XCTAssertEqual(try plan.result(ofDay: day("2020-03-01")).get().taskUUID, version.uuid)
        // With no day asked, it is cut all the same: its one element the day before, never shown.
        let bare = planner.plan(stored: [daily], newLog: nil, days: [], lastOutcomeDay: last, today: 0)
        XCTAssertEqual(try XCTUnwrap(bare.versions.first).metadata.effectiveDate, FHIRDateText.date("2020-02-01", in: zone))
        XCTAssertEqual(days(of: try XCTUnwrap(bare.versions.first)), ["2020-01-31"])
    }

    func testNoLogADeletedLogAndADayOutOfReachAreRefused() throws {
        XCTAssertEqual(planner.plan(stored: [], newLog: nil, days: [100], today: 0).refusals[100], .noLog(logID: nil))
        var tombstone = try newLog(["2024-03-01"])
        tombstone.metadata.deletedDate = Date()
        XCTAssertEqual(planner.plan(stored: [tombstone], newLog: nil, days: [try day("2025-01-01")], today: 0).refusals[try day("2025-01-01")],
                       .deleted(logID: tombstone.id))
        let far = planner.plan(stored: [], newLog: weight, days: [-3, Int.max], today: 0)
        XCTAssertTrue(far.versions.isEmpty)
        XCTAssertEqual(far.refusals.count, 2)
        let time = try XCTUnwrap(FHIRDateText.date("2024-03-01T10:00:00-06:00", in: zone))
        let timed = planner.plan(stored: [], newLog: weight, times: [time])
        XCTAssertEqual(try timed.result(at: time).get().occurrence, 0)
    }
}
