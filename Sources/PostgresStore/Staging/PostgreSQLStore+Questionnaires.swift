import CareModel
import Foundation
import PostgresNIO
import Store

// The Questionnaires a survey task asks (``StoredQuestionnaire``), every version kept, as the SQLite store
// keeps them (SQLiteStore+Questionnaires.swift): one row per url and version, never removed; "the latest"
// is the one kept last.
extension PostgreSQLStore: QuestionnaireStore {
    /// Keeps `questionnaire` unless its `url|version` is kept already. Two servers keeping one version at
    /// once: the insert of the second finds the first's row (`ON CONFLICT DO NOTHING`) and answers as if it
    /// had been kept before it.
    public func keep(_ questionnaire: StoredQuestionnaire) throws -> QuestionnaireKeeping {
        let (url, version) = (questionnaire.url, questionnaire.version)
        return try database.run { client in
            try await client.withTransaction(logger: Self.logger) { connection in
                func keptHash() async throws -> String? {
                    try await connection.values(
                        "SELECT content_hash FROM questionnaire WHERE url = \(url) AND version = \(version)", as: String.self, logger: Self.logger
                    ).first
                }
                if let kept = try await keptHash() {
                    return kept == questionnaire.contentHash ? .unchanged : .conflicting(keptHash: kept)
                }
                let inserted = try await connection.values("""
                    INSERT INTO questionnaire (url, version, source_system, resource_id, content_hash, resource, kept_date)
                    VALUES (\(url), \(version), \(questionnaire.sourceSystem), \(questionnaire.resourceID), \(questionnaire.contentHash),
                            \(ByteBuffer(bytes: questionnaire.json)), \(questionnaire.keptDate.timeIntervalSince1970))
                    ON CONFLICT (url, version) DO NOTHING
                    RETURNING 1
                    """, as: Int32.self, logger: Self.logger)
                if !inserted.isEmpty { return .added }
                guard let kept = try await keptHash() else { return .added }
                return kept == questionnaire.contentHash ? .unchanged : .conflicting(keptHash: kept)
            }
        }
    }

    public func questionnaire(url: String, version: String) throws -> StoredQuestionnaire? {
        try questionnaires("WHERE url = \(url) AND version = \(version)").first
    }

    public func latestQuestionnaire(url: String) throws -> StoredQuestionnaire? {
        try questionnaires("WHERE url = \(url) ORDER BY row_id DESC LIMIT 1").first
    }

    public func latestQuestionnaire(sourceSystem: String, resourceID: String) throws -> StoredQuestionnaire? {
        try questionnaires("WHERE source_system = \(sourceSystem) AND resource_id = \(resourceID) ORDER BY row_id DESC LIMIT 1").first
    }

    /// The task version `uuid` (any version, a tombstone included), read with the entity writer's row
    /// format (``PostgresEntityCodec``).
    public func taskVersion(uuid: UUID) throws -> CareTask? {
        try database.run { client in
            let rows = try await client.query(
                "SELECT \(unescaped: PostgresEntityCodec.selectList(.task)) FROM task WHERE uuid = \(uuid)", logger: Self.logger)
            var found: CareTask?
            for try await row in rows {
                if case .task(let task) = try PostgresEntityCodec.decode(kind: .task, row: row).entity { found = task }
            }
            return found
        }
    }

    /// The versions a condition (`WHERE ...`, with its binds) picks.
    private func questionnaires(_ condition: PostgresQuery) throws -> [StoredQuestionnaire] {
        let query = PostgresQuery(
            unsafeSQL: "SELECT url, version, source_system, resource_id, content_hash, resource, kept_date FROM questionnaire " + condition.sql,
            binds: condition.binds)
        return try database.run { client in
            var found: [StoredQuestionnaire] = []
            let rows = try await client.query(query, logger: Self.logger)
            for try await (url, version, system, resourceID, hash, json, kept) in rows.decode((String, String, String, String?, String, ByteBuffer, Double).self) {
                found.append(StoredQuestionnaire(
                    url: url, version: version, sourceSystem: system, resourceID: resourceID, contentHash: hash, json: Data(json.readableBytesView),
                    keptDate: Date(timeIntervalSince1970: kept)))
            }
            return found
        }
    }
}
