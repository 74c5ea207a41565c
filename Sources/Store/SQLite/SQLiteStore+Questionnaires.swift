import CareModel
import Foundation
import GRDB

// The Questionnaires a survey task asks (``StoredQuestionnaire``), every version kept.
extension SQLiteStore: QuestionnaireStore {
    public func keep(_ questionnaire: StoredQuestionnaire) throws -> QuestionnaireKeeping {
        try writeTransaction { db in
            if let kept = try String.fetchOne(
                db, sql: "SELECT contentHash FROM questionnaire WHERE url = ? AND version = ?", arguments: [questionnaire.url, questionnaire.version]) {
                return kept == questionnaire.contentHash ? .unchanged : .conflicting(keptHash: kept)
            }
            try db.execute(
                sql: """
                    INSERT INTO questionnaire (url, version, sourceSystem, resourceID, contentHash, resource, keptDate)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    questionnaire.url, questionnaire.version, questionnaire.sourceSystem, questionnaire.resourceID,
                    questionnaire.contentHash, questionnaire.json, questionnaire.keptDate.storeSeconds,
                ])
            return .added
        }
    }

    public func questionnaire(url: String, version: String) throws -> StoredQuestionnaire? {
        try readSnapshot { db in
            try Row.fetchOne(db, sql: "SELECT * FROM questionnaire WHERE url = ? AND version = ?", arguments: [url, version]).map(Self.questionnaire(from:))
        }
    }

    public func latestQuestionnaire(url: String) throws -> StoredQuestionnaire? {
        try readSnapshot { db in
            try Row.fetchOne(db, sql: "SELECT * FROM questionnaire WHERE url = ? ORDER BY rowid DESC LIMIT 1", arguments: [url])
                .map(Self.questionnaire(from:))
        }
    }

    public func latestQuestionnaire(sourceSystem: String, resourceID: String) throws -> StoredQuestionnaire? {
        try readSnapshot { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM questionnaire WHERE sourceSystem = ? AND resourceID = ? ORDER BY rowid DESC LIMIT 1",
                arguments: [sourceSystem, resourceID]
            ).map(Self.questionnaire(from:))
        }
    }

    public func taskVersion(uuid: UUID) throws -> CareTask? {
        try readSnapshot { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM task WHERE uuid = ?"), arguments: [uuid]).map { try EntityRowCodec().task($0, cache: taskCache) }
        }
    }

    private static func questionnaire(from row: Row) -> StoredQuestionnaire {
        StoredQuestionnaire(
            url: row["url"], version: row["version"], sourceSystem: row["sourceSystem"], resourceID: row["resourceID"],
            contentHash: row["contentHash"], json: row["resource"], keptDate: row.date("keptDate") ?? Date(timeIntervalSince1970: 0))
    }

    /// v20: the Questionnaires survey tasks ask, one row per `url` and `version`, never removed (an outcome
    /// recorded against a version keeps it readable); found also by source system and FHIR id.
    static func createQuestionnaires(_ db: Database) throws {
        try db.create(table: "questionnaire") { t in
            t.column("url", .text).notNull()
            t.column("version", .text).notNull()
            t.column("sourceSystem", .text).notNull()
            t.column("resourceID", .text)
            t.column("contentHash", .text).notNull()
            t.column("resource", .blob).notNull()
            t.column("keptDate", .double).notNull()
            t.uniqueKey(["url", "version"])
        }
        try db.create(index: "questionnaire_by_source_id", on: "questionnaire", columns: ["sourceSystem", "resourceID"])
    }
}
