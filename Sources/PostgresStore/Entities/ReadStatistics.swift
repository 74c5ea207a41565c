import CareModel
import Foundation
import PostgresNIO
import Store

// Counts of what the store keeps, and its consistency check.
extension PostgreSQLStore {
    /// The SQLite store's counts (`SQLiteStore.statistics`), from one snapshot. Outcome values are counted
    /// in the versions' bodies (every version's, tombstones included, as SQLite counts its value rows).
    public func statistics() throws -> StoreStatistics {
        try readSnapshot { connection in
            var entities: [EntityKind: StoreStatistics.EntityCounts] = [:]
            for kind in EntityKind.allCases {
                let rows = try await connection.query("""
                    SELECT count(*), count(*) FILTER (WHERE next_version_uuid IS NULL AND deleted_date IS NULL),
                           count(*) FILTER (WHERE next_version_uuid IS NULL AND deleted_date IS NOT NULL)
                    FROM \(unescaped: PostgresEntityCodec.table(kind))
                    """, logger: Self.logger)
                for try await (versions, current, deleted) in rows.decode((Int64, Int64, Int64).self) {
                    entities[kind] = StoreStatistics.EntityCounts(versions: Int(versions), current: Int(current), deleted: Int(deleted))
                }
            }
            func count(_ sql: String) async throws -> Int {
                Int(try await connection.values(PostgresQuery(unsafeSQL: sql), as: Int64?.self, logger: Self.logger).first.flatMap { $0 } ?? 0)
            }
            let values = try await count("SELECT sum(jsonb_array_length(convert_from(body, 'UTF8')::jsonb -> 'values')) FROM outcome")
            var outbox = Dictionary(uniqueKeysWithValues: OutboxState.allCases.map { ($0, 0) })
            for try await (state, n) in try await connection.query("SELECT state, count(*) FROM outbox GROUP BY state", logger: Self.logger)
                .decode((String, Int64).self)
            {
                if let state = OutboxState(rawValue: state) { outbox[state] = Int(n) }
            }
            var deadLetters = (waiting: 0, resolved: 0)
            // The dead letters' table comes with the staging part's migrations (PostgresStagingSchema).
            if try await connection.values("SELECT to_regclass('dead_letter') IS NOT NULL", as: Bool.self, logger: Self.logger).first == true {
                deadLetters.waiting = try await count("SELECT count(*) FROM dead_letter WHERE resolved_date IS NULL")
                deadLetters.resolved = try await count("SELECT count(*) FROM dead_letter WHERE resolved_date IS NOT NULL")
            }
            return StoreStatistics(
                entities: entities, outcomeValues: values,
                sourceResources: try await count("SELECT count(*) FROM source_resource"),
                resourceLinks: try await count("SELECT count(*) FROM resource_link"),
                checkpoints: try await count("SELECT count(*) FROM sync_checkpoint"), outbox: outbox,
                deadLetters: deadLetters.waiting, resolvedDeadLetters: deadLetters.resolved)
        }
    }

    /// The store's own consistency, what PostgreSQL's pages cannot tell (the server checks those): every
    /// version chain holds together (a version's next version exists, is of the same entity, and took
    /// effect when the version says), every entity but an outcome has one tip, an outcome with several is
    /// filed as in conflict, and the revision log names versions that exist, each under a stamp, none
    /// beyond the store's clock. Empty when the store is sound; each problem is one line, with counts and
    /// no patient data.
    public func integrityCheck() throws -> [String] {
        try readSnapshot { connection in
            var problems: [String] = []
            func check(_ sql: String, _ problem: String) async throws {
                let n = try await connection.values(PostgresQuery(unsafeSQL: sql), as: Int64.self, logger: Self.logger).first ?? 0
                if n > 0 { problems.append("\(n) \(problem)") }
            }
            for kind in EntityKind.allCases {
                let table = PostgresEntityCodec.table(kind)
                let sameEntity = kind == .outcome ? "n.task_uuid = v.task_uuid AND n.occurrence_index = v.occurrence_index" : "n.id = v.id"
                try await check("""
                    SELECT count(*) FROM \(table) v WHERE v.next_version_uuid IS NOT NULL
                      AND NOT EXISTS (SELECT 1 FROM \(table) n WHERE n.uuid = v.next_version_uuid AND \(sameEntity))
                    """, "\(table) versions name a next version that is not a version of their entity")
                try await check("""
                    SELECT count(*) FROM \(table) v WHERE v.next_version_uuid IS NOT NULL
                      AND NOT EXISTS (SELECT 1 FROM \(table) n WHERE n.uuid = v.next_version_uuid AND \(sameEntity)
                                      AND n.effective_date = v.next_effective_date)
                    """, "\(table) versions whose next effective date is not their next version's effective date")
                try await check(
                    "SELECT count(*) FROM \(table) WHERE (next_version_uuid IS NULL) <> (next_effective_date IS NULL)",
                    "\(table) versions with a next version and no next effective date, or the reverse")
                if kind == .outcome {
                    try await check("""
                        SELECT count(*) FROM (SELECT task_uuid, occurrence_index FROM outcome WHERE next_version_uuid IS NULL
                                              GROUP BY task_uuid, occurrence_index HAVING count(*) > 1) tips
                        WHERE NOT EXISTS (SELECT 1 FROM outcome_conflict c WHERE c.outcome_id = upper(tips.task_uuid::text) || '_' || tips.occurrence_index)
                        """, "outcomes with several tips not filed as in conflict")
                } else {
                    try await check(
                        "SELECT count(*) FROM (SELECT id FROM \(table) GROUP BY id HAVING count(*) FILTER (WHERE next_version_uuid IS NULL) <> 1) ids",
                        "\(table) entities without exactly one current version")
                }
                try await check("""
                    SELECT count(*) FROM revision r WHERE r.entity_kind = '\(kind.rawValue)'
                      AND NOT EXISTS (SELECT 1 FROM \(table) e WHERE e.row_id = r.entity_row_id AND e.uuid = r.entity_uuid)
                    """, "revisions of \(kind.rawValue) versions that are not stored")
            }
            try await check("""
                SELECT count(*) FROM (SELECT DISTINCT patient_id, server_clock FROM revision) r
                WHERE NOT EXISTS (SELECT 1 FROM revision_stamp s WHERE s.patient_id = r.patient_id AND s.server_clock = r.server_clock)
                """, "revision records without a stamp")
            try await check(
                "SELECT count(*) FROM revision_stamp WHERE server_clock > (SELECT clock FROM sync_clock WHERE singleton)",
                "revision stamps beyond the store's clock")
            return problems
        }
    }
}
