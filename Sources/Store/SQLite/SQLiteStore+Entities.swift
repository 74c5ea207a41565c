import CareModel
import Foundation
import GRDB

// Batches, and the reads of care entities.
extension SQLiteStore: Store {
    /// Applies every change of `batch` in one transaction; on any error the whole batch is rolled back
    /// and the error (a ``StoreError`` for anything the input caused) is rethrown.
    @discardableResult
    public func apply(_ batch: StoreBatch) throws -> BatchSummary {
        let now = batch.date ?? Date()
        let (summary, read, changed) = try writeTransaction { db in
            taskCache.validate(dataVersion: try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? 0)
            var writer = BatchWriter(db: db, now: now, codec: EntityRowCodec(), taskCache: taskCache)
            let changes = batch.changes
            var position = changes.startIndex
            while position < changes.endIndex {
                // A long run of outcome adds (a bulk import) is written task by task.
                var end = position
                while end < changes.endIndex, case .add(.outcome) = changes[end] { end += 1 }
                if end - position >= BatchWriter.sortedRunMinimum {
                    try writer.addOutcomes(changes[position..<end])
                } else if case .transition(_, let step) = changes[position],
                          case let run = Self.outboxRun(changes, from: position, taking: step), run.ids.count > 1 {
                    // A run of outbox entries taking the same step (an export marking what it sent).
                    try writer.transition(run.ids, step)
                    end = run.end
                } else {
                    end = max(end, position + 1)
                    for change in changes[position..<end] { try writer.apply(change) }
                }
                position = end
            }
            return (writer.summary, writer.taskVersionsFetched, writer.taskVersionsChanged)
        }
        taskCache.publish(read, changed: changed)
        return summary
    }

    /// The ids of the consecutive changes from `position` that move an outbox entry by `step`, and
    /// where they end.
    private static func outboxRun(_ changes: [StoreChange], from position: Int, taking step: OutboxTransition) -> (ids: [Int64], end: Int) {
        var ids: [Int64] = []
        var end = position
        while end < changes.endIndex, case .transition(let id, let next) = changes[end], next == step {
            ids.append(id)
            end += 1
        }
        return (ids, end)
    }

    public func patients(_ query: EntityQuery = .current) throws -> [Patient] {
        try entities(.patient, query).compactMap { if case .patient(let value) = $0 { value } else { nil } }
    }

    public func carePlans(_ query: EntityQuery = .current) throws -> [CarePlan] {
        try entities(.carePlan, query).compactMap { if case .carePlan(let value) = $0 { value } else { nil } }
    }

    public func contacts(_ query: EntityQuery = .current) throws -> [Contact] {
        try entities(.contact, query).compactMap { if case .contact(let value) = $0 { value } else { nil } }
    }

    public func tasks(_ query: EntityQuery = .current) throws -> [CareTask] {
        try entities(.task, query).compactMap { if case .task(let value) = $0 { value } else { nil } }
    }

    public func outcomes(_ query: EntityQuery = .current) throws -> [Outcome] {
        try entities(.outcome, query).compactMap { if case .outcome(let value) = $0 { value } else { nil } }
    }

    public func tasks(carePlanID: String, _ query: EntityQuery = .current) throws -> [CareTask] {
        var filter = try Self.filter(.task, query)
        filter.sql += " AND carePlanID = ?"
        filter.arguments += [carePlanID]
        return try readSnapshot { db in
            try fetchEntities(.task, filter, db).compactMap { if case .task(let value) = $0 { value } else { nil } }
        }
    }

    public func history(_ kind: EntityKind, id: String) throws -> [CareEntity] {
        var filter: (sql: String, arguments: StatementArguments)
        if kind == .outcome {
            guard let (taskUUID, occurrence) = BatchWriter.parseOutcomeID(id) else { return [] }
            filter = ("taskUUID = ? AND occurrenceIndex = ?", [taskUUID, occurrence])
        } else {
            filter = ("id = ?", [id])
        }
        return try readSnapshot { db in try fetchEntities(kind, filter, db) }
    }

