import CareModel
import Foundation
import Logging
import PostgresNIO
import PostgresStore
import Store
import XCTest

/// Small entities for the entity writer's contract tests: one patient, one care plan, tasks on daily
/// schedules, all in UTC (as StoreTests' StoreFixtures).
enum WriteFixtures {
    static let utc = TimeZone(identifier: "UTC")!
    /// 2025-03-01 00:00 UTC.
    static let day0 = Date(timeIntervalSince1970: 1_740_787_200)

    static func day(_ n: Int, hour: Int = 0) -> Date {
        day0.addingTimeInterval(Double(n) * 86_400 + Double(hour) * 3_600)
    }

    static func patient(_ id: String = "p1", effective: Date = day0, provenance: Provenance? = nil) -> Patient {
        Patient(id: id, name: PersonName(givenName: "Ada", familyName: "Lovelace"), metadata: EntityMetadata(effectiveDate: effective, timezone: utc, provenance: provenance))
    }

    static func carePlan(_ id: String = "cp1", patient: Patient) -> CarePlan {
        CarePlan(id: id, title: "Hypertension", patientUUID: patient.uuid, metadata: EntityMetadata(effectiveDate: patient.effectiveDate, timezone: utc))
    }

    /// A task due daily at `hour`:00 UTC from day 0 (until `endDay`, exclusive, when given).
    static func task(_ id: String = "t1", plan: CarePlan?, hour: Int = 8, endDay: Int? = nil, title: String = "Measure blood pressure", effective: Date = day0) throws -> CareTask {
        let schedule = try Schedule.dailyAtTime(hour: hour, minutes: 0, start: day0, end: endDay.map { day($0) }, text: nil, duration: .minutes(30), timeZone: utc)
        return CareTask(id: id, title: title, schedule: schedule, carePlanUUID: plan?.uuid, metadata: EntityMetadata(effectiveDate: effective, timezone: utc))
    }

    static func outcome(_ task: CareTask, occurrence: Int, value: Double = 120, provenance: Provenance? = nil) -> Outcome {
        Outcome(
            taskUUID: task.uuid, taskOccurrenceIndex: occurrence, values: [OutcomeValue(.double(value), units: "mmHg", kind: "systolic")],
            metadata: EntityMetadata(effectiveDate: day(occurrence, hour: 9), timezone: utc, provenance: provenance))
    }

    static func provenance(_ type: String, _ id: String, hash: String? = nil) -> Provenance {
        Provenance(sourceSystem: "https://ehr.example/fhir", fhirType: type, fhirID: id, versionID: "1", lastUpdated: day(0, hour: 1), contentHash: hash)
    }

    /// Patients a and b, each with a care plan (plan-a, plan-b) and a task (task-a, task-b), added in one batch.
    static func twoPatients() throws -> (StoreBatch, [CareTask]) {
        var batch = StoreBatch(date: day(0))
        var tasks: [CareTask] = []
        for name in ["a", "b"] {
            let patient = patient(name)
            let plan = carePlan("plan-\(name)", patient: patient)
            let task = try task("task-\(name)", plan: plan)
            batch.add(patient)
            batch.add(plan)
            batch.add(task)
            tasks.append(task)
        }
        return (batch, tasks)
    }

    /// The patient, care plan and task of most tests, added in one batch.
    static func basics() throws -> (Patient, CarePlan, CareTask, StoreBatch) {
        let patient = patient()
        let plan = carePlan(patient: patient)
        let task = try task(plan: plan)
        var batch = StoreBatch(date: day(0))
        batch.add(patient)
        batch.add(plan)
        batch.add(task)
        return (patient, plan, task, batch)
    }
}

/// Uuids a store made, named by the order they were first met (`00000000-...-<n>`), so that two stores'
/// versions compare equal; uuids the test gave stay as they are.
final class UUIDNames {
    private var names: [UUID: UUID] = [:]
    var given: Set<UUID> = []

    func name(_ uuid: UUID) -> UUID {
        if given.contains(uuid) { return uuid }
        if let known = names[uuid] { return known }
        let name = UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", names.count + 1))!
        names[uuid] = name
        return name
    }

    func names(_ uuids: [UUID]) -> [UUID] { uuids.map(name) }

    func normalised(_ entity: CareEntity) -> CareEntity {
        var entity = entity
        var metadata = entity.metadata
        metadata.uuid = name(metadata.uuid)
        metadata.previousVersionUUIDs = names(metadata.previousVersionUUIDs)
        metadata.nextVersionUUIDs = names(metadata.nextVersionUUIDs)
        entity.metadata = metadata
        switch entity {
        case .outcome(var outcome):
            outcome.taskUUID = name(outcome.taskUUID)
            entity = .outcome(outcome)
        case .task(var task):
            task.carePlanUUID = task.carePlanUUID.map(name)
            entity = .task(task)
        case .contact(var contact):
            contact.carePlanUUID = contact.carePlanUUID.map(name)
            entity = .contact(contact)
        case .carePlan(var plan):
            plan.patientUUID = plan.patientUUID.map(name)
            entity = .carePlan(plan)
        case .patient: break
        }
        return entity
    }

