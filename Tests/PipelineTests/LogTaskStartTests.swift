import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import XCTest

/// Where a log task starts: on the first day (in the log's zone) of its patient's earliest Observation in
/// the import that creates it, with occurrences counted from there, in every batch of that import.
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

    func testALogStartsOnItsPatientsFirstObservationDayAndCountsFromIt() throws {
        let store = try makeStore()
        let (_, report) = try importFirstObservations(into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let firstDay = try chicagoDay("2025-03-01")
        for id in [weightLog, heartRateLog] {
            let log = try XCTUnwrap(store.tasks(EntityQuery(ids: [id])).first, id)
            XCTAssertEqual(log.schedule.elements.map(\.start), [firstDay], "\(id): its patient's first day, in the log's zone")
            XCTAssertEqual(log.metadata.effectiveDate, firstDay, id)
            XCTAssertEqual(try store.history(.task, id: id).count, 1, id)
        }
        XCTAssertEqual(try occurrences(in: store), ["w1": 0, "h3": 2, "w5": 4], "days counted from the log's start")
        // Each outcome is its day's event, and its value keeps the Observation's own time.
        for outcome in try store.outcomes(.current) {
            let log = try XCTUnwrap(store.tasks(EntityQuery(ids: [outcome.taskID ?? ""])).first)
            XCTAssertEqual(outcome.metadata.effectiveDate, log.schedule.eventStart(occurrence: outcome.taskOccurrenceIndex))
        }
        let w1 = try XCTUnwrap(store.outcomes(.current).first { $0.metadata.provenance?.fhirID == "w1" })
        XCTAssertEqual(w1.values.first?.createdDate, FHIRDateText.date("2025-03-02T03:00:00Z", in: chicago))
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

    func testAnObservationBeforeItsLogsStartIsADeadLetterAndTheRestGoesOn() throws {
        let store = try makeStore()
        _ = try importFirstObservations(into: store)
        let later = try makeScratchFolder("log-start-later")
        try later.writeFile("late.ndjson", [
            observation("w0", at: "2025-02-20T09:00:00-06:00", value: "69"),
            observation("w9", at: "2025-03-09T09:00:00-05:00", value: "72"),
        ].joined(separator: "\n"))
        let report = try importFiles([later.path], into: store, zone: chicago.identifier)
        XCTAssertEqual(report.failures.count, 1, describe(report.failures))
        let failure = try XCTUnwrap(report.failures.first)
        XCTAssertEqual(failure.resource, "Observation/w0")
        XCTAssertTrue(failure.message.contains(weightLog) && failure.message.contains("2025-03-01"), failure.message)
        XCTAssertEqual(report.byType["Observation"]?.created, 1)
        XCTAssertEqual(try occurrences(in: store)["w9"], 8)
        XCTAssertEqual(try store.deadLetters(limit: 10).map(\.resourceID), ["w0"])
        XCTAssertEqual(try store.history(.task, id: weightLog).count, 1, "the log is not moved")
    }

    func testALogStoredBeforeThisRuleKeepsItsStartAndIndexes() throws {
        // A log made when every log started on 1900-01-01: its outcomes count from there.
        let store = try makeStore()
        let options = MappingOptions(timeZone: chicago)
        let folder = try makeScratchFolder("log-start-old")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        _ = try importFiles([folder.path], into: store, zone: chicago.identifier)
        try write1900Log(weightLog, patientID: "Patient/p", code: "http://loinc.org|29463-7", zone: chicago, into: store)
        try folder.writeFile("w.ndjson", observation("w1", at: "2025-03-02T09:00:00-06:00"))
        let report = try importFiles([folder.path], into: store, zone: chicago.identifier)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let day = try XCTUnwrap(options.dayNumber(of: chicagoDay("2025-03-02")))
        XCTAssertEqual(try occurrences(in: store), ["w1": day])
        // The import gave it a version starting on its own day (it had no reading): w1's day is the 1900
        // version's (StoredLogUpgradeTests).
        XCTAssertEqual(try store.history(.task, id: weightLog).count, 2)
    }
}