    public func histories(_ kind: EntityKind, ids: [String]) throws -> [CareEntity] {
        if kind == .outcome {
            return try readSnapshot { db in try outcomes(ids: ids, where: ("1", []), currentOnly: false, db) }
        }
        let unique = Array(Set(ids))
        return try readSnapshot { db in
            var rows: [Row] = []
            for chunk in SQLText.statementChunks(unique) {
                rows += try Row.fetchAll(
                    db, sql: "SELECT * FROM \(StoreSchema.Table.entity(kind)) WHERE id IN (\(SQLText.placeholders(chunk.count)))",
                    arguments: StatementArguments(Array(chunk)))
            }
            rows.sort { (($0["rowID"] as Int64?) ?? 0) < (($1["rowID"] as Int64?) ?? 0) }
            return try entities(kind, rows: rows, codec: EntityRowCodec(), db)
        }
    }

    /// By the unique index on `task.uuid`; contents the store decoded before come from its task cache.
    public func taskVersions(uuids: [UUID], ids: [String]) throws -> [CareTask] {
        let unique = Array(Set(uuids))
        return try readSnapshot { db in
            var rows: [Row] = []
            for chunk in SQLText.statementChunks(unique) {
                rows += try Row.fetchAll(
                    db, sql: "SELECT * FROM task WHERE uuid IN (\(SQLText.placeholders(chunk.count)))", arguments: StatementArguments(Array(chunk)))
            }
            rows.sort { (($0["rowID"] as Int64?) ?? 0) < (($1["rowID"] as Int64?) ?? 0) }
            return try entities(.task, rows: rows, codec: EntityRowCodec(), db).compactMap { if case .task(let task) = $0 { task } else { nil } }
        }
    }

    /// The entities of `kind` that `query` picks, in the order they were stored.
    public func entities(_ kind: EntityKind, _ query: EntityQuery) throws -> [CareEntity] {
        if kind == .outcome, let ids = query.ids {
            let others = try Self.filter(kind, EntityQuery(dateInterval: query.dateInterval))
            return try readSnapshot { db in try outcomes(ids: ids, where: others, currentOnly: true, db) }
        }
        let filter = try Self.filter(kind, query)
        return try readSnapshot { db in try fetchEntities(kind, filter, db) }
    }

    /// The outcomes with `ids` that also meet `condition` (their current versions, or with `currentOnly`
    /// false every version), in the order they were stored.
    ///
    /// An outcome id names a task version and an occurrence; the occurrence's start comes from that
    /// version's schedule, so each outcome is one seek in the unique index on (task version, event start,
    /// occurrence), rather than a scan of the task's outcomes for each id.
    private func outcomes(ids: [String], where condition: (sql: String, arguments: StatementArguments), currentOnly: Bool, _ db: Database) throws -> [CareEntity] {
        // Most ids of an import are new: probe for the current version's row id first (every outcome
        // condition asks for current versions), then read the rows found that meet the whole condition.
        let raw = RawStatement(try db.cachedStatement(sql: """
            SELECT rowID FROM outcome WHERE taskUUID = ? AND eventStart = ? AND occurrenceIndex = ?\(currentOnly ? " AND nextVersionUUID IS NULL" : "")
            """), in: db)
        let codec = EntityRowCodec()
        let taskRow = try db.cachedStatement(sql: "SELECT * FROM task WHERE uuid = ?")
        var schedules: [UUID: Schedule?] = [:]
        var seen: Set<String> = []
        var rowIDs: [Int64] = []
        for id in ids where seen.insert(id).inserted {
            guard let (taskUUID, occurrence) = BatchWriter.parseOutcomeID(id) else { continue }
            if schedules[taskUUID] == nil {
                let task = try taskCache.content(taskUUID)
                    ?? Row.fetchOne(taskRow, arguments: [taskUUID]).map { try codec.task($0, cache: taskCache) }
                schedules[taskUUID] = .some(task?.schedule)
            }
            guard let schedule = schedules[taskUUID] ?? nil, let start = schedule.eventStart(occurrence: occurrence) else { continue }
            raw.bind(1, taskUUID)
            raw.bind(2, start.storeSeconds)
            raw.bind(3, occurrence)
            defer { raw.reset() }
            while try raw.step() { rowIDs.append(raw.int64(0)) }
        }
        rowIDs.sort()
        return try OutcomeRowReader.outcomes(rowIDs: rowIDs, where: condition, codec: codec, db)
    }

