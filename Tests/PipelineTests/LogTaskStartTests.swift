import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import XCTest

/// A log task's schedule is its reading days (Docs/measurement-history.md): one all-day element per day
/// (in the log's zone) with a reading of its code, in every batch of the import that makes it; its
/// occurrences count those days, so no day without a reading has an event and indexes stay small.
final class LogTaskStartTests: XCTestCase {
    private let chicago = TimeZone(identifier: "America/Chicago")!
    private let weightLog = "Patient/p#log-http---loinc.org-29463-7"
    private let heartRateLog = "Patient/p#log-http---loinc.org-8867-4"

    private func observation(_ id: String, code: String = "29463-7", at time: String, value: String = "70") -> String {
        #"{"resourceType":"Observation","id":"\#(id)","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"\#(code)"}]},"subject":{"reference":"Patient/p"},"effectiveDateTime":"\#(time)","valueQuantity":{"value":\#(value),"unit":"kg","system":"http://unitsofmeasure.org","code":"kg"}}"#
    }

    /// The start of `day` (yyyy-mm-dd) in Chicago.
    private func chicagoDay(_ day: String) throws -> Date {
        try XCTUnwrap(FHIRDateText.date(day, in: chicago))
    }

    /// A patient's weights and a heart rate, the earliest last and in batches of one: 2025-03-02 03:00Z
    /// is 2025-03-01 in Chicago.
    private func importFirstObservations(into store: any Store) throws -> (folder: URL, report: ImportReport) {
        let folder = try makeScratchFolder("log-start")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        try folder.writeFile("observations.ndjson", [
            observation("w5", at: "2025-03-05T14:00:00-06:00", value: "71"),
            observation("h3", code: "8867-4", at: "2025-03-03T09:00:00-06:00", value: "60"),
            observation("w1", at: "2025-03-02T03:00:00Z"),
        ].joined(separator: "\n"))
        let report = try importFiles([folder.path], into: store, zone: chicago.identifier, outcomeBatchSize: 1)
        return (folder, report)
    }

    private func occurrences(in store: any Store) throws -> [String: Int] {
        var byObservation: [String: Int] = [:]
        for outcome in try store.outcomes(.current) {
            if let id = outcome.metadata.provenance?.fhirID { byObservation[id] = outcome.taskOccurrenceIndex }
        }
        return byObservation
    }

