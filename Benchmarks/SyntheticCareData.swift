import Store
import CareModel
import Foundation

/// Synthetic care data of a chosen size: patients, one care plan each, daily tasks, and one outcome per
/// task per day. It fills stores for `caregate store generate`, the store benchmark and the crash test.
///
/// Everything is in UTC from ``start``; task `t` of every patient is due daily at `(6 + t) mod 24`:00.
/// With the defaults (1,000 patients × 20 tasks × 365 days) that is 7.3 million outcomes.
///
/// ```swift
/// let data = SyntheticCareData(patients: 10, tasksPerPatient: 5, days: 30)
/// try data.fill(store, daysPerBatch: 1) { progress in print(progress.outcomes) }
/// ```
public struct SyntheticCareData: Sendable {
    public let patients: Int
    public let tasksPerPatient: Int
    public let days: Int
    /// The first day (midnight UTC).
    public let start: Date
    /// Prefix of every id, so that several data sets can share a store.
    public let idPrefix: String
    private let taskUUIDs: [UUID]
    private let utc = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0) ?? .current

    /// How far a fill has got.
    public struct Progress: Sendable {
        public var entities: Int
        public var outcomes: Int
        public var totalOutcomes: Int
        public var daysDone: Int
    }

    public init(patients: Int, tasksPerPatient: Int = 20, days: Int = 365, start: Date = Date(timeIntervalSince1970: 1_735_689_600), idPrefix: String = "") {
        self.patients = max(0, patients)
        self.tasksPerPatient = max(0, tasksPerPatient)
        self.days = max(0, days)
        self.start = start
        self.idPrefix = idPrefix
        taskUUIDs = (0..<(self.patients * self.tasksPerPatient)).map { _ in UUID() }
    }

    public var totalOutcomes: Int { patients * tasksPerPatient * days }
    /// Patients, care plans and tasks.
    public var totalEntities: Int { patients * (2 + tasksPerPatient) }

    public func patientID(_ patient: Int) -> String { "\(idPrefix)patient-\(patient + 1)" }
    public func carePlanID(_ patient: Int) -> String { "\(idPrefix)careplan-\(patient + 1)" }
    public func taskID(_ patient: Int, _ task: Int) -> String { "\(idPrefix)task-\(patient + 1)-\(task + 1)" }

    /// The patients, their care plans and their tasks.
    public func entityBatch() throws -> StoreBatch {
        var batch = StoreBatch()
        for patient in 0..<patients {
            let patientEntity = Patient(
                id: patientID(patient), name: PersonName(givenName: "Pat", familyName: "Synthetic \(patient + 1)"),
                metadata: EntityMetadata(effectiveDate: start, timezone: utc))
            batch.add(patientEntity)
            let plan = CarePlan(
                id: carePlanID(patient), title: "Daily care", patientUUID: patientEntity.uuid,
                metadata: EntityMetadata(effectiveDate: start, timezone: utc))
            batch.add(plan)
            for task in 0..<tasksPerPatient {
                let schedule = try Schedule.dailyAtTime(
                    hour: (6 + task) % 24, minutes: 0, start: start, end: nil, text: nil, duration: .minutes(30), timeZone: utc)
                batch.add(CareTask(
                    id: taskID(patient, task), title: "Task \(task + 1)", schedule: schedule, carePlanUUID: plan.uuid,
                    metadata: EntityMetadata(uuid: taskUUIDs[patient * tasksPerPatient + task], effectiveDate: start, timezone: utc)))
            }
        }
        return batch
    }

    /// The outcomes of days `days` (one per task per day: occurrence index = day number).
    public func outcomeBatch(days: Range<Int>) -> StoreBatch {
        var batch = StoreBatch()
        var uuids = VersionUUIDGenerator()
        for day in days {
            let dayStart = start.addingTimeInterval(Double(day) * 86_400)
            for patient in 0..<patients {
                for task in 0..<tasksPerPatient {
                    let value = OutcomeValue(.double(Double(100 + (patient + task + day) % 60)), units: "mmHg", kind: "systolic")
                    batch.add(Outcome(
                        taskUUID: taskUUIDs[patient * tasksPerPatient + task], taskID: taskID(patient, task),
                        taskOccurrenceIndex: day, values: [value],
                        metadata: EntityMetadata(uuid: uuids.next(), effectiveDate: dayStart, timezone: utc)))
                }
            }
        }
        return batch
    }

    /// Writes everything into `store`: the entities in one batch, then the outcomes `daysPerBatch` days
    /// per batch, calling `progress` after each batch. `beforeBatch` runs before each outcome batch
    /// is applied (with its size).
    public func fill(
        _ store: any Store, daysPerBatch: Int = 1, beforeBatch: (Int) -> Void = { _ in },
        progress: (Progress) -> Void = { _ in }
    ) throws {
        try store.apply(try entityBatch())
        var state = Progress(entities: totalEntities, outcomes: 0, totalOutcomes: totalOutcomes, daysDone: 0)
        progress(state)
        var day = 0
        let step = max(1, daysPerBatch)
        while day < days {
            let range = day..<min(days, day + step)
            let batch = outcomeBatch(days: range)
            beforeBatch(batch.count)
            try store.apply(batch)
            state.outcomes += batch.count
            state.daysDone = range.upperBound
            progress(state)
            day = range.upperBound
        }
    }
}