    /// Calls `body` with each entity of `kind` that `query` picks, in the order they were stored, reading
    /// in chunks so that millions of outcomes never sit in memory at once.
    public func forEachEntity(_ kind: EntityKind, _ query: EntityQuery, _ body: (CareEntity) throws -> Void) throws {
        if kind == .outcome, query.ids != nil {
            for entity in try entities(kind, query) { try body(entity) }
            return
        }
        try forEach(kind, filter: try Self.filter(kind, query), body)
    }

    private func forEach(_ kind: EntityKind, filter: (sql: String, arguments: StatementArguments), _ body: (CareEntity) throws -> Void) throws {
        try readSnapshot { db in
            let codec = EntityRowCodec()
            let table = StoreSchema.Table.entity(kind)
            let rows = try Row.fetchCursor(db, sql: "SELECT * FROM \(table) WHERE \(filter.sql) ORDER BY rowID", arguments: filter.arguments)
            var chunk: [Row] = []
            func flush() throws {
                for entity in try self.entities(kind, rows: chunk, codec: codec, db) { try body(entity) }
                chunk.removeAll(keepingCapacity: true)
            }
            while let row = try rows.next() {
                chunk.append(row.copy())
                if chunk.count == 1000 { try flush() }
            }
            try flush()
        }
    }

    /// Calls `body` with every version of every entity of `kind`, tombstones included, in the order
    /// they were stored.
    public func forEachVersion(_ kind: EntityKind, _ body: (CareEntity) throws -> Void) throws {
        try forEach(kind, filter: ("1", []), body)
    }

    /// The SQL condition (on one entity table) that picks the versions `query` asks for.
    static func filter(_ kind: EntityKind, _ query: EntityQuery) throws -> (sql: String, arguments: StatementArguments) {
        var sql: String
        var arguments: StatementArguments = []
        if let interval = query.dateInterval {
            if kind == .outcome {
                // As CareKit: the current outcomes whose events start in the interval.
                sql = "nextVersionUUID IS NULL AND deletedDate IS NULL AND eventStart >= ? AND eventStart < ?"
            } else {
                // The version in effect at the interval's end, unless it is a tombstone.
                sql = "deletedDate IS NULL AND effectiveDate < ? AND (nextEffectiveDate IS NULL OR nextEffectiveDate >= ?)"
            }
            arguments += kind == .outcome
                ? [interval.start.storeSeconds, interval.end.storeSeconds]
                : [interval.end.storeSeconds, interval.end.storeSeconds]
        } else {
            sql = "nextVersionUUID IS NULL AND deletedDate IS NULL"
        }
        if let ids = query.ids {
            guard kind != .outcome else {
                throw StoreError.database(message: "outcomes by id are read one index seek each (outcomes(ids:where:_:)), not by a filter")
            }
            sql += " AND id IN (\(ids.isEmpty ? "NULL" : SQLText.placeholders(ids.count)))"
            arguments += StatementArguments(ids)
        }
        return (sql, arguments)
    }

    func fetchEntities(_ kind: EntityKind, _ filter: (sql: String, arguments: StatementArguments), _ db: Database) throws -> [CareEntity] {
        let table = StoreSchema.Table.entity(kind)
        // Cached: the app server asks the same few shapes of query for every request (GRDB's authorizer
        // and SQLite's parser cost more than a small read).
        let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM \(table) WHERE \(filter.sql) ORDER BY rowID"), arguments: filter.arguments)
        return try entities(kind, rows: rows, codec: EntityRowCodec(), db)
    }

