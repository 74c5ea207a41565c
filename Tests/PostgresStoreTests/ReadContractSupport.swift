import CareModel
import Foundation
import PostgresStore
import Store
import XCTest

/// Small entities for the read contracts (as StoreTests' fixtures): patients, care plans, tasks on daily
/// schedules, outcomes, all in UTC.
enum ReadFixtures {
    static let utc = TimeZone(identifier: "UTC")!
    /// 2025-03-01 00:00 UTC.
    static let day0 = Date(timeIntervalSince1970: 1_740_787_200)
    /// The date every batch of the contracts is written at, so that both stores stamp the same dates.
    static let writtenAt = Date(timeIntervalSince1970: 1_750_000_000.25)

    static func day(_ n: Int, hour: Int = 0) -> Date {
        day0.addingTimeInterval(Double(n) * 86_400 + Double(hour) * 3_600)
    }

    static func interval(days first: Int, _ last: Int) -> DateInterval {
        DateInterval(start: day(first), end: day(last))
    }

    static func patient(_ id: String = "p1", given: String = "Ada", effective: Date = day0, provenance: Provenance? = nil) -> Patient {
        Patient(id: id, name: PersonName(givenName: given, familyName: "Lovelace"),
                metadata: EntityMetadata(effectiveDate: effective, timezone: utc, provenance: provenance))
    }

    static func carePlan(_ id: String = "cp1", patient: Patient, title: String = "Hypertension", effective: Date? = nil) -> CarePlan {
        CarePlan(id: id, title: title, patientUUID: patient.uuid,
                 metadata: EntityMetadata(effectiveDate: effective ?? patient.effectiveDate, timezone: utc))
    }

    /// A task due daily at `hour`:00 UTC from day 0 (until `endDay`, exclusive, when given).
    static func task(
        _ id: String = "t1", plan: CarePlan?, hour: Int = 8, endDay: Int? = nil, title: String = "Measure blood pressure", effective: Date = day0
    ) throws -> CareTask {
        let schedule = try Schedule.dailyAtTime(
            hour: hour, minutes: 0, start: day0, end: endDay.map { day($0) }, text: nil, duration: .minutes(30), timeZone: utc)
        return CareTask(id: id, title: title, schedule: schedule, carePlanUUID: plan?.uuid,
                        metadata: EntityMetadata(effectiveDate: effective, timezone: utc))
    }

    /// A task of no care plan (a medication order) whose FHIR linkage names `patientID`.
    static func order(_ id: String, of patientID: String, hour: Int, endDay: Int? = nil) throws -> CareTask {
        var task = try task(id, plan: nil, hour: hour, endDay: endDay, title: "Lisinopril 10 mg")
        task.metadata.linkage.patientID = patientID
        return task
    }

    /// An Observation log of `patientID`: all day, every day, from day 0.
    static func log(of patientID: String) throws -> CareTask {
        let schedule = try Schedule(composing: [ScheduleElement(
            start: day0, end: nil, interval: DateComponents(day: 1), duration: .allDay, timeZone: utc)])
        var task = CareTask(id: "\(patientID)#log-weight", title: "Body weight", impactsAdherence: false, schedule: schedule,
                            metadata: EntityMetadata(effectiveDate: day0, timezone: utc))
        task.metadata.linkage.patientID = patientID
        task.metadata.tags = [CareTask.observationLogTag]
        return task
    }

    static func outcome(_ task: CareTask, occurrence: Int, value: Double = 120, values extra: Int = 0) -> Outcome {
        var values = [OutcomeValue(.double(value), units: "mmHg", kind: "systolic")]
        for index in 0..<extra { values.append(OutcomeValue(.text("note \(index)"), kind: "note")) }
        return Outcome(taskUUID: task.uuid, taskOccurrenceIndex: occurrence, values: values,
                       metadata: EntityMetadata(effectiveDate: day(occurrence, hour: 9), timezone: utc))
    }

    static func batch(_ fill: (inout StoreBatch) throws -> Void) rethrows -> StoreBatch {
        var batch = StoreBatch(date: writtenAt)
        try fill(&batch)
        return batch
    }
}

/// A SQLite and a PostgreSQL store written the same batches, and the assertion that a read gives equal
/// results, in equal order, on both.
///
/// The versions a store makes itself (updates, tombstones) get random uuids, different in each store; so
/// results are compared with every uuid replaced by a label given in order of first appearance, one
/// labelling per store kept for the whole test (a uuid read twice gets the same label both times). Reads
/// must be asked in the same order of both stores, which ``assertSame(_:_:file:line:)`` does.
final class ReadStorePair {
    let sqlite: SQLiteStore
    let postgres: PostgreSQLStore
    private let sqliteLabels = UUIDLabels()
    private let postgresLabels = UUIDLabels()
    private let both: BothStores
    private let database = "db_\(UUID().uuidString.prefix(8).lowercased())"

    init(_ both: BothStores, _ name: String) throws {
        self.both = both
        sqlite = try both.sqlite(name)
        postgres = try both.postgres(database: database)
    }

    /// Another PostgreSQL store on the same database: what a second `caregate serve` instance opens.
    func anotherPostgres() throws -> PostgreSQLStore {
        try both.postgres(database: database, create: false)
    }

    var stores: [(name: String, store: any AppSyncStore, labels: UUIDLabels)] {
        [("SQLite", sqlite, sqliteLabels), ("PostgreSQL", postgres, postgresLabels)]
    }

    /// Gives the uuids `known` (made by the test, e.g. device processes) the same labels on both sides,
    /// before any read.
    func label(_ known: [UUID]) {
        for uuid in known {
            _ = sqliteLabels.label(uuid)
            _ = postgresLabels.label(uuid)
        }
    }

