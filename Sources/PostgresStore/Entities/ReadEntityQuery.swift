import CareModel
import Foundation
import Logging
import PostgresNIO
import Store

/// The versions an ``EntityQuery`` picks, read from one entity table in stored order (`row_id`), as the
/// SQLite store picks them (`SQLiteStore.filter`):
///
/// - no interval: the current version (a tip, `next_version_uuid IS NULL`) of each entity not deleted;
/// - an interval, for outcomes: as CareKit, the current outcomes whose events start in it;
/// - an interval, for other kinds: the version in effect at the interval's end (effective before it, and
///   the next version effective at or after it), unless it is a tombstone;
/// - ids (other kinds than outcomes): only those ids. Outcome ids name a task version and an occurrence,
///   and are read by ``ReadOutcomesByID``.
struct ReadEntityQuery {
    let kind: EntityKind
    /// The condition, on the columns of the kind's table (unqualified).
    var query: ReadQuery

    init(_ kind: EntityKind, _ entityQuery: EntityQuery) throws {
        self.kind = kind
        query = ReadQuery()
        if let interval = entityQuery.dateInterval {
            if kind == .outcome {
                let start = try query.bind(interval.start.timeIntervalSince1970), end = try query.bind(interval.end.timeIntervalSince1970)
                query.sql = "next_version_uuid IS NULL AND deleted_date IS NULL AND event_start >= \(start) AND event_start < \(end)"
            } else {
                let end = try query.bind(interval.end.timeIntervalSince1970)
                query.sql = "deleted_date IS NULL AND effective_date < \(end) AND (next_effective_date IS NULL OR next_effective_date >= \(end))"
            }
        } else {
            query.sql = "next_version_uuid IS NULL AND deleted_date IS NULL"
        }
        if let ids = entityQuery.ids {
            guard kind != .outcome else {
                throw StoreError.database(message: "outcomes by id are read by task version and occurrence (ReadOutcomesByID), not by a filter")
            }
            query.sql += " AND id = ANY(\(try query.bind(ids))::text[])"
        }
    }

    /// Adds `condition`, whose placeholders `bind` gives.
    mutating func and(_ condition: (inout ReadQuery) throws -> String) rethrows {
        let sql = try condition(&query)
        query.sql += " AND " + sql
    }

    /// The SELECT of the versions, in stored order.
    var select: ReadQuery {
        var select = query
        select.sql = "SELECT \(PostgresEntityCodec.selectList(kind)) FROM \(PostgresEntityCodec.table(kind)) WHERE \(query.sql) ORDER BY row_id"
        return select
    }

    /// The versions, decoded, in stored order.
    func fetch(on connection: PostgresConnection, logger: Logger) async throws -> [CareEntity] {
        try await Self.entities(kind, select.query, on: connection, logger: logger)
    }

    /// The versions of `kind` that `query` (a SELECT of ``PostgresEntityCodec/selectList(_:alias:)``) reads.
    static func entities(_ kind: EntityKind, _ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) async throws -> [CareEntity] {
        var entities: [CareEntity] = []
        for try await row in try await connection.query(query, logger: logger) {
            entities.append(try PostgresEntityCodec.decode(kind: kind, row: row).entity)
        }
        return entities
    }
}

/// The current versions of outcomes by id, as the SQLite store reads them (`SQLiteStore.outcomes(ids:...)`):
/// an id names a task version and an occurrence (``Outcome/id(taskUUID:occurrence:)``); the occurrence's
/// start comes from that version's schedule, so that each outcome is found in the unique index on (task
/// version, event start, occurrence), not by a scan of its task's outcomes. Ids that do not parse, of a task
/// version the store lacks, or of an occurrence its schedule does not have, are left out; each outcome comes
/// once, in stored order, and only when it also meets `condition` (an ``EntityQuery``'s interval).
enum ReadOutcomesByID {
    static func outcomes(
        ids: [String], meeting condition: ReadEntityQuery, on connection: PostgresConnection, logger: Logger
    ) async throws -> [CareEntity] {
        // Each outcome once, however many ids name it ("…_1" and "…_01" name one).
        var seen: Set<String> = []
        var wanted: [(task: UUID, occurrence: Int)] = []
        for id in ids {
            if let parsed = parse(id), seen.insert(Outcome.id(taskUUID: parsed.task, occurrence: parsed.occurrence)).inserted { wanted.append(parsed) }
        }
        guard !wanted.isEmpty else { return [] }
        let schedules = try await taskSchedules(Array(Set(wanted.map(\.task))), on: connection, logger: logger)
        var tasks: [UUID] = [], starts: [Double] = [], occurrences: [Int64] = []
        for (task, occurrence) in wanted {
            guard let start = schedules[task]?.eventStart(occurrence: occurrence) else { continue }
            tasks.append(task)
            starts.append(start.timeIntervalSince1970)
            occurrences.append(Int64(occurrence))
        }
        guard !tasks.isEmpty else { return [] }
        var query = condition.query
        let (t, s, o) = (try query.bind(tasks), try query.bind(starts), try query.bind(occurrences))
        query.sql = """
            SELECT \(PostgresEntityCodec.selectList(.outcome, alias: "o")) FROM outcome o
            JOIN unnest(\(t)::uuid[], \(s)::double precision[], \(o)::bigint[]) AS wanted(wanted_task, wanted_start, wanted_occurrence)
              ON o.task_uuid = wanted_task AND o.event_start = wanted_start AND o.occurrence_index = wanted_occurrence
            WHERE \(condition.query.sql) ORDER BY o.row_id
            """
        return try await ReadEntityQuery.entities(.outcome, query.query, on: connection, logger: logger)
    }

    /// The schedules of task versions `uuids` that the store holds.
    static func taskSchedules(_ uuids: [UUID], on connection: PostgresConnection, logger: Logger) async throws -> [UUID: Schedule] {
        var schedules: [UUID: Schedule] = [:]
        let rows = try await connection.query(
            "SELECT \(unescaped: PostgresEntityCodec.selectList(.task)) FROM task WHERE uuid = ANY(\(uuids)::uuid[])", logger: logger)
        for try await row in rows {
            if case .task(let task) = try PostgresEntityCodec.decode(kind: .task, row: row).entity { schedules[task.uuid] = task.schedule }
        }
        return schedules
    }

    /// The task version and occurrence an outcome id names (`<uuid>_<occurrence>`), nil when it names none.
    static func parse(_ id: String) -> (task: UUID, occurrence: Int)? {
        guard let separator = id.utf8.lastIndex(of: UInt8(ascii: "_")),
              let uuid = UUID(canonical: id[..<separator]),
              let occurrence = Int(id[id.index(after: separator)...])
        else { return nil }
        return (uuid, occurrence)
    }
}
