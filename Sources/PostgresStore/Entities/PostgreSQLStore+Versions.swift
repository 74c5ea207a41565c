import CareModel
import Foundation
import PostgresNIO
import Store

// OWNER: helper h-pgwrites.
/// Every version of entities, in the order stored (`row_id`), as the SQLite store reads them
/// (SQLiteStore+Entities.swift): one entity's history, several entities' histories, chosen task versions,
/// and all versions of a kind read page by page.
extension PostgreSQLStore {
    /// Versions per page of ``forEachVersion(_:_:)``: what is held in memory at once.
    static let versionsPerPage = 1_000

    /// Every version of entity `kind/id`, oldest first (none for an outcome id that is not CareKit's
    /// `<taskUUID>_<occurrenceIndex>`).
    public func history(_ kind: EntityKind, id: String) throws -> [CareEntity] {
        if kind == .outcome {
            guard let (taskUUID, occurrence) = PostgresBatchWriter.parseOutcomeID(id) else { return [] }
            return try versions(kind, where: "task_uuid = \(taskUUID) AND occurrence_index = \(occurrence)")
        }
        return try versions(kind, where: "id = \(id)")
    }

    /// Every version of the entities `ids` of `kind`, in the order stored.
    public func histories(_ kind: EntityKind, ids: [String]) throws -> [CareEntity] {
        let unique = Array(Set(ids))
        guard !unique.isEmpty else { return [] }
        if kind == .outcome {
            let parsed = unique.compactMap(PostgresBatchWriter.parseOutcomeID)
            guard !parsed.isEmpty else { return [] }
            return try versions(kind, where: """
                (task_uuid, occurrence_index) IN (SELECT * FROM unnest(\(parsed.map(\.0))::uuid[], \(parsed.map { Int64($0.1) })::int8[]))
                """)
        }
        return try versions(kind, where: "id = ANY(\(unique)::text[])")
    }

    /// The task versions `uuids` the store has, in the order stored (`ids`, their tasks' ids, are not needed:
    /// versions are found by uuid, through its unique index).
    public func taskVersions(uuids: [UUID], ids: [String]) throws -> [CareTask] {
        let unique = Array(Set(uuids))
        guard !unique.isEmpty else { return [] }
        return try versions(.task, where: "uuid = ANY(\(unique)::uuid[])").compactMap { if case .task(let task) = $0 { task } else { nil } }
    }

    /// Calls `body` with every version of `kind`, in the order stored, reading a page of
    /// ``versionsPerPage`` at a time (never all versions at once). Each page is read in a snapshot of its
    /// own: versions written while it runs may be met, with their links as they are then.
    public func forEachVersion(_ kind: EntityKind, _ body: (CareEntity) throws -> Void) throws {
        var after: Int64 = 0
        while true {
            let page = try versionRows(
                kind, where: "row_id > \(after)", limit: Self.versionsPerPage)
            for (_, entity) in page { try body(entity) }
            guard page.count == Self.versionsPerPage, let last = page.last else { return }
            after = last.rowID
        }
    }

    /// The versions of `kind` that `condition` (a `WHERE` clause with its binds) picks, in the order stored.
    func versions(_ kind: EntityKind, where condition: PostgresQuery) throws -> [CareEntity] {
        try versionRows(kind, where: condition, limit: nil).map(\.entity)
    }

    private func versionRows(_ kind: EntityKind, where condition: PostgresQuery, limit: Int?) throws -> [(rowID: Int64, entity: CareEntity)] {
        let sql = "SELECT \(PostgresEntityCodec.selectList(kind)) FROM \(PostgresEntitySchema.table(kind)) WHERE "
            + condition.sql + " ORDER BY row_id" + (limit.map { " LIMIT \($0)" } ?? "")
        let query = PostgresQuery(unsafeSQL: sql, binds: condition.binds)
        return try database.run { client in
            var found: [(rowID: Int64, entity: CareEntity)] = []
            for try await row in try await client.query(query, logger: Self.logger) {
                found.append(try PostgresEntityCodec.decode(kind: kind, row: row))
            }
            return found
        }
    }
}