    /// Outbox ids by the order they were first met: a PostgreSQL identity does not give back the numbers
    /// a rolled-back batch took, SQLite's AUTOINCREMENT does, so the ids differ after a refused batch.
    private var outboxIDs: [Int64: Int64] = [:]

    func normalised(_ summary: BatchSummary) -> BatchSummary {
        var summary = summary
        summary.versionUUIDs = names(summary.versionUUIDs)
        summary.outboxEntryIDs = summary.outboxEntryIDs.map { id in
            if let known = outboxIDs[id] { return known }
            outboxIDs[id] = Int64(outboxIDs.count + 1)
            return Int64(outboxIDs.count)
        }
        return summary
    }
}

/// A test of the entity writer: pairs of stores (``StorePair``), closed when it ends.
class EntityWriteTestCase: XCTestCase {
    lazy var both = BothStores(for: self)
    private var pairs: [StorePair] = []

    override func tearDown() {
        for pair in pairs { pair.close() }
        pairs = []
        both.stop()
        super.tearDown()
    }

    /// A new pair of stores: SQLite in scratch folder `name`, PostgreSQL in a database of its own.
    func pair(_ name: String = "entity-write") throws -> StorePair {
        let pair = try StorePair(both, name: name)
        pairs.append(pair)
        return pair
    }
}

/// A SQLite and a PostgreSQL store given the same batches, compared after each.
final class StorePair {
    let sqlite: SQLiteStore
    let postgres: PostgreSQLStore
    let sqliteNames = UUIDNames()
    let postgresNames = UUIDNames()

    init(_ both: BothStores, name: String) throws {
        sqlite = try both.sqlite(name)
        postgres = try both.postgres()
    }

    /// Marks the uuids `batch` names as given by the test (tests build their entities, never read one
    /// back from one store to write it to both).
    private func noteGiven(_ batch: StoreBatch) {
        for change in batch.changes {
            var uuids: [UUID] = []
            switch change {
            case .add(let entity), .update(let entity), .upsert(let entity, _): uuids = [entity.metadata.uuid]
            case .appendVersion(let outcome): uuids = [outcome.metadata.uuid] + outcome.metadata.previousVersionUUIDs
            default: break
            }
            sqliteNames.given.formUnion(uuids)
            postgresNames.given.formUnion(uuids)
        }
    }

    /// Applies `batch` to both stores: both succeed with the same summary (uuids the stores made
    /// normalised), or both refuse it with the same ``StoreError``. The SQLite store's answer.
    @discardableResult
    func apply(_ batch: StoreBatch, file: StaticString = #filePath, line: UInt = #line) -> Result<BatchSummary, StoreError> {
        noteGiven(batch)
        let sqliteResult = Result { try sqlite.apply(batch) }
        let postgresResult = Result { try postgres.apply(batch) }
        switch (sqliteResult, postgresResult) {
        case (.success(let a), .success(let b)):
            XCTAssertEqual(postgresNames.normalised(b), sqliteNames.normalised(a), "the batch summaries differ", file: file, line: line)
            return .success(a)
        case (.failure(let a), .failure(let b)):
            XCTAssertEqual(b as? StoreError, a as? StoreError, "the refusals differ: SQLite \(a), PostgreSQL \(b)", file: file, line: line)
            return .failure((a as? StoreError) ?? .database(message: "\(a)"))
        case (.success, .failure(let b)):
            XCTFail("SQLite took the batch, PostgreSQL refused it: \(b)", file: file, line: line)
        case (.failure(let a), .success):
            XCTFail("SQLite refused the batch (\(a)), PostgreSQL took it", file: file, line: line)
        }
        return .failure(.database(message: "the stores differ"))
    }

    /// Both stores keep the same versions of `ids` of `kind`, in the same order; their number.
    @discardableResult
    func assertSameHistories(_ kind: EntityKind, ids: [String], file: StaticString = #filePath, line: UInt = #line) throws -> Int {
        let a = try sqlite.histories(kind, ids: ids).map(sqliteNames.normalised)
        let b = try postgres.histories(kind, ids: ids).map(postgresNames.normalised)
        XCTAssertEqual(b, a, "the histories of \(kind) \(ids) differ", file: file, line: line)
        if a != b {
            for (x, y) in zip(a, b) where x != y { print("DIFF sqlite: \(x)\nDIFF postgres: \(y)") }
            if a.count != b.count { print("DIFF counts \(a.count) \(b.count)") }
        }
        for id in ids {
            XCTAssertEqual(
                try postgres.history(kind, id: id).map(postgresNames.normalised), try sqlite.history(kind, id: id).map(sqliteNames.normalised),
                "the history of \(kind) \(id) differs", file: file, line: line)
        }
        var all: [CareEntity] = []
        try postgres.forEachVersion(kind) { all.append($0) }
        var allSQLite: [CareEntity] = []
        try sqlite.forEachVersion(kind) { allSQLite.append($0) }
        XCTAssertEqual(all.count, allSQLite.count, "every version of \(kind)", file: file, line: line)
        return a.count
    }

