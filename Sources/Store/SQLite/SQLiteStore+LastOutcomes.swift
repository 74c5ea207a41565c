import Foundation
import GRDB

extension SQLiteStore {
    public func lastOutcomeEventStarts(taskUUIDs: [UUID]) throws -> [UUID: Date] {
        let unique = Array(Set(taskUUIDs))
        return try readSnapshot { db in
            var last: [UUID: Date] = [:]
            // `outcome_by_task_date_version` leads with (taskUUID, eventStart): read from that index alone (covering).
            for chunk in SQLText.statementChunks(unique) {
                let rows = try Row.fetchAll(
                    db, sql: """
                        SELECT taskUUID, MAX(eventStart) AS lastStart FROM outcome
                        WHERE taskUUID IN (\(SQLText.placeholders(chunk.count))) GROUP BY taskUUID
                        """,
                    arguments: StatementArguments(Array(chunk)))
                for row in rows {
                    guard let uuid: UUID = row["taskUUID"], let lastStart = row.date("lastStart") else { continue }
                    last[uuid] = lastStart
                }
            }
            return last
        }
    }
}
