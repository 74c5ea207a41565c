import Foundation
import GRDB

extension SQLiteStore {
    /// ``OutboxSummary`` in one snapshot: a count per state and two small aggregates, cheap enough for
    /// every scrape of the metrics.
    public func outboxSummary() throws -> OutboxSummary {
        try readSnapshot { db in
            var entries = Dictionary(uniqueKeysWithValues: OutboxState.allCases.map { ($0, 0) })
            for row in try Row.fetchAll(db, sql: "SELECT state, count(*) AS n FROM outbox GROUP BY state") {
                if let state = OutboxState(rawValue: row["state"]) { entries[state] = row["n"] }
            }
            let oldest = try Double.fetchOne(db, sql: """
                SELECT min(createdDate) FROM outbox
                WHERE state = 'pending' OR (state = 'failed' AND nextAttemptDate IS NOT NULL)
                """)
            // Those waiting for a person: a replay resolves a letter without deleting it.
            let deadLetters = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(StoreSchema.Table.deadLetter) WHERE resolvedDate IS NULL") ?? 0
            return OutboxSummary(entries: entries, oldestWaiting: oldest.map(Date.init(timeIntervalSince1970:)), deadLetters: deadLetters)
        }
    }
}
