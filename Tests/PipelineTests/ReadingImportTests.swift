import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// Readings as HealthKitOnFHIR writes them, stored by ``ReadingImport`` as outcome values on the
/// occurrences they fall in: a week of them, the same week again, another patient's, and refusals.
final class ReadingImportTests: XCTestCase {
    private let zone = ReadingFixture.zone
    private let day0 = ReadingFixture.day0

    private func run(_ readings: [[String: Any]], bundle: Bool = false, in fixture: ReadingFixture, patient: String = "Patient/p1") throws -> ReadingImport.Report {
        let decoded = try ReadingDecoding.decode(HealthKitReadings.body(readings, bundle: bundle))
        return try ReadingImport(store: fixture.store, kinds: ReadingFixture.kinds()).apply(decoded.samples, refusals: decoded.refusals, patientID: patient)
    }

    private func outcomes(of task: CareTask, in store: SQLiteStore) throws -> [Int: Outcome] {
        var found: [Int: Outcome] = [:]
        for outcome in try store.outcomes(.current) where outcome.taskID == task.id { found[outcome.taskOccurrenceIndex] = outcome }
        return found
    }

    /// The outcome of task `id` on the events of day `day` (from day0): the occurrence the store's event
    /// query finds on that day, so the reading sits on an occurrence of its own day.
    private func outcome(of id: String, onDay day: Int, in store: SQLiteStore) throws -> Outcome? {
        let midnight = day0.addingTimeInterval(Double(day) * 86_400)
        let events = try store.events(patientID: "Patient/p1", in: DateInterval(start: midnight, duration: 86_399))
        let found = events.filter { $0.task.id == id && $0.outcome != nil }
        XCTAssertLessThanOrEqual(found.count, 1, "\(id) on day \(day)")
        return found.first?.outcome
    }

    private func numbers(_ outcome: Outcome?, kind: String) -> [Double] {
        (outcome?.values ?? []).filter { $0.kind == kind }.compactMap { if case .double(let number) = $0.value { return number } else { return nil } }
    }

    func testAWeekOfReadingsBecomesTheExpectedOutcomesOnTheExpectedOccurrences() throws {
        let fixture = try ReadingFixture()
        let week = HealthKitReadings.week(from: day0, zone: zone)
        let report = try run(week, bundle: true, in: fixture)
        XCTAssertEqual(report.stored, week.count)
        XCTAssertEqual(report.known, 0)
        // The weight task's schedule starts 30 days before day0: day d is occurrence 30 + d. The logs get
        // the occurrences LogReadingDays plans: one on each reading's own day.
        let weights = try outcomes(of: XCTUnwrap(fixture.tasks["weight"]), in: fixture.store)
        XCTAssertEqual(Set(weights.keys), Set(30..<37))
        for (name, days) in [("bp", 0..<7), ("spo2", 0..<7), ("steps", 0..<7), ("glucose", 2..<3)] {
            let id = try XCTUnwrap(fixture.tasks[name]).id
            XCTAssertEqual(Set(try fixture.store.outcomes(.current).filter { $0.taskID == id }.map(\.id)).count, days.count, name)
        }
        for day in 0..<7 {
            let weight = try XCTUnwrap(numbers(weights[30 + day], kind: "http://loinc.org|29463-7").first)
            XCTAssertEqual(weight, (176.0 + Double(day) * 0.2) * 0.45359237, accuracy: 1e-9, "pounds to kilograms")
            XCTAssertEqual(weights[30 + day]?.values.first?.units, "kg")
            XCTAssertEqual(weights[30 + day]?.values.first?.createdDate, day0.addingTimeInterval(Double(day) * 86_400 + 7.5 * 3600))
            let pressure = try outcome(of: "Task/log-bp", onDay: day, in: fixture.store)
            XCTAssertEqual(numbers(pressure, kind: "http://loinc.org|8480-6"), [120 + Double(day)])
            XCTAssertEqual(numbers(pressure, kind: "http://loinc.org|8462-4"), [80])
            XCTAssertEqual(pressure?.values.map(\.units), ["mm[Hg]", "mm[Hg]"])
            let saturation = try XCTUnwrap(numbers(outcome(of: "Task/log-spo2", onDay: day, in: fixture.store), kind: "http://loinc.org|2708-6").first)
            XCTAssertEqual(saturation, day.isMultiple(of: 2) ? 97 : 98, accuracy: 1e-9, "HealthKit's fraction and a percent both as %")
            let steps = try outcome(of: "Task/log-steps", onDay: day, in: fixture.store)
            XCTAssertEqual(numbers(steps, kind: "http://loinc.org|55423-8"), [1200, 3400, 500].map { $0 + Double(day) })
            XCTAssertEqual(steps?.values.first?.units, "{steps}")
        }
        let sugar = try XCTUnwrap(numbers(outcome(of: "Task/log-glucose", onDay: 2, in: fixture.store), kind: "http://loinc.org|2339-0").first)
        XCTAssertEqual(sugar, 5.5 * 180.15588000005408 / 10, accuracy: 1e-9, "mmol/L to mg/dL with glucose's molar mass (HealthKit's)")
        XCTAssertEqual(weights[30]?.metadata.source, "Withings Body+", "the device that took it")
        XCTAssertEqual(report.queued.count, 29, "each outcome queued for the provider once")
        XCTAssertEqual(try fixture.store.outboxEntries(in: .pending, limit: 100).count, 29)
    }

