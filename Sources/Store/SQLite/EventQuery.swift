import CareModel
import Foundation
import GRDB
import GRDBSQLite

/// "The events of patient P between two dates": the task versions of the patient's care plans and of
/// their tasks of no care plan (medication orders, Observation logs), each version's occurrences in the
/// time it owns, and the outcomes recorded for them.
///
/// Events are computed from schedules, never stored. Each occurrence comes from the task version that
/// owned its start time (from the version's effective date to the next version's) and is joined to the
/// current outcome of that version and occurrence index. A log's occurrences are no to-dos: only those
/// with an outcome (a reading) are events. With `tableScan`, every table is read without its indexes
/// (`NOT INDEXED`): the same query as a plain scan, the baseline of `caregate-bench store`.
struct EventQuery {
    let db: Database
    let codec: EntityRowCodec
    let taskCache: TaskVersionCache
    /// Outcome versions decoded before, by uuid (nil: every outcome row decoded, as the table scan does).
    var outcomeVersions: DecodedVersionCache<Outcome>? = nil
    var tableScan = false

    func events(patientID: String, in interval: DateInterval) throws -> [Event] {
        let plans = try String.fetchAll(
            try db.cachedStatement(sql: "SELECT DISTINCT id FROM carePlan\(hint) WHERE patientID = ?"), arguments: [patientID])
        // The tasks of the patient's plans, and those of no plan whose FHIR linkage names the patient (the
        // partial index `task_of_no_carePlan_by_patient` serves the second term).
        let ofPlans = plans.isEmpty ? "0" : "carePlanID IN (\(SQLText.placeholders(plans.count)))"
        // The version columns only: task content comes from the cache, decoded once per store. Read in
        // place by position (``TaskVersionColumns``): a GRDB `Row` per task cost more than its occurrences.
        let statement = try db.cachedStatement(sql: """
            SELECT \(TaskVersionColumns.selectList)
            FROM task\(hint)
            WHERE (\(ofPlans) OR (carePlanID IS NULL AND \(StoreSchema.linkedPatientOfTask) = ?))
              AND deletedDate IS NULL AND effectiveDate < ?
            ORDER BY rowID
            """)
        try statement.setArguments(StatementArguments(plans) + [patientID, interval.end.storeSeconds])
        var versions: [(task: CareTask?, rowID: Int64, nextEffectiveDate: Date?)] = []
        do {
            let raw = RawStatement(statement, in: db)
            // Left as GRDB expects a cached statement: reset, no bindings.
            defer { raw.reset() }
            let columns = TaskVersionColumns(statement: statement.sqliteStatement)
            while try raw.step() {
                let next = raw.isNull(TaskVersionColumns.nextEffectiveDate) ? nil : Date(storeSeconds: raw.double(TaskVersionColumns.nextEffectiveDate))
                versions.append((codec.cachedTask(columns, cache: taskCache), raw.int64(0), next))
            }
        }

        var scheduled: [(task: CareTask, event: ScheduleEvent)] = []
        for version in versions {
            let task = try version.task ?? decodedTask(rowID: version.rowID)
            for event in EventAssembly.occurrences(of: task, ownedUntil: version.nextEffectiveDate, in: interval) {
                scheduled.append((task, event))
            }
        }
        guard !scheduled.isEmpty else { return [] }
        let outcomes = try currentOutcomes(for: scheduled)
        return EventAssembly.events(scheduled) { outcomes[OccurrenceKey(task: $0, occurrence: $1)] }
    }

    /// The task of row `rowID`, whose content was not in the cache: read whole and decoded (and cached).
    private func decodedTask(rowID: Int64) throws -> CareTask {
        guard let full = try Row.fetchOne(try db.cachedStatement(sql: "SELECT * FROM task WHERE rowID = ?"), arguments: [rowID]) else {
            throw StoreError.database(message: "task row \(rowID) vanished during a read")
        }
        return try codec.task(full, cache: taskCache)
    }

    private struct OccurrenceKey: Hashable {
        let task: UUID
        let occurrence: Int
    }