    /// Both stores' revision logs of `patientID` file the same versions under the same clocks and stamps,
    /// and their clocks agree.
    func assertSameRevisions(patientID: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let expected = try sqlite.revisions(patientID: patientID, afterClock: 0, maxEntities: 1_000_000, knownBy: nil) { _ in true }
        let found = try PostgresRevisionReader(store: postgres).revisions(patientID: patientID)
        XCTAssertEqual(found.clock, try sqlite.serverClock().clock, "the server clocks", file: file, line: line)
        XCTAssertEqual(found.deviceClocks, expected.deviceClocks, "the served device clocks of \(patientID)", file: file, line: line)
        XCTAssertEqual(found.stamps.map(\.stamp), expected.revisions.map(\.stamp), "the stamps of \(patientID)", file: file, line: line)
        XCTAssertEqual(
            found.stamps.map { $0.entities.map(postgresNames.normalised) }, expected.revisions.map { $0.entities.map(sqliteNames.normalised) },
            "the versions filed under \(patientID)", file: file, line: line)
    }

    /// The first column of the first row of `sql` (a count) on the PostgreSQL store.
    func postgresCount(_ sql: String) throws -> Int {
        try postgres.database.run { client in
            for try await value in try await client.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "test")).decode(Int64.self) {
                return Int(value)
            }
            return 0
        }
    }

    func close() {
        postgres.close()
    }
}

/// The PostgreSQL store's revision log read straight from its tables (the app API's reads are another
/// helper's): each stamp of a patient with the versions filed under it, in the order filed.
struct PostgresRevisionReader {
    let store: PostgreSQLStore

    struct Read: Sendable {
        var clock: Int
        var deviceClocks: [UUID: Int]
        var stamps: [(stamp: RevisionStamp, entities: [CareEntity])]
    }

    func revisions(patientID: String) throws -> Read {
        let logger = Logger(label: "test")
        return try store.database.run { client in
            try await client.withConnection { connection in
                let clock = try await PostgresServerClock.serverClock(on: connection).clock
                var devices: [UUID: Int] = [:]
                for try await (process, value) in try await connection.query(
                    "SELECT process_id, clock FROM patient_knowledge WHERE patient_id = \(patientID) AND served", logger: logger
                ).decode((String, Int64).self) {
                    if let uuid = UUID(uuidString: process) { devices[uuid] = Int(value) }
                }
                var stamps: [(stamp: RevisionStamp, entities: [CareEntity])] = []
                var rows: [(Int64, String)] = []
                for try await row in try await connection.query(
                    "SELECT server_clock, processes FROM revision_stamp WHERE patient_id = \(patientID) ORDER BY server_clock", logger: logger
                ).decode((Int64, String).self) { rows.append(row) }
                for (serverClock, processes) in rows {
                    var clocks: [UUID: Int] = [:]
                    let parsed = (try? JSONSerialization.jsonObject(with: Data(processes.utf8))) as? [[String: Any]] ?? []
                    for entry in parsed {
                        if let id = entry["id"] as? String, let uuid = UUID(uuidString: id), let value = entry["clock"] as? Int { clocks[uuid] = value }
                    }
                    var filed: [(String, Int64)] = []
                    for try await row in try await connection.query(
                        "SELECT entity_kind, entity_row_id FROM revision WHERE patient_id = \(patientID) AND server_clock = \(serverClock) ORDER BY row_id",
                        logger: logger
                    ).decode((String, Int64).self) { filed.append(row) }
                    var entities: [CareEntity] = []
                    for (kindName, rowID) in filed {
                        guard let kind = EntityKind(rawValue: kindName) else { continue }
                        let query = PostgresQuery(
                            unsafeSQL: "SELECT \(PostgresEntityCodec.selectList(kind)) FROM \(PostgresEntityCodec.table(kind)) WHERE row_id = $1",
                            binds: { var b = PostgresBindings(); b.append(rowID); return b }())
                        for try await row in try await connection.query(query, logger: logger) {
                            entities.append(try PostgresEntityCodec.decode(kind: kind, row: row).entity)
                        }
                    }
                    stamps.append((RevisionStamp(serverClock: Int(serverClock), deviceClocks: clocks), entities))
                }
                return Read(clock: clock, deviceClocks: devices, stamps: stamps)
            }
        }
    }
}