    func testTheSameBatchAgainStoresNothingTwice() throws {
        let fixture = try ReadingFixture()
        let week = HealthKitReadings.week(from: day0, zone: zone)
        _ = try run(week, in: fixture)
        let before = try fixture.store.outcomes(.current).map(\.metadata.uuid)
        let again = try run(week, in: fixture)
        XCTAssertEqual(again.known, week.count)
        XCTAssertEqual(again.stored, 0)
        XCTAssertEqual(again.queued, [])
        XCTAssertEqual(try fixture.store.outcomes(.current).map(\.metadata.uuid), before, "no new version")
        // One sample twice in one batch: stored once.
        let reading = HealthKitReadings.quantity(
            type: "HKQuantityTypeIdentifierBodyMass", loinc: "29463-7", value: 80, unit: "kg", ucum: "kg",
            start: day0.addingTimeInterval(8 * 86_400 + 7.5 * 3600), zone: zone)
        let twice = try run([reading, reading], in: fixture)
        XCTAssertEqual(twice.readings.map(\.status), ["stored", "known"])
        XCTAssertEqual(try outcomes(of: XCTUnwrap(fixture.tasks["weight"]), in: fixture.store)[38]?.values.count, 1)
    }

    func testASampleResentAfterItsTaskMovedIsStillKnown() throws {
        let fixture = try ReadingFixture()
        let week = HealthKitReadings.week(from: day0, zone: zone)
        _ = try run(week, in: fixture)
        // The provider moves the weight task to 06:00 for three hours, from the day before the week.
        var moved = try XCTUnwrap(fixture.tasks["weight"])
        moved.schedule = try Schedule.dailyAtTime(hour: 6, minutes: 0, start: day0, end: nil, text: nil, duration: .hours(3), timeZone: zone)
        moved.metadata.effectiveDate = day0.addingTimeInterval(-86_400)
        moved.metadata.uuid = VersionUUIDGenerator.random()
        var batch = StoreBatch()
        batch.upsert(moved)
        try fixture.store.apply(batch)
        let again = try run(week, in: fixture)
        XCTAssertEqual(again.stored, 0, "\(again.readings.filter { $0.status == "stored" }.map(\.index))")
        XCTAssertEqual(again.known, week.count)
    }

    func testAReadingForAnotherPatientRefusesTheWholeBatch() throws {
        let fixture = try ReadingFixture()
        var week = HealthKitReadings.week(from: day0, zone: zone)
        week[3]["subject"] = ["reference": "Patient/p2"]
        week[5]["subject"] = ["reference": "Patient/p1"]
        XCTAssertThrowsError(try run(week, in: fixture)) { error in
            let refusals = (error as? ReadingImport.Refused)?.refusals ?? []
            XCTAssertEqual(refusals.map(\.index), [3])
            XCTAssertEqual(refusals.first?.path, "Observation.subject")
        }
        XCTAssertEqual(try fixture.store.outcomes(.current), [], "nothing of the batch is stored")
        XCTAssertEqual(try fixture.store.outboxEntries(in: .pending, limit: 10).count, 0)
        // The patient's own FHIR reference, and an absolute one, are the patient.
        week[3]["subject"] = ["reference": "https://ehr.example.org/fhir/Patient/p1"]
        XCTAssertEqual(try run(week, in: fixture).stored, week.count)
    }

