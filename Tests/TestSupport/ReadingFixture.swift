import CareModel
import Foundation
import Mapping
import Store

/// A store for the readings tests: patients `Patient/p1` (made from FHIR Patient `p1`) and `Patient/p2`;
/// for p1 a care plan with a daily weight task (07:00 for two hours) and logs (all-day, daily, from
/// ``day0``) for blood pressure 85354-9, oxygen saturation 2708-6, steps 55423-8 and glucose 2339-0;
/// the logs are in the daily shape stored before reading days (LogReadingDays cuts them).
public struct ReadingFixture {
    /// 2025-03-03 00:00 in America/Chicago.
    public static let zone = TimeZone(identifier: "America/Chicago")!
    public static let day0 = Date(timeIntervalSince1970: 1_740_981_600)

    public let store: SQLiteStore
    public var tasks: [String: CareTask] = [:]

    /// The rows the tests read readings by: the shipped table (Mappings/healthkit.yaml).
    public static func kinds() throws -> ReadingKinds {
        ReadingKinds(table: try HealthKitTable.defaults())
    }

    /// In memory, or in the SQLite file `path`.
    public init(path: String? = nil) throws {
        store = try path.map { try SQLiteStore(path: $0) } ?? SQLiteStore.inMemory()
        tasks = try Self.fill(store)
    }

    /// Writes the fixture's patients, plan and tasks into `store` (any store: the app API tests run on
    /// PostgreSQL too); returns the tasks by name.
    public static func fill(_ store: any Store) throws -> [String: CareTask] {
        var tasks: [String: CareTask] = [:]
        var batch = StoreBatch()
        let zone = Self.zone
        func metadata(_ source: (String, String)? = nil) -> EntityMetadata {
            var metadata = EntityMetadata(effectiveDate: Self.day0.addingTimeInterval(-30 * 86_400), timezone: zone)
            if let source { metadata.provenance = Provenance(sourceSystem: "test", fhirType: source.0, fhirID: source.1) }
            return metadata
        }
        var patients: [Patient] = []
        for name in ["p1", "p2"] {
            let patient = Patient(id: "Patient/\(name)", name: PersonName(givenName: "Given", familyName: name), metadata: metadata(("Patient", name)))
            batch.add(patient)
            patients.append(patient)
        }
        let plan = CarePlan(id: "CarePlan/plan-p1", title: "Home monitoring", patientUUID: patients[0].uuid, patientID: patients[0].id, metadata: metadata())
        batch.add(plan)
        let start = Self.day0.addingTimeInterval(-30 * 86_400)
        var weight = CareTask(
            id: "Task/weight", title: "Weigh yourself", schedule: try Schedule.dailyAtTime(
                hour: 7, minutes: 0, start: start, end: nil, text: nil, duration: .hours(2), timeZone: zone),
            carePlanUUID: plan.uuid, metadata: metadata())
        weight.carePlanID = plan.id
        weight.metadata.linkage.codes = ["http://loinc.org|29463-7"]
        batch.add(weight)
        tasks["weight"] = weight
        for (name, code, title) in [("bp", "85354-9", "Blood pressure"), ("spo2", "2708-6", "Oxygen saturation"), ("steps", "55423-8", "Steps"),
                                    ("glucose", "2339-0", "Glucose")] {
            var log = CareTask(
                id: "Task/log-\(name)", title: title, schedule: try Schedule.dailyAtTime(
                    hour: 0, minutes: 0, start: start, end: nil, text: nil, duration: .allDay, timeZone: zone),
                carePlanUUID: nil, metadata: metadata())
            log.metadata.tags = [CareTask.observationLogTag]
            log.metadata.linkage.codes = ["http://loinc.org|\(code)"]
            log.metadata.linkage.patientID = "Patient/p1"
            batch.add(log)
            tasks[name] = log
        }
        try store.apply(batch)
        return tasks
    }
}
