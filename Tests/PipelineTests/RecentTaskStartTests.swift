import CareModel
import FHIR
import Foundation
import Mapping
@testable import Pipeline
import Store
import XCTest

/// A long-running order (Docs/measurement-history.md, "Plan and order tasks"): the import gives its task a
/// current version starting a year before today, so CareKit walks about a year of events for today, not
/// every one since 2020; the Observation placed on the first version stays there, with its index, through
/// the next import; a task that has ended gets a version with no event after its end.
final class RecentTaskStartTests: XCTestCase {
    private let utc = TimeZone(identifier: "UTC")!
    private let taskID = "MedicationRequest/m1"

    private func input() throws -> URL {
        let folder = try makeScratchFolder("recent-start")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        try folder.writeFile("m1.json", #"{"resourceType":"MedicationRequest","id":"m1","status":"active","intent":"order","subject":{"reference":"Patient/p"},"authoredOn":"2020-01-01","medicationCodeableConcept":{"text":"Metformin"},"dosageInstruction":[{"timing":{"repeat":{"frequency":1,"period":1,"periodUnit":"d"}}}]}"#)
        try folder.writeFile("m2.json", #"{"resourceType":"MedicationRequest","id":"m2","status":"completed","intent":"order","subject":{"reference":"Patient/p"},"authoredOn":"2019-01-01","medicationCodeableConcept":{"text":"Amoxicillin"},"dosageInstruction":[{"timing":{"repeat":{"frequency":1,"period":1,"periodUnit":"d"}}}],"dispenseRequest":{"validityPeriod":{"start":"2019-01-01","end":"2021-01-01"}}}"#)
        try folder.writeFile("o1.json", #"{"resourceType":"Observation","id":"o1","status":"final","basedOn":[{"reference":"MedicationRequest/m1"}],"code":{"text":"Dose taken"},"subject":{"reference":"Patient/p"},"effectiveDateTime":"2020-06-01T23:00:00Z","valueBoolean":true}"#)
        return folder
    }

    private func versions(_ id: String, in store: any Store) throws -> [CareTask] {
        try store.history(.task, id: id).compactMap { if case .task(let task) = $0 { task } else { nil } }
    }

    private func startOfDay(_ date: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = utc
        return calendar.startOfDay(for: date)
    }

    func testALongRunningOrderGetsAVersionStartingAYearAgoAndItsReadingKeepsItsPlace() throws {
        let store = try makeStore()
        let folder = try input()
        let report = try importFiles([folder.path], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let chain = try versions(taskID, in: store)
        XCTAssertEqual(chain.count, 2, "the mapped version, then the recent one")
        let (first, recent) = (chain[0], chain[1])
        let cut = startOfDay(Date()).addingTimeInterval(-Double(RecentTaskStart.recentDays) * 86_400)
        XCTAssertEqual(recent.metadata.effectiveDate, cut, "a year before today")
        XCTAssertEqual(recent.metadata.previousVersionUUIDs, [first.uuid], "a new version of the same task: devices converge")
        let start = try XCTUnwrap(recent.schedule.elements.first?.start)
        XCTAssertTrue(start >= cut && start < cut.addingTimeInterval(86_400), "its schedule continues from the cut: \(start)")
        XCTAssertEqual(recent.metadata.provenance?.contentHash, first.metadata.provenance?.contentHash, "the same source content")
        XCTAssertLessThanOrEqual(recent.schedule.elements.reduce(0) { $0 + $1.stepsBefore(Date()) }, RecentTaskStart.recentDays + 1)
        // Today's event is the recent version's, with a small index.
        let today = try store.events(patientID: "Patient/p", in: DateInterval(start: startOfDay(Date()), duration: 86_400)).filter { $0.task.id == taskID }
        XCTAssertEqual(today.map(\.task.uuid), [recent.uuid])
        XCTAssertLessThanOrEqual(today.first?.scheduleEvent.occurrence ?? .max, RecentTaskStart.recentDays)
        // The Observation of 2020-06-01 is on the first version, at its index there.
        let placed = try XCTUnwrap(store.outcomes(.current).first { $0.metadata.provenance?.fhirID == "o1" })
        XCTAssertEqual(placed.taskUUID, first.uuid)
        XCTAssertEqual(placed.taskOccurrenceIndex, first.schedule.occurrence(at: try XCTUnwrap(FHIRDateText.date("2020-06-01T23:00:00Z", in: utc))))
        // In the patient's revision log: a device pulls it.
        let pulled = try store.revisions(patientID: "Patient/p", afterClock: 0, maxEntities: .max) { _ in true }
            .revisions.flatMap(\.entities).map(\.metadata.uuid)
        XCTAssertTrue(pulled.contains(recent.uuid))

        // The same input again: nothing changes, the Observation keeps its outcome on the first version.
        let again = try importFiles([folder.path], into: store)
        XCTAssertEqual(again.failures, [], describe(again.failures))
        XCTAssertEqual(again.entitiesAdded + again.entitiesUpdated + again.entitiesDeleted, 0)
        XCTAssertEqual(again.byType["Observation"]?.unchanged, 1)
        XCTAssertEqual(try versions(taskID, in: store).count, 2)
        XCTAssertEqual(try store.outcomes(.current).first { $0.metadata.provenance?.fhirID == "o1" }?.id, placed.id)
    }

    func testAStoredLongRunningVersionOfUnchangedContentGetsItsRecentSchedule() throws {
        // A store in the old shape: its current version of m1 runs from 2020, with the content hash the
        // mapping makes again (here: a copy of the first version written over the recent one).
        let store = try makeStore()
        let folder = try input()
        // No Observation of m1 (the version written here takes effect after its schedule starts, which no
        // import makes); a weight, so that the import has outcomes to place and tasks to look at.
        _ = try folder.writeFile("o1.json", #"{"resourceType":"Observation","id":"o1","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"29463-7"}]},"subject":{"reference":"Patient/p"},"effectiveDateTime":"2020-06-01T23:00:00Z","valueQuantity":{"value":70,"unit":"kg","system":"http://unitsofmeasure.org","code":"kg"}}"#)
        _ = try importFiles([folder.path], into: store)
        let chain = try versions(taskID, in: store)
        var old = chain[0]
        old.metadata.effectiveDate = chain[1].metadata.effectiveDate
        var batch = StoreBatch()
        batch.append(.update(.task(old)))
        _ = try store.apply(batch)
        XCTAssertEqual(try versions(taskID, in: store).last?.schedule, chain[0].schedule)
        // The next import finds the content unchanged and gives that version a recent one: its schedule
        // is the recent one, not the mapped content's (which the import hashed and did not write).
        let report = try importFiles([folder.path], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let recent = try XCTUnwrap(versions(taskID, in: store).last)
        let start = try XCTUnwrap(recent.schedule.elements.first?.start)
        XCTAssertGreaterThanOrEqual(start, recent.metadata.effectiveDate, "\(start)")
        XCTAssertEqual(try importFiles([folder.path], into: store).entitiesUpdated, 0, "and the import after changes nothing")
    }

    func testAnEndedOrderGetsAVersionWithNoEventFromTheDayAfterItsEnd() throws {
        let store = try makeStore()
        let report = try importFiles([try input().path], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let chain = try versions("MedicationRequest/m2", in: store)
        XCTAssertEqual(chain.count, 2)
        let ended = chain[1]
        let end = try XCTUnwrap(chain[0].schedule.endDate)
        XCTAssertTrue(ended.metadata.effectiveDate >= end && ended.metadata.effectiveDate < end.addingTimeInterval(86_400), "the day after its end")
        XCTAssertEqual(ended.schedule.elements.count, 1)
        XCTAssertLessThan(try XCTUnwrap(ended.schedule.elements.first?.start), ended.metadata.effectiveDate, "its one element is before it takes effect")
        let events = try store.events(patientID: "Patient/p", in: DateInterval(start: ended.metadata.effectiveDate, duration: 3 * 86_400))
        XCTAssertEqual(events.filter { $0.task.id == "MedicationRequest/m2" }.count, 0)
        // Its days before the end keep their events on the first version.
        let lastDay = try store.events(patientID: "Patient/p", in: DateInterval(start: startOfDay(end.addingTimeInterval(-86_400)), duration: 86_400))
        XCTAssertEqual(lastDay.filter { $0.task.id == "MedicationRequest/m2" }.map(\.task.uuid), [chain[0].uuid])
    }

    func testAShortOrRecentTaskIsLeftAsItIs() throws {
        let store = try makeStore()
        let folder = try makeScratchFolder("recent-start-short")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        try folder.writeFile("o.json", #"{"resourceType":"Observation","id":"o","status":"final","code":{"text":"x"},"subject":{"reference":"Patient/p"},"effectiveDateTime":"2020-06-01T23:00:00Z","valueBoolean":true}"#)
        try folder.writeFile("m3.json", #"{"resourceType":"MedicationRequest","id":"m3","status":"active","intent":"order","subject":{"reference":"Patient/p"},"authoredOn":"2019-01-01","medicationCodeableConcept":{"text":"A week"},"dosageInstruction":[{"timing":{"repeat":{"frequency":1,"period":1,"periodUnit":"d","boundsPeriod":{"start":"2019-01-01","end":"2019-01-08"}}}}]}"#)
        let report = try importFiles([folder.path], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        XCTAssertEqual(try versions("MedicationRequest/m3", in: store).count, 1, "seven events: nothing to cut")
    }
}
