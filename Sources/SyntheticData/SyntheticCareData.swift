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
    /// Task version uuids are this seed and the task's number: no table of them, whatever the size.
    private let uuidSeed: UInt64
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
        uuidSeed = UInt64.random(in: .min ... .max)
    }

    /// The uuid of the task version of `patient`'s task `task` (random seed, then the task's number).
    public func taskUUID(_ patient: Int, _ task: Int) -> UUID {
        let number = UInt64(truncatingIfNeeded: patient &* tasksPerPatient &+ task)
        let s = withUnsafeBytes(of: uuidSeed.bigEndian) { Array($0) }
        let n = withUnsafeBytes(of: number.bigEndian) { Array($0) }
        // Version 4 and variant bits set, as a random uuid has them.
        return UUID(uuid: (s[0], s[1], s[2], s[3], s[4], s[5], (s[6] & 0x0F) | 0x40, s[7],
                           (n[0] & 0x3F) | 0x80, n[1], n[2], n[3], n[4], n[5], n[6], n[7]))
    }

    public var totalOutcomes: Int { patients * tasksPerPatient * days }
    /// Patients, care plans and tasks.
    public var totalEntities: Int { patients * (2 + tasksPerPatient) }

    public func patientID(_ patient: Int) -> String { "\(idPrefix)patient-\(patient + 1)" }
    public func carePlanID(_ patient: Int) -> String { "\(idPrefix)careplan-\(patient + 1)" }
    public func taskID(_ patient: Int, _ task: Int) -> String { "\(idPrefix)task-\(patient + 1)-\(task + 1)" }

    /// The patients (all, or those of `range`), their care plans and their tasks.
    public func entityBatch(patients range: Range<Int>? = nil) throws -> StoreBatch {
        var batch = StoreBatch()
        for patient in range ?? 0..<patients {
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
                    metadata: EntityMetadata(uuid: taskUUID(patient, task), effectiveDate: start, timezone: utc)))
            }
        }
        return batch
    }

    /// The outcomes of days `days` (one per task per day: occurrence index = day number), of all
    /// patients or those of `range`.
    public func outcomeBatch(days: Range<Int>, patients range: Range<Int>? = nil) -> StoreBatch {
        var batch = StoreBatch()
        var uuids = VersionUUIDGenerator()
        for day in days {
            let dayStart = start.addingTimeInterval(Double(day) * 86_400)
            for patient in range ?? 0..<patients {
                for task in 0..<tasksPerPatient {
                    let value = OutcomeValue(.double(Double(100 + (patient + task + day) % 60)), units: "mmHg", kind: "systolic")
                    batch.add(Outcome(
                        taskUUID: taskUUID(patient, task), taskID: taskID(patient, task),
                        taskOccurrenceIndex: day, values: [value],
                        metadata: EntityMetadata(uuid: uuids.next(), effectiveDate: dayStart, timezone: utc)))
                }
            }
        }
        return batch
    }

    /// The most outcomes of one day in one batch of ``fill(_:daysPerBatch:beforeBatch:progress:)``: a day
    /// of a very large set is split by patients, so that memory stays bounded and progress shows at once.
    public static let maximumBatchChanges = 100_000

    /// Writes everything into `store`: the entities, then the outcomes `daysPerBatch` days per batch
    /// (when one day alone has more than ``maximumBatchChanges`` outcomes, one day of some patients per
    /// batch), calling `progress` after each batch. `beforeBatch` runs before each outcome batch is applied (with its size).
    public func fill(
        _ store: any Store, daysPerBatch: Int = 1, beforeBatch: (Int) -> Void = { _ in },
        progress: (Progress) -> Void = { _ in }
    ) throws {
        var state = Progress(entities: 0, outcomes: 0, totalOutcomes: totalOutcomes, daysDone: 0)
        // Entities cost more to write than outcomes (JSON payloads, reference checks): smaller batches.
        let entityChunk = max(1, Self.maximumBatchChanges / 10 / (2 + tasksPerPatient))
        for first in stride(from: 0, to: patients, by: entityChunk) {
            let range = first..<min(patients, first + entityChunk)
            try store.apply(try entityBatch(patients: range))
            state.entities += range.count * (2 + tasksPerPatient)
            progress(state)
        }
        guard tasksPerPatient > 0 else { return }
        // `daysPerBatch` days per transaction, as asked; only when one day alone is over the maximum is
        // each day split by patients.
        let oneDay = patients * tasksPerPatient
        let step = oneDay > Self.maximumBatchChanges ? 1 : max(1, daysPerBatch)
        let patientChunk = oneDay > Self.maximumBatchChanges ? max(1, Self.maximumBatchChanges / tasksPerPatient) : max(1, patients)
        var day = 0
        while day < days {
            let dayRange = day..<min(days, day + step)
            for first in stride(from: 0, to: patients, by: patientChunk) {
                let batch = outcomeBatch(days: dayRange, patients: first..<min(patients, first + patientChunk))
                beforeBatch(batch.count)
                try store.apply(batch)
                state.outcomes += batch.count
                progress(state)
            }
            state.daysDone = dayRange.upperBound
            day = dayRange.upperBound
        }
    }
}
