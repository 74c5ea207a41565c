import CareModel
import FHIR
import Foundation
import Mapping
@testable import Pipeline
import Store
import XCTest

/// A long-running order (Docs/measurement-history.md, "Plan and order tasks"): the import cuts its task
/// into versions of at most ``TaskVersionSpans/maximumEvents`` events, so CareKit walks about a year of
/// events for any day, not every one since 2020; each Observation goes on the version of its day and
/// stays there, with its index, through the next import.
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

    func testALongRunningOrderIsCutIntoVersionsOfAboutAYearAndEachReadingGoesOnTheVersionOfItsDay() throws {
        let store = try makeStore()
        let folder = try input()
        // A reading in 2023: on the version in effect then, planned before the Observations are placed.
        try folder.writeFile("o2.json", #"{"resourceType":"Observation","id":"o2","status":"final","basedOn":[{"reference":"MedicationRequest/m1"}],"code":{"text":"Dose taken"},"subject":{"reference":"Patient/p"},"effectiveDateTime":"2023-06-01T23:00:00Z","valueBoolean":true}"#)
        let report = try importFiles([folder.path], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let chain = try versions(taskID, in: store)
        XCTAssertGreaterThan(chain.count, 5, "a version per year or so from 2020")
        let todayEnd = startOfDay(Date()).addingTimeInterval(86_400)
        for (position, version) in chain.enumerated() {
            let next = position + 1 < chain.count ? chain[position + 1].metadata.effectiveDate : todayEnd
            XCTAssertLessThanOrEqual(TaskVersionSpans.steps(version, before: next), TaskVersionSpans.maximumEvents, "version \(position) holds a bounded number of events")
            XCTAssertEqual(version.metadata.provenance?.contentHash, chain[0].metadata.provenance?.contentHash, "the same source content")
            guard position > 0 else { continue }
            XCTAssertEqual(version.metadata.previousVersionUUIDs, [chain[position - 1].uuid], "new versions of the same task: devices converge")
            XCTAssertEqual(version.metadata.effectiveDate, startOfDay(version.metadata.effectiveDate), "each takes effect at a day's start")
            let start = try XCTUnwrap(version.schedule.elements.first?.start)
            XCTAssertTrue(start >= version.metadata.effectiveDate && start < version.metadata.effectiveDate.addingTimeInterval(86_400), "its schedule continues from its cut: \(start)")
        }
        // Today's event is the last version's, with a small index.
        let today = try store.events(patientID: "Patient/p", in: DateInterval(start: startOfDay(Date()), duration: 86_400)).filter { $0.task.id == taskID }
        XCTAssertEqual(today.map(\.task.uuid), [try XCTUnwrap(chain.last).uuid])
        XCTAssertLessThanOrEqual(today.first?.scheduleEvent.occurrence ?? .max, TaskVersionSpans.maximumEvents)
        // Each Observation is on the version in effect on its day, at its index there.
        for (id, time) in [("o1", "2020-06-01T23:00:00Z"), ("o2", "2023-06-01T23:00:00Z")] {
            let date = try XCTUnwrap(FHIRDateText.date(time, in: utc))
            let owner = try XCTUnwrap(chain.last { $0.metadata.effectiveDate <= date })
            let placed = try XCTUnwrap(store.outcomes(.current).first { $0.metadata.provenance?.fhirID == id }, id)
            XCTAssertEqual(placed.taskUUID, owner.uuid, id)
            XCTAssertEqual(placed.taskOccurrenceIndex, owner.schedule.occurrence(at: date), id)
        }
        XCTAssertNotEqual(try XCTUnwrap(store.outcomes(.current).first { $0.metadata.provenance?.fhirID == "o2" }).taskUUID, chain[0].uuid)
        // In the patient's revision log: a device pulls them.
        let pulled = try store.revisions(patientID: "Patient/p", afterClock: 0, maxEntities: .max) { _ in true }
            .revisions.flatMap(\.entities).map(\.metadata.uuid)
        XCTAssertTrue(chain.allSatisfy { pulled.contains($0.uuid) })

        // The same input again: nothing changes, the Observations keep their outcomes.
        let outcomesBefore = try store.outcomes(.current).map(\.id).sorted()
        let again = try importFiles([folder.path], into: store)
        XCTAssertEqual(again.failures, [], describe(again.failures))
        XCTAssertEqual(again.entitiesAdded + again.entitiesUpdated + again.entitiesDeleted, 0)
        XCTAssertEqual(again.byType["Observation"]?.unchanged, 2)
        XCTAssertEqual(try versions(taskID, in: store).count, chain.count)
        XCTAssertEqual(try store.outcomes(.current).map(\.id).sorted(), outcomesBefore)
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
        old.metadata.effectiveDate = try XCTUnwrap(chain.last).metadata.effectiveDate
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

    func testAnEndedOrderIsCutLikeAnyOtherAndItsDaysKeepTheirEvents() throws {
        let store = try makeStore()
        let report = try importFiles([try input().path], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        // 2019-01-01 to 2021-01-01, daily: 731 events, two versions of at most a year of them.
        let chain = try versions("MedicationRequest/m2", in: store)
        XCTAssertEqual(chain.count, 2)
        let end = try XCTUnwrap(chain[0].schedule.endDate)
        XCTAssertEqual(chain[1].schedule.endDate, end, "the same end")
        XCTAssertLessThanOrEqual(TaskVersionSpans.steps(chain[1], before: Date()), TaskVersionSpans.maximumEvents)
        // Its last day's event is the second version's; nothing after its end.
        let lastDay = try store.events(patientID: "Patient/p", in: DateInterval(start: startOfDay(end.addingTimeInterval(-86_400)), duration: 86_400))
        XCTAssertEqual(lastDay.filter { $0.task.id == "MedicationRequest/m2" }.map(\.task.uuid), [chain[1].uuid])
        let after = try store.events(patientID: "Patient/p", in: DateInterval(start: end.addingTimeInterval(86_400), duration: 3 * 86_400))
        XCTAssertEqual(after.filter { $0.task.id == "MedicationRequest/m2" }.count, 0)
    }

    /// The versions of several tasks go in one transaction, each task's a revision of its own; a task
    /// whose versions the store refuses keeps its schedule alone (its tasks are written again one
    /// transaction each), and the notes come in the tasks' order either way.
    func testATaskWhoseVersionsTheStoreRefusesKeepsItsScheduleAloneWhileTheOthersGetTheirs() throws {
        let store = try makeStore()
        let options = ImportOptions(mapping: MappingOptions(timeZone: utc))
        let start = try XCTUnwrap(FHIRDateText.date("2020-01-01T08:00:00Z", in: utc))
        var batch = StoreBatch()
        var tasks: [CareTask] = []
        for id in ["MedicationRequest/a", "MedicationRequest/b", "MedicationRequest/c"] {
            let daily = try ScheduleElement(start: start, end: nil, interval: DateComponents(day: 1), duration: .seconds(600), timeZone: utc)
            var task = CareTask(id: id, title: id, schedule: try Schedule(composing: [daily]), metadata: EntityMetadata(effectiveDate: start, timezone: utc))
            task.metadata.linkage.patientID = "Patient/p"
            batch.add(task)
            tasks.append(task)
        }
        try store.apply(batch)
        let today = try XCTUnwrap(options.mapping.dayNumber(of: Date()))
        let planned = tasks.map { TaskVersionSpans.versions(after: $0, notBefore: 0, today: today, options: options.mapping) }
        XCTAssertTrue(planned.allSatisfy { $0.count > 3 }, "\(planned.map(\.count))")

        // All three: one transaction, a revision (a tick of the clock) per task.
        let accepting = try makeStore()
        try accepting.apply(batch)
        let acceptingLedger = ImportLedger(store: accepting, options: options)
        let clockBefore = try accepting.serverClock().clock
        XCTAssertEqual(try RecentTaskStart(store: accepting, options: options, ledger: acceptingLedger).write(planned).count, planned.joined().count)
        let read = try accepting.revisions(patientID: "Patient/p", afterClock: clockBefore, maxEntities: .max) { _ in true }
        XCTAssertEqual(read.revisions.map { Set($0.entities.map(\.id)) }, tasks.map { [$0.id] })
        XCTAssertEqual(read.revisions.map { $0.entities.count }, planned.map(\.count))
        XCTAssertEqual(acceptingLedger.report.notes.map(\.severity), ["info", "info", "info"])

        // b is deleted once its versions are planned: the store refuses them (a deleted task takes no version).
        var deletion = StoreBatch()
        deletion.delete(.task, id: tasks[1].id)
        try store.apply(deletion)
        let ledger = ImportLedger(store: store, options: options)
        let written = try RecentTaskStart(store: store, options: options, ledger: ledger).write(planned)
        XCTAssertEqual(written.map(\.uuid), (planned[0] + planned[2]).map(\.uuid))
        XCTAssertEqual(try versions(tasks[0].id, in: store).count, 1 + planned[0].count)
        XCTAssertEqual(try versions(tasks[1].id, in: store).count, 2, "its first version and its tombstone")
        XCTAssertEqual(try versions(tasks[2].id, in: store).count, 1 + planned[2].count)
        XCTAssertEqual(ledger.report.notes.map(\.resource), tasks.map(\.id))
        XCTAssertEqual(ledger.report.notes.map(\.severity), ["info", "warning", "info"])
        XCTAssertEqual(ledger.report.entitiesUpdated, planned[0].count + planned[2].count)
        XCTAssertEqual(
            acceptingLedger.report.notes.filter { $0.resource != tasks[1].id }.map(\.message),
            ledger.report.notes.filter { $0.resource != tasks[1].id }.map(\.message))
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