    /// The current outcomes of the scheduled occurrences, by task version and occurrence index.
    private func currentOutcomes(for scheduled: [(task: CareTask, event: ScheduleEvent)]) throws -> [OccurrenceKey: Outcome] {
        let taskUUIDs = Array(Set(scheduled.map(\.task.uuid)))
        let first = scheduled.map(\.event.start).min() ?? Date()
        let last = scheduled.map(\.event.start).max() ?? Date()
        let condition = """
            WHERE taskUUID IN (\(SQLText.placeholders(taskUUIDs.count))) AND eventStart >= ? AND eventStart <= ?
              AND nextVersionUUID IS NULL AND deletedDate IS NULL
            """
        let bounds = (first.storeSeconds, last.storeSeconds)
        var outcomes: [OccurrenceKey: Outcome] = [:]
        for outcome in try currentOutcomeVersions(condition, taskUUIDs: taskUUIDs, eventStarts: bounds) {
            let key = OccurrenceKey(task: outcome.taskUUID, occurrence: outcome.taskOccurrenceIndex)
            // Several tips (devices' versions in conflict): the one created last.
            if let other = outcomes[key], !EventAssembly.shows(outcome, over: other) { continue }
            outcomes[key] = outcome
        }
        return outcomes
    }

    /// The outcome versions of the rows `condition` selects, in the rows' order: from ``outcomeVersions``
    /// when decoded before (a current version's row never changes but for its link to a later version,
    /// which a current row has not), the others read whole and decoded.
    private func currentOutcomeVersions(_ condition: String, taskUUIDs: [UUID], eventStarts: (Double, Double)) throws -> [Outcome] {
        guard let cache = outcomeVersions, !tableScan else {
            let arguments = StatementArguments(taskUUIDs) + [eventStarts.0, eventStarts.1]
            let rows = try Row.fetchAll(try db.cachedStatement(sql: "SELECT * FROM outcome\(hint) \(condition)"), arguments: arguments)
            let values = try valuesOfOutcomes(SQLiteStore.rowsWithExtraValues(rows))
            return try rows.map { row in
                let rowID: Int64? = row["rowID"]
                return try codec.outcome(row, values: rowID.flatMap { values[$0] } ?? [])
            }
        }
        var versions: [Outcome?] = []
        var slotOfRow: [Int64: Int] = [:]
        // Bound and read by position (``RawStatement``): a GRDB `Row` per key cost more than the query.
        let keys = RawStatement(try db.cachedStatement(sql: "SELECT rowID, uuid FROM outcome \(condition)"), in: db)
        defer { keys.reset() }
        for (offset, uuid) in taskUUIDs.enumerated() { keys.bind(Int32(offset + 1), uuid) }
        keys.bind(Int32(taskUUIDs.count + 1), eventStarts.0)
        keys.bind(Int32(taskUUIDs.count + 2), eventStarts.1)
        while try keys.step() {
            let rowID = keys.int64(0)
            // A uuid not stored as 16 bytes is no key of the cache: the row is read whole.
            if let uuid = keys.uuid(1), let known = cache.version(uuid) {
                versions.append(known)
            } else {
                slotOfRow[rowID] = versions.count
                versions.append(nil)
            }
        }
        // The others read whole, by position, as an export reads them (in row order: one per row id, the
        // rows selected above in this same snapshot).
        let missed = slotOfRow.keys.sorted()
        let read = try OutcomeRowReader.outcomes(rowIDs: missed, where: ("1", []), codec: codec, db)
        guard read.count == missed.count else { throw StoreError.database(message: "an outcome row vanished during a read") }
        for (rowID, entity) in zip(missed, read) {
            guard case .outcome(let outcome) = entity, let slot = slotOfRow[rowID] else { continue }
            cache.insert(outcome, uuid: outcome.metadata.uuid)
            versions[slot] = outcome
        }
        return versions.compactMap { $0 }
    }

    private func valuesOfOutcomes(_ rowIDs: [Int64]) throws -> [Int64: [OutcomeValue]] {
        guard tableScan else { return try SQLiteStore.outcomeValues(rowIDs: rowIDs, db) }
        guard !rowIDs.isEmpty else { return [:] }
        var values: [Int64: [OutcomeValue]] = [:]
        let rows = try Row.fetchCursor(
            db, sql: "SELECT * FROM outcomeValue NOT INDEXED WHERE outcomeRowID IN (\(SQLText.placeholders(rowIDs.count))) ORDER BY outcomeRowID, position",
            arguments: StatementArguments(rowIDs))
        while let row = try rows.next() {
            guard let rowID: Int64 = row["outcomeRowID"], let value = EntityRowCodec.outcomeValue(row) else { continue }
            values[rowID, default: []].append(value)
        }
        return values
    }

    private var hint: String { tableScan ? " NOT INDEXED" : "" }
}

extension SQLiteStore {
    public func events(patientID: String, in interval: DateInterval) throws -> [Event] {
        try readSnapshot { db in
            try EventQuery(db: db, codec: EntityRowCodec(), taskCache: taskCache).events(patientID: patientID, in: interval)
        }
    }