    /// Entities from rows of their table; outcome values are read for all the rows at once.
    func entities(_ kind: EntityKind, rows: [Row], codec: EntityRowCodec, _ db: Database) throws -> [CareEntity] {
        if kind == .task { return try codec.withLayout(of: rows) { try rows.map { .task(try codec.task($0, cache: taskCache)) } } }
        guard kind == .outcome else {
            return try codec.withLayout(of: rows) { try rows.map { try codec.entity(kind, row: $0) } }
        }
        let values = try Self.outcomeValues(rowIDs: Self.rowsWithExtraValues(rows), db)
        guard !values.isEmpty else {
            return try codec.withLayout(of: rows) { try rows.map { try codec.entity(.outcome, row: $0, values: []) } }
        }
        let layout = rows.first.map(RowColumns.init)
        return try codec.withLayout(of: rows) {
            try rows.map { row in
                let rowID: Int64? = layout?[row, "rowID"]
                return try codec.entity(.outcome, row: row, values: rowID.flatMap { values[$0] } ?? [])
            }
        }
    }

    /// The ids of the outcome rows that have values beyond the first (kept in `outcomeValue`). `rows` are
    /// rows of `outcome` read by one kind of statement (`SELECT *`), which share a layout.
    ///
    /// Columns are found by name once, in the first row's layout (``RowColumns``): GRDB's lookup by name
    /// compares the names case-insensitively, row after row, which cost more than decoding the outcome.
    static func rowsWithExtraValues(_ rows: [Row]) -> [Int64] {
        guard let layout = rows.first.map(RowColumns.init) else { return [] }
        return rows.compactMap { row in
            let extra: Int? = layout[row, "extraValues"]
            return (extra ?? 0) > 0 ? layout[row, "rowID"] : nil
        }
    }

    /// The values beyond the first of the outcome rows `rowIDs`, in position order.
    static func outcomeValues(rowIDs: [Int64], _ db: Database) throws -> [Int64: [OutcomeValue]] {
        var values: [Int64: [OutcomeValue]] = [:]
        for chunk in SQLText.statementChunks(rowIDs) {
            let rows = try Row.fetchCursor(
                try db.cachedStatement(sql: """
                    SELECT * FROM outcomeValue WHERE outcomeRowID IN (\(SQLText.placeholders(chunk.count)))
                    ORDER BY outcomeRowID, position
                    """),
                arguments: StatementArguments(Array(chunk)))
            while let row = try rows.next() {
                guard let rowID: Int64 = row["outcomeRowID"], let value = EntityRowCodec.outcomeValue(row) else { continue }
                values[rowID, default: []].append(value)
            }
        }
        return values
    }

    public func statistics() throws -> StoreStatistics {
        try readSnapshot { db in
            var entities: [EntityKind: StoreStatistics.EntityCounts] = [:]
            for kind in EntityKind.allCases {
                let row = try Row.fetchOne(db, sql: """
                    SELECT count(*) AS versions,
                           total(nextVersionUUID IS NULL AND deletedDate IS NULL) AS current,
                           total(nextVersionUUID IS NULL AND deletedDate IS NOT NULL) AS deleted
                    FROM \(StoreSchema.Table.entity(kind))
                    """)
                entities[kind] = StoreStatistics.EntityCounts(
                    versions: row?["versions"] ?? 0, current: Int((row?["current"] as Double?) ?? 0),
                    deleted: Int((row?["deleted"] as Double?) ?? 0))
            }
            func count(_ table: String) throws -> Int {
                try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") ?? 0
            }
            var outbox = Dictionary(uniqueKeysWithValues: OutboxState.allCases.map { ($0, 0) })
            for row in try Row.fetchAll(db, sql: "SELECT state, count(*) AS n FROM outbox GROUP BY state") {
                if let state = OutboxState(rawValue: row["state"]) { outbox[state] = row["n"] }
            }
            let deadLetters = try Self.deadLetterCounts(in: db)
            return StoreStatistics(
                entities: entities,
                outcomeValues: try count(StoreSchema.Table.outcomeValue)
                    + (Int.fetchOne(db, sql: "SELECT count(*) FROM outcome WHERE firstValueType IS NOT NULL") ?? 0),
                sourceResources: try count(StoreSchema.Table.sourceResource), resourceLinks: try count(StoreSchema.Table.resourceLink),
                checkpoints: try count(StoreSchema.Table.syncCheckpoint), outbox: outbox,
                deadLetters: deadLetters.waiting, resolvedDeadLetters: deadLetters.resolved)
        }
    }
}