    func testUnitsCodesAndRangesAreRefusedWithTheirIndexAndReason() throws {
        let fixture = try ReadingFixture()
        let morning = day0.addingTimeInterval(7.5 * 3600)
        func weight(_ value: Double, _ unit: String, _ ucum: String?) -> [String: Any] {
            HealthKitReadings.quantity(type: "HKQuantityTypeIdentifierBodyMass", loinc: "29463-7", value: value, unit: unit, ucum: ucum, start: morning, zone: zone)
        }
        var unknown = HealthKitReadings.quantity(
            type: "HKQuantityTypeIdentifierDietaryWater", loinc: "00000-0", value: 1, unit: "L", ucum: "L", start: morning, zone: zone)
        unknown["code"] = ["coding": [["system": "http://loinc.org", "code": "00000-0"]]]
        var noID = weight(80, "kg", "kg")
        noID.removeValue(forKey: "id")
        let batch: [[String: Any]] = [
            weight(80, "kg", "kg"),  // fine
            weight(80, "mmHg", "mm[Hg]"),  // does not convert
            unknown,  // no row
            weight(2000, "lbs", "[lb_av]"),  // 907 kg: outside the range
            weight(80, "furlongs", nil),  // not a unit
            noID,  // no sample id
            HealthKitReadings.quantity(
                type: "HKQuantityTypeIdentifierOxygenSaturation", loinc: "59408-5", value: 150, unit: "%", ucum: "%", start: morning, zone: zone),
        ]
        XCTAssertThrowsError(try run(batch, in: fixture)) { error in
            let refusals = (error as? ReadingImport.Refused)?.refusals ?? []
            XCTAssertEqual(refusals.map(\.index), [1, 2, 3, 4, 5, 6])
            XCTAssertEqual(refusals.map(\.path), [
                "Observation.valueQuantity", "Observation.code", "Observation.valueQuantity", "Observation.valueQuantity", "Observation.id",
                "Observation.valueQuantity",
            ])
            XCTAssertTrue(refusals[0].reason.contains("does not convert to kg"), refusals[0].reason)
            XCTAssertTrue(refusals[1].reason.contains("no row of the LOINC <-> HealthKit table"), refusals[1].reason)
            XCTAssertTrue(refusals[2].reason.contains("outside the plausible range"), refusals[2].reason)
            XCTAssertTrue(refusals[3].reason.contains("is not one CareGate reads"), refusals[3].reason)
            XCTAssertTrue(refusals[5].reason.contains("outside the plausible range 30–100 %"), refusals[5].reason)
        }
        XCTAssertEqual(try fixture.store.outcomes(.current), [])
    }

    func testGlucoseIsKeptInTheUnitItsTasksCodeSays() throws {
        let fixture = try ReadingFixture()
        let plan = try XCTUnwrap(fixture.tasks["weight"])
        var task = CareTask(
            id: "Task/glucose-molar", title: "Fasting glucose", schedule: try Schedule.dailyAtTime(
                hour: 6, minutes: 0, start: day0, end: nil, text: nil, duration: .hours(3), timeZone: zone),
            carePlanUUID: plan.carePlanUUID, carePlanID: plan.carePlanID, metadata: EntityMetadata(effectiveDate: day0, timezone: zone))
        task.metadata.linkage.codes = ["http://loinc.org|15074-8"]
        var batch = StoreBatch()
        batch.add(task)
        try fixture.store.apply(batch)
        // A glucometer reading (41653-7, mass) in mg/dL on a task coded 15074-8 (molar): kept in mmol/L.
        let reading = HealthKitReadings.quantity(
            type: "HKQuantityTypeIdentifierBloodGlucose", loinc: "41653-7", value: 99, unit: "mg/dL", ucum: "mg/dL",
            start: day0.addingTimeInterval(7 * 3600), zone: zone)
        XCTAssertEqual(try run([reading], in: fixture).stored, 1)
        let outcome = try XCTUnwrap(try fixture.store.outcomes(.current).first { $0.taskID == "Task/glucose-molar" })
        XCTAssertEqual(outcome.values.first?.units, "mmol/L")
        XCTAssertEqual(outcome.values.first?.kind, "http://loinc.org|15074-8")
        XCTAssertEqual(try XCTUnwrap(numbers(outcome, kind: "http://loinc.org|15074-8").first), 99 * 10 / 180.15588000005408, accuracy: 1e-9)
    }

