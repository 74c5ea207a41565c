import CareModel
import Foundation
import Store
import StoreTestSupport
import XCTest

/// A patient's day holds the tasks of their care plans and their tasks of no care plan (orders; an
/// Observation log only where it has a reading), never another patient's.
final class PatientEventsTests: XCTestCase {
    /// A task of no care plan whose FHIR linkage names `patientID`, daily at `hour`:00 from day 0.
    private func order(_ id: String, of patientID: String, hour: Int) throws -> CareTask {
        let schedule = try Schedule.dailyAtTime(
            hour: hour, minutes: 0, start: StoreFixtures.day0, end: nil, text: nil, duration: .minutes(30), timeZone: StoreFixtures.utc)
        var task = CareTask(id: id, title: "Lisinopril 10 mg", schedule: schedule,
                            metadata: EntityMetadata(effectiveDate: StoreFixtures.day0, timezone: StoreFixtures.utc))
        task.metadata.linkage.patientID = patientID
        return task
    }

    /// An Observation log of `patientID`: all day, every day, from day 0.
    private func log(of patientID: String) throws -> CareTask {
        let schedule = try Schedule(composing: [ScheduleElement(
            start: StoreFixtures.day0, end: nil, interval: DateComponents(day: 1), duration: .allDay, timeZone: StoreFixtures.utc)])
        var task = CareTask(id: "\(patientID)#log-weight", title: "Body weight", impactsAdherence: false, schedule: schedule,
                            metadata: EntityMetadata(effectiveDate: StoreFixtures.day0, timezone: StoreFixtures.utc))
        task.metadata.linkage.patientID = patientID
        task.metadata.tags = [CareTask.observationLogTag]
        return task
    }

    private func day(_ n: Int) -> DateInterval { DateInterval(start: StoreFixtures.day(n), end: StoreFixtures.day(n + 1)) }

    func testADayHoldsPlanTasksOrdersAndTheLogsReadingsOfThePatientOnly() throws {
        try forEachStore { tested in
            let (store, _, _, _) = try StoreFixtures.storeWithTask(tested)  // p1's plan task t1, daily 08:00
            let other = StoreFixtures.patient("p2")
            let weightLog = try log(of: "p1")
            var batch = StoreBatch()
            batch.add(other)
            batch.add(try order("MedicationRequest/mr1", of: "p1", hour: 20))
            batch.add(try order("MedicationRequest/mr2", of: "p2", hour: 20))
            batch.add(weightLog)
            try store.apply(batch)
            var reading = StoreBatch()
            reading.add(Outcome(taskUUID: weightLog.uuid, taskOccurrenceIndex: 1,
                                values: [OutcomeValue(.double(72.5), units: "kg", kind: "29463-7")],
                                metadata: EntityMetadata(effectiveDate: StoreFixtures.day(1, hour: 7), timezone: StoreFixtures.utc)))
            try store.apply(reading)

            let dayOne = try store.events(patientID: "p1", in: day(1))
            XCTAssertEqual(dayOne.map(\.task.id), ["p1#log-weight", "t1", "MedicationRequest/mr1"], "the log's all-day reading, then by time")
            XCTAssertEqual(dayOne.first?.outcome?.values.first?.value, .double(72.5))
            XCTAssertEqual(dayOne.map(\.scheduleEvent.occurrence), [1, 1, 1])
            let dayTwo = try store.events(patientID: "p1", in: day(2))
            XCTAssertEqual(dayTwo.map(\.task.id), ["t1", "MedicationRequest/mr1"], "a log's day without a reading is no event")
            XCTAssertEqual(try store.events(patientID: "p2", in: day(1)).map(\.task.id), ["MedicationRequest/mr2"],
                           "a patient with no care plan still has their orders' events, and only theirs")
        }
    }