    /// The patient and the care plans come from ``DecodedVersionCache``s when their current versions were
    /// decoded before (the rows' uuids read, not their JSON), as do the day's outcomes: the caches hold
    /// what decoding the rows now would give.
    public func dayView(patientID: String, day: (Patient) throws -> DateInterval) throws -> DayViewRead? {
        try readSnapshot { db in
            guard let patient = try currentVersions(.patient, "id = ?", patientID, cache: patientVersions, db, { entity -> Patient? in
                if case .patient(let value) = entity { value } else { nil }
            }).first else { return nil }
            var query = EventQuery(db: db, codec: EntityRowCodec(), taskCache: taskCache)
            query.outcomeVersions = outcomeVersions
            let events = try query.events(patientID: patientID, in: try day(patient))
            let carePlans = try currentVersions(.carePlan, "patientID = ?", patientID, cache: carePlanVersions, db) { entity -> CarePlan? in
                if case .carePlan(let value) = entity { value } else { nil }
            }
            return DayViewRead(patient: patient, events: events, carePlans: carePlans)
        }
    }

    /// The current (not deleted) versions of `kind` that `condition` (one parameter, `argument`) selects, in row order, as
    /// ``fetchEntities(_:_:_:)`` reads them: each from `cache` when its uuid is there, else its row read
    /// whole, decoded and kept.
    private func currentVersions<E: Sendable>(
        _ kind: EntityKind, _ condition: String, _ argument: String, cache: DecodedVersionCache<E>, _ db: Database,
        _ value: (CareEntity) -> E?
    ) throws -> [E] {
        let table = StoreSchema.Table.entity(kind)
        let keys = RawStatement(
            try db.cachedStatement(sql: "SELECT rowID, uuid FROM \(table) WHERE nextVersionUUID IS NULL AND deletedDate IS NULL AND \(condition) ORDER BY rowID"),
            in: db)
        defer { keys.reset() }
        keys.bind(1, argument)
        var found: [(rowID: Int64, uuid: UUID?)] = []
        while try keys.step() { found.append((keys.int64(0), keys.uuid(1))) }
        let codec = EntityRowCodec()
        var versions: [E] = []
        for (rowID, uuid) in found {
            if let uuid, let known = cache.version(uuid) {
                versions.append(known)
                continue
            }
            guard let full = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM \(table) WHERE rowID = ?"), arguments: [rowID]),
                  let version = value(try codec.entity(kind, row: full))
            else { throw StoreError.database(message: "\(kind) row \(rowID) vanished during a read") }
            if let uuid { cache.insert(version, uuid: uuid) }
            versions.append(version)
        }
        return versions
    }

    /// The same query as ``events(patientID:in:)`` with every index ignored: the baseline of the store
    /// benchmark.
    public func eventsByTableScan(patientID: String, in interval: DateInterval) throws -> [Event] {
        try readSnapshot { db in
            try EventQuery(db: db, codec: EntityRowCodec(), taskCache: taskCache, tableScan: true).events(patientID: patientID, in: interval)
        }
    }
}

/// The current row of the day's task statement, whose select list is ``selectList``: a task version's
/// columns read from SQLite by position, with no `Row` made, converted as ``StatementColumns`` converts
/// them (the columns the list lacks are absent, as from a `Row` of the same list).
private struct TaskVersionColumns: StoredColumns {
    let statement: SQLiteStatement

    private static let order: [StoredColumn] = [.rowID, .uuid, .effectiveDate, .deletedDate, .previousVersionUUID, .nextVersionUUID]
    private static let later: [StoredColumn] = [.createdDate, .updatedDate]
    /// The version columns, then `nextEffectiveDate` (not a ``StoredColumn``), then the creation dates.
    static let selectList = (order.map(\.name) + ["nextEffectiveDate"] + later.map(\.name)).joined(separator: ", ")
    /// The position of `nextEffectiveDate`.
    static let nextEffectiveDate = Int32(order.count)
    /// Each ``StoredColumn``'s position in the select list (by raw value), nil when absent.
    private static let positions: [Int32?] = StoredColumn.allCases.map { column in
        if let index = order.firstIndex(of: column) { return Int32(index) }
        return later.firstIndex(of: column).map { Int32(order.count + 1 + $0) }
    }

    subscript<Value: DatabaseValueConvertible>(_ column: StoredColumn) -> Value? {
        guard let index = Self.positions[Int(column.rawValue)] else { return nil }
        let stored = DatabaseValue(sqliteStatement: statement, index: index)
        return stored.isNull ? nil : Value.fromDatabaseValue(stored)
    }
}