    func testABodyThatIsNotReadingsIsUnreadable() throws {
        for body in ["{", "42", #"{"resourceType": "Patient"}"#, #"{"resourceType": "Bundle", "entry": 3}"#] {
            XCTAssertThrowsError(try ReadingDecoding.decode(Data(body.utf8)), body)
        }
        let one = HealthKitReadings.quantity(
            type: "HKQuantityTypeIdentifierBodyMass", loinc: "29463-7", value: 80, unit: "kg", ucum: "kg", start: day0, zone: zone)
        let single = try ReadingDecoding.decode(JSONSerialization.data(withJSONObject: one))
        XCTAssertEqual(single.samples.count, 1, "one Observation, its identifier with only an element id accepted")
        XCTAssertEqual(single.refusals, [])
        let notObservation = try ReadingDecoding.decode(Data(#"[{"resourceType": "Patient"}, true]"#.utf8))
        XCTAssertEqual(notObservation.refusals.map(\.index), [0, 1])
    }
}

/// Blood pressure when the plan's activity became one HealthKit-linked task per component (systolic and
/// diastolic, each coded with its own code and the panel's): a correlation, or its two samples at one
/// time, goes on one occurrence, and leaves as one panel Observation.
final class ReadingPanelTests: XCTestCase {
    func testACorrelationAndTwoSamplesBothLandTogetherOnTheSystolicTask() throws {
        let fixture = try ReadingFixture()
        let zone = ReadingFixture.zone
        let day0 = ReadingFixture.day0
        let plan = try XCTUnwrap(fixture.tasks["weight"])
        var batch = StoreBatch()
        var linked: [CareTask] = []
        for (type, code) in [("BloodPressureSystolic", "8480-6"), ("BloodPressureDiastolic", "8462-4")] {
            var task = CareTask(
                id: "Task/bp.healthkit-\(type)", title: "Blood pressure", schedule: try Schedule.dailyAtTime(
                    hour: 19, minutes: 0, start: day0.addingTimeInterval(-86_400), end: nil, text: nil, duration: .hours(3), timeZone: zone),
                carePlanUUID: plan.carePlanUUID, carePlanID: plan.carePlanID,
                healthKitLinkage: HealthKitLinkage(quantityIdentifier: "HKQuantityTypeIdentifier\(type)", quantityType: .discrete, unitString: "mmHg"),
                metadata: EntityMetadata(effectiveDate: day0.addingTimeInterval(-86_400), timezone: zone))
            task.metadata.linkage.codes = ["http://loinc.org|\(code)", "http://loinc.org|85354-9"]
            batch.add(task)
            linked.append(task)
        }
        try fixture.store.apply(batch)
        let evening = day0.addingTimeInterval(20 * 3600)
        let correlation = HealthKitReadings.bloodPressure(systolic: 131, diastolic: 84, at: evening, zone: zone)
        let systolic = HealthKitReadings.quantity(
            type: "HKQuantityTypeIdentifierBloodPressureSystolic", loinc: "8480-6", value: 125, unit: "mmHg", ucum: "mm[Hg]",
            start: evening.addingTimeInterval(86_400), zone: zone)
        let diastolic = HealthKitReadings.quantity(
            type: "HKQuantityTypeIdentifierBloodPressureDiastolic", loinc: "8462-4", value: 79, unit: "mmHg", ucum: "mm[Hg]",
            start: evening.addingTimeInterval(86_400), zone: zone)
        let decoded = try ReadingDecoding.decode(HealthKitReadings.body([correlation, diastolic, systolic]))
        let report = try ReadingImport(store: fixture.store, kinds: ReadingFixture.kinds()).apply(decoded.samples, patientID: "Patient/p1")
        XCTAssertEqual(report.stored, 3)
        let outcomes = try fixture.store.outcomes(.current)
        XCTAssertEqual(outcomes.count, 2, "one occurrence a day, both components on it")
        XCTAssertEqual(Set(outcomes.compactMap(\.taskID)), [linked[0].id], "on the systolic task, as import puts a provider's panel")
        for outcome in outcomes {
            XCTAssertEqual(Set(outcome.values.compactMap(\.kind)), ["http://loinc.org|8480-6", "http://loinc.org|8462-4"])
        }
        // The export: one 85354-9 panel per occurrence.
        let folder = try makeScratchFolder("reading-panels")
        let exported = try Gateway(store: fixture.store).export(to: .folder(folder.path))
        XCTAssertEqual(exported.refused.map(\.reason), [])
        let bundle = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(exported.path))))
        let observations = bundle.children(named: "entry").compactMap { $0.child(named: "resource") }.filter { $0.resourceType == "Observation" }
        XCTAssertEqual(observations.count, 2)
        for observation in observations {
            XCTAssertEqual(observation.child(named: "code")?.children(named: "coding").first?.childValue("code"), "85354-9")
            XCTAssertEqual(observation.children(named: "component").count, 2)
        }
    }
}