    func testAnOrderEndsItsEventsWithItsSchedule() throws {
        try forEachStore { tested in
            let store = tested.store
            let patient = StoreFixtures.patient()
            var ended = try order("MedicationRequest/mr1", of: "p1", hour: 9)
            ended.schedule = try Schedule.dailyAtTime(
                hour: 9, minutes: 0, start: StoreFixtures.day0, end: StoreFixtures.day(1), text: nil, duration: .minutes(30), timeZone: StoreFixtures.utc)
            var batch = StoreBatch()
            batch.add(patient)
            batch.add(ended)
            try store.apply(batch)
            XCTAssertEqual(try store.events(patientID: "p1", in: day(0)).map(\.task.id), ["MedicationRequest/mr1"])
            XCTAssertEqual(try store.events(patientID: "p1", in: day(1)), [], "a stopped order is not due after its end")
            // SQLite's reference reading of a day, without its event index.
            if let sqlite = tested.sqlite {
                XCTAssertEqual(try sqlite.eventsByTableScan(patientID: "p1", in: day(0)).map(\.task.id), ["MedicationRequest/mr1"])
            }
        }
    }

    /// A day view read again serves what changed since: SQLite keeps the patient, care plan and outcome
    /// versions it decoded (by version uuid), which must never hide a new version, a deletion or a new
    /// outcome. Each read equals the same reads made one by one.
    func testADayViewReadAgainShowsWhatChangedSince() throws {
        try forEachStore { tested in
            let (store, patient, plan, task) = try StoreFixtures.storeWithTask(tested)
            let interval = day(1)
            func assertFresh(_ label: String) throws {
                let read = try XCTUnwrap(try store.dayView(patientID: "p1") { _ in interval }, label)
                XCTAssertEqual(read.patient, try store.patients(EntityQuery(ids: ["p1"])).first, label)
                XCTAssertEqual(read.carePlans, try store.currentCarePlans(patientID: "p1"), label)
                XCTAssertEqual(read.events, try store.events(patientID: "p1", in: interval), label)
            }
            try assertFresh("cold")
            try assertFresh("warm")
            var recorded = StoreBatch()
            recorded.add(StoreFixtures.outcome(task, occurrence: 1, value: 120))
            try store.apply(recorded)
            try assertFresh("an outcome recorded")
            try assertFresh("an outcome recorded, warm")
            var changed = StoreBatch()
            changed.update(StoreFixtures.outcome(task, occurrence: 1, value: 125))
            var renamed = patient
            renamed.name = PersonName(givenName: "Augusta", familyName: "King")
            renamed.metadata.timezone = TimeZone(identifier: "Europe/Paris")!
            renamed.effectiveDate = StoreFixtures.day(1, hour: 6)
            changed.update(renamed)
            var retitled = plan
            retitled.title = "Blood pressure"
            retitled.effectiveDate = StoreFixtures.day(1, hour: 6)
            changed.update(retitled)
            try store.apply(changed)
            try assertFresh("a new outcome, patient and care plan version")
            let read = try XCTUnwrap(try store.dayView(patientID: "p1") { _ in interval })
            XCTAssertEqual(read.events.first?.outcome?.values.first?.value, .double(125))
            XCTAssertEqual(read.patient.metadata.timezone.identifier, "Europe/Paris")
            XCTAssertEqual(read.carePlans.map(\.title), ["Blood pressure"])
            var deleted = StoreBatch()
            deleted.delete(.outcome, id: "\(task.uuid.uuidString)_1", at: StoreFixtures.day(1, hour: 12))
            deleted.delete(.carePlan, id: plan.id, at: StoreFixtures.day(1, hour: 12))
            try store.apply(deleted)
            try assertFresh("the outcome and the care plan deleted")
            XCTAssertEqual(try store.dayView(patientID: "p1") { _ in interval }?.carePlans, [])
            var gone = StoreBatch()
            gone.delete(.patient, id: "p1", at: StoreFixtures.day(2))
            try store.apply(gone)
            XCTAssertNil(try store.dayView(patientID: "p1") { _ in interval }, "a deleted patient has no day view")
        }
    }
}