    /// Applies `batch` to both stores; both succeed with equal summaries, or both fail with the same error.
    @discardableResult
    func apply(_ batch: StoreBatch, file: StaticString = #filePath, line: UInt = #line) throws -> BatchSummary {
        let expected = Result { try sqlite.apply(batch) }
        let actual = Result { try postgres.apply(batch) }
        switch (expected, actual) {
        case (.success(let a), .success(let b)):
            XCTAssertEqual(sqliteLabels.normalise(a.versionUUIDs), postgresLabels.normalise(b.versionUUIDs), "the batches' version uuids", file: file, line: line)
            return a
        case (.failure(let a), .failure(let b)):
            XCTAssertEqual("\(a)", "\(b)", "the same refusal", file: file, line: line)
            throw a
        case (.success, .failure(let error)):
            XCTFail("SQLite applied the batch, PostgreSQL refused it: \(error)", file: file, line: line)
            throw error
        case (.failure(let error), .success):
            XCTFail("PostgreSQL applied the batch, SQLite refused it: \(error)", file: file, line: line)
            throw error
        }
    }

    /// Asserts that `read` gives the same result on both stores (uuids compared by label), and returns
    /// SQLite's.
    @discardableResult
    func assertSame<T: Encodable>(
        _ what: String, _ read: (any AppSyncStore) throws -> T, file: StaticString = #filePath, line: UInt = #line
    ) throws -> T {
        let (expected, actual) = try readBoth(what, read, file: file, line: line)
        let left = try sqliteLabels.normalise(expected), right = try postgresLabels.normalise(actual)
        if left != right {
            XCTFail("\(what): the stores differ\nSQLite:     \(left)\nPostgreSQL: \(right)", file: file, line: line)
        }
        return expected
    }

    /// Asserts that `read`, whose result holds no uuid, gives equal results on both stores; returns SQLite's.
    @discardableResult
    func assertEqual<T: Equatable>(
        _ what: String, _ read: (any AppSyncStore) throws -> T, file: StaticString = #filePath, line: UInt = #line
    ) throws -> T {
        let (expected, actual) = try readBoth(what, read, file: file, line: line)
        XCTAssertEqual(expected, actual, "\(what): the stores differ", file: file, line: line)
        return expected
    }

    /// `read` of SQLite, then of PostgreSQL (a failure of PostgreSQL's alone is reported as such).
    private func readBoth<T>(_ what: String, _ read: (any AppSyncStore) throws -> T, file: StaticString, line: UInt) throws -> (T, T) {
        let expected = try read(sqlite)
        do {
            return (expected, try read(postgres))
        } catch {
            XCTFail("\(what): PostgreSQL failed: \(error)", file: file, line: line)
            throw error
        }
    }
}

/// Labels for uuids in order of first appearance (`#1`, `#2`, ...).
final class UUIDLabels {
    private var labels: [String: Int] = [:]
    private static let pattern = try! NSRegularExpression(pattern: "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")

    func label(_ uuid: UUID) -> Int {
        label(uuid.uuidString.uppercased())
    }

    private func label(_ text: String) -> Int {
        if let known = labels[text] { return known }
        let next = labels.count + 1
        labels[text] = next
        return next
    }

    /// `value` as sorted-key JSON with each uuid replaced by its label.
    func normalise<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = String(decoding: try encoder.encode(value), as: UTF8.self)
        var result = ""
        var last = text.startIndex
        for match in Self.pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            guard let range = Range(match.range, in: text) else { continue }
            result += text[last..<range.lowerBound]
            result += "#\(label(String(text[range]).uppercased()))"
            last = range.upperBound
        }
        return result + text[last...]
    }

    func normalise(_ uuids: [UUID]) -> [Int] { uuids.map(label) }
}

/// A care entity as the contracts compare it (CareEntity itself is not Codable).
struct ComparableEntity: Encodable {
    let entity: CareEntity

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch entity {
        case .patient(let value): try container.encode(value)
        case .carePlan(let value): try container.encode(value)
        case .contact(let value): try container.encode(value)
        case .task(let value): try container.encode(value)
        case .outcome(let value): try container.encode(value)
        }
    }
}

/// A revision log read as the contracts compare it: stamps with their device clocks by label order.
struct ComparableLogRead: Encodable {
    struct Revision: Encodable {
        let serverClock: Int
        let deviceClocks: [String]
        let entities: [ComparableEntity]
    }

    let revisions: [Revision]
    let hasMore: Bool
    let serverClock: Int
    let deviceClocks: [String]
    let retiredClocks: [String]

    /// `clocks` as sorted "uuid=clock" texts (the uuids are labelled afterwards; the test labels device
    /// uuids first, so the order is the same on both sides).
    static func sorted(_ clocks: [UUID: Int]) -> [String] {
        clocks.map { "\($0.key.uuidString)=\($0.value)" }.sorted()
    }

    init(_ read: RevisionLogRead) {
        revisions = read.revisions.map {
            Revision(serverClock: $0.stamp.serverClock, deviceClocks: Self.sorted($0.stamp.deviceClocks), entities: $0.entities.map(ComparableEntity.init))
        }
        hasMore = read.hasMore
        serverClock = read.server.clock
        deviceClocks = Self.sorted(read.deviceClocks)
        retiredClocks = Self.sorted(read.retiredClocks)
    }
}

extension ReadStorePair {
    /// Every entity `forEachEntity` streams, as the contracts compare them.
    static func streamed(_ store: any Store, _ kind: EntityKind, _ query: EntityQuery) throws -> [ComparableEntity] {
        var entities: [ComparableEntity] = []
        try store.forEachEntity(kind, query) { entities.append(ComparableEntity(entity: $0)) }
        return entities
    }
}
