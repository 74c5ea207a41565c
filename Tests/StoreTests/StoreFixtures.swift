import CareModel
import Foundation
import Store
import StoreTestSupport
import XCTest

/// Small entities for store tests: one patient, one care plan, tasks on daily schedules, all in UTC.
enum StoreFixtures {
    static let utc = TimeZone(identifier: "UTC")!
    /// 2025-03-01 00:00 UTC.
    static let day0 = Date(timeIntervalSince1970: 1_740_787_200)

    static func day(_ n: Int, hour: Int = 0) -> Date {
        day0.addingTimeInterval(Double(n) * 86_400 + Double(hour) * 3_600)
    }

    static func patient(_ id: String = "p1", effective: Date = day0, provenance: Provenance? = nil) -> Patient {
        Patient(id: id, name: PersonName(givenName: "Ada", familyName: "Lovelace"),
                metadata: EntityMetadata(effectiveDate: effective, timezone: utc, provenance: provenance))
    }

    static func carePlan(_ id: String = "cp1", patient: Patient) -> CarePlan {
        CarePlan(id: id, title: "Hypertension", patientUUID: patient.uuid,
                 metadata: EntityMetadata(effectiveDate: patient.effectiveDate, timezone: utc))
    }

    /// A task due daily at `hour`:00 UTC from day 0 (until `endDay`, exclusive, when given).
    static func task(_ id: String = "t1", plan: CarePlan, hour: Int = 8, endDay: Int? = nil, title: String = "Measure blood pressure", effective: Date = day0) throws -> CareTask {
        let schedule = try Schedule.dailyAtTime(
            hour: hour, minutes: 0, start: day0, end: endDay.map { day($0) }, text: nil, duration: .minutes(30), timeZone: utc)
        return CareTask(id: id, title: title, schedule: schedule, carePlanUUID: plan.uuid,
                        metadata: EntityMetadata(effectiveDate: effective, timezone: utc))
    }

    static func outcome(_ task: CareTask, occurrence: Int, value: Double = 120) -> Outcome {
        Outcome(taskUUID: task.uuid, taskOccurrenceIndex: occurrence,
                values: [OutcomeValue(.double(value), units: "mmHg", kind: "systolic")],
                metadata: EntityMetadata(effectiveDate: day(occurrence, hour: 9), timezone: utc))
    }

    /// A store holding one patient, one care plan and one task (daily at 08:00).
    /// A store (in memory, or in the file `path`) with a patient, a care plan and a task.
    static func storeWithTask(path: String? = nil) throws -> (SQLiteStore, Patient, CarePlan, CareTask) {
        let store = try path.map { try SQLiteStore(path: $0) } ?? SQLiteStore.inMemory()
        let (patient, plan, task) = try addPatientWithTask(to: store)
        return (store, patient, plan, task)
    }

    /// The store under test (``forEachStore``) with a patient, a care plan and a task (daily at 08:00).
    static func storeWithTask(_ tested: TestStore) throws -> (AnyTestStore, Patient, CarePlan, CareTask) {
        let (patient, plan, task) = try addPatientWithTask(to: tested.store)
        return (tested.store, patient, plan, task)
    }

    /// The store under test opened afresh for reading, as a command that only reads opens it: a SQLite file
    /// read-only, PostgreSQL through a pool of its own.
    static func reopenedForReading(_ tested: TestStore) throws -> AnyTestStore {
        if tested.sqlite != nil, let path = tested.location {
            return try SQLiteStore(path: path, mode: .readOnly)
        }
        return try tested.reopen()
    }

    /// Adds one patient, one care plan and one task (daily at 08:00) to `store`.
    static func addPatientWithTask(to store: any Store) throws -> (Patient, CarePlan, CareTask) {
        let patient = patient()
        let plan = carePlan(patient: patient)
        let task = try task(plan: plan)
        var batch = StoreBatch()
        batch.add(patient)
        batch.add(plan)
        batch.add(task)
        try store.apply(batch)
        return (patient, plan, task)
    }
}

/// Asserts that `body` throws exactly `expected`.
func XCTAssertThrowsStoreError<T>(
    _ body: @autoclosure () throws -> T, _ expected: StoreError, file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertThrowsError(try body(), file: file, line: line) { error in
        XCTAssertEqual(error as? StoreError, expected, "\(error)", file: file, line: line)
    }
}

/// Asserts that `body` throws a StoreError matching `matches`.
func XCTAssertThrowsStoreError<T>(
    _ body: @autoclosure () throws -> T, file: StaticString = #filePath, line: UInt = #line, matches: (StoreError) -> Bool
) {
    XCTAssertThrowsError(try body(), file: file, line: line) { error in
        guard let storeError = error as? StoreError else {
            return XCTFail("not a StoreError: \(error)", file: file, line: line)
        }
        XCTAssertTrue(matches(storeError), "unexpected \(storeError)", file: file, line: line)
    }
}