    func testALogsScheduleIsItsReadingDaysAndItsOccurrencesCountThem() throws {
        let store = try makeStore()
        let (_, report) = try importFirstObservations(into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let expectedDays = [weightLog: ["2025-03-01", "2025-03-05"], heartRateLog: ["2025-03-03"]]
        for (id, days) in expectedDays {
            let log = try XCTUnwrap(store.tasks(EntityQuery(ids: [id])).first, id)
            let starts = try days.map(chicagoDay)
            XCTAssertEqual(log.schedule.elements.map(\.start), starts, "\(id): one element per reading day, in the log's zone")
            XCTAssertEqual(log.schedule.elements.map(\.end), starts.map { Calendar.chicago.date(byAdding: .day, value: 1, to: $0) }, id)
            XCTAssertEqual(log.metadata.effectiveDate, starts.first, id)
            XCTAssertEqual(try store.history(.task, id: id).count, 1, id)
        }
        XCTAssertEqual(try occurrences(in: store), ["w1": 0, "h3": 0, "w5": 1], "the log's reading days before each")
        // Each outcome is its day's event, and its value keeps the Observation's own time.
        for outcome in try store.outcomes(.current) {
            let log = try XCTUnwrap(store.tasks(EntityQuery(ids: [outcome.taskID ?? ""])).first)
            XCTAssertEqual(outcome.metadata.effectiveDate, log.schedule.eventStart(occurrence: outcome.taskOccurrenceIndex))
        }
        let w1 = try XCTUnwrap(store.outcomes(.current).first { $0.metadata.provenance?.fhirID == "w1" })
        XCTAssertEqual(w1.values.first?.createdDate, FHIRDateText.date("2025-03-02T03:00:00Z", in: chicago))
    }

    func testNoLogHasAnEventOnADayWithoutItsReadingAndEveryEventHasItsOutcome() throws {
        let store = try makeStore()
        _ = try importFirstObservations(into: store)
        var logEvents: [String] = []
        for day in ["2025-02-28", "2025-03-01", "2025-03-02", "2025-03-03", "2025-03-04", "2025-03-05", "2025-03-06"] {
            let events = try store.events(patientID: "Patient/p", in: DateInterval(start: chicagoDay(day), duration: 86_400))
            for event in events where event.task.isObservationLog {
                XCTAssertNotNil(event.outcome, "\(day) \(event.task.id): an event of a log has its reading")
                logEvents.append("\(day) \(event.task.id == weightLog ? "weight" : "heart rate") #\(event.scheduleEvent.occurrence)")
            }
        }
        XCTAssertEqual(logEvents, ["2025-03-01 weight #0", "2025-03-03 heart rate #0", "2025-03-05 weight #1"])
        let today = Calendar.chicago.startOfDay(for: Date())
        XCTAssertEqual(try store.events(patientID: "Patient/p", in: DateInterval(start: today, duration: 86_400)).filter(\.task.isObservationLog).count, 0,
                       "today has no empty log task")
    }

    func testTheSameInputAgainStoresNothingNew() throws {
        let store = try makeStore()
        let (folder, _) = try importFirstObservations(into: store)
        let before = try occurrences(in: store)
        let again = try importFiles([folder.path], into: store, zone: chicago.identifier, outcomeBatchSize: 1)
        XCTAssertEqual(again.failures, [], describe(again.failures))
        XCTAssertEqual(again.byType["Observation"]?.unchanged, 3)
        XCTAssertEqual(again.byType["Observation"]?.created ?? 0, 0)
        XCTAssertEqual(again.byType["Observation"]?.updated ?? 0, 0)
        XCTAssertEqual(try occurrences(in: store), before)
        XCTAssertEqual(try store.history(.task, id: weightLog).count, 1)
    }

    func testAReadingAfterTheLogsLastDayGoesOnANewVersionAndAnEarlierOneIsADeadLetter() throws {
        let store = try makeStore()
        _ = try importFirstObservations(into: store)
        let first = try XCTUnwrap(store.tasks(EntityQuery(ids: [weightLog])).first)
        let later = try makeScratchFolder("log-start-later")
        try later.writeFile("late.ndjson", [
            observation("w0", at: "2025-02-20T09:00:00-06:00", value: "69"),
            observation("w3", at: "2025-03-03T09:00:00-06:00", value: "70.5"),
            observation("w9", at: "2025-03-09T09:00:00-05:00", value: "72"),
            observation("w11", at: "2025-03-11T09:00:00-05:00", value: "72.5"),
        ].joined(separator: "\n"))
        let report = try importFiles([later.path], into: store, zone: chicago.identifier)
        XCTAssertEqual(report.failures.compactMap(\.resource).sorted(), ["Observation/w0", "Observation/w3"], describe(report.failures))
        for failure in report.failures {
            XCTAssertTrue(failure.message.contains(weightLog) && failure.message.contains("2025-03-01 to 2025-03-05"), failure.message)
        }
        XCTAssertEqual(report.byType["Observation"]?.created, 2)
        XCTAssertEqual(try store.deadLetters(limit: 10).compactMap(\.resourceID).sorted(), ["w0", "w3"])
        // One new version, from its first new day, holding the new days.
        let versions = try store.history(.task, id: weightLog).compactMap { if case .task(let task) = $0 { task } else { nil } }
        XCTAssertEqual(versions.count, 2)
        XCTAssertEqual(versions[0].uuid, first.uuid, "the first version keeps its uuid and days")
        XCTAssertEqual(versions[0].schedule, first.schedule)
        let new = versions[1]
        XCTAssertEqual(new.metadata.previousVersionUUIDs, [first.uuid])
        XCTAssertEqual(new.metadata.effectiveDate, try chicagoDay("2025-03-09"))
        XCTAssertEqual(new.schedule.elements.map(\.start), try ["2025-03-09", "2025-03-11"].map(chicagoDay))
        let placed = try occurrences(in: store)
        XCTAssertEqual(placed["w1"], 0)
        XCTAssertEqual(placed["w5"], 1, "earlier outcomes keep their version and index")
        XCTAssertEqual(placed["w9"], 0)
        XCTAssertEqual(placed["w11"], 1)
        let onNew = try store.outcomes(.current).filter { $0.taskUUID == new.uuid }.compactMap(\.metadata.provenance?.fhirID).sorted()
        XCTAssertEqual(onNew, ["w11", "w9"])
        // The same input again changes nothing and makes no version.
        let again = try importFiles([later.path], into: store, zone: chicago.identifier)
        XCTAssertEqual(again.byType["Observation"]?.created ?? 0, 0)
        XCTAssertEqual(try store.history(.task, id: weightLog).count, 2)
    }

    func testALogStoredBeforeThisRuleGetsAVersionOfItsNewDays() throws {
        // A log made when every log started on 1900-01-01, with no reading: its new version takes effect
        // on the import's first day of it.
        let store = try makeStore()
        let folder = try makeScratchFolder("log-start-old")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        _ = try importFiles([folder.path], into: store, zone: chicago.identifier)
        try write1900Log(weightLog, patientID: "Patient/p", code: "http://loinc.org|29463-7", zone: chicago, into: store)
        try folder.writeFile("w.ndjson", observation("w1", at: "2025-03-02T09:00:00-06:00"))
        let report = try importFiles([folder.path], into: store, zone: chicago.identifier)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        XCTAssertEqual(try occurrences(in: store), ["w1": 0])
        let versions = try store.history(.task, id: weightLog).compactMap { if case .task(let task) = $0 { task } else { nil } }
        XCTAssertEqual(versions.count, 2)
        XCTAssertEqual(versions[1].schedule.elements.map(\.start), [try chicagoDay("2025-03-02")])
    }
}

private extension Calendar {
    static var chicago: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "America/Chicago")!
        return calendar
    }
}
