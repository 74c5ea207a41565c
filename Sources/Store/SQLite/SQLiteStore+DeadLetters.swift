import Foundation
import GRDB

/// Dead letters: reading them, and settling them after a replay (``DeadLetterSettlement``).
///
/// A dead letter is never deleted: a replay that imports it sets `resolvedDate` and `resolution`, and the
/// lists of what waits for a person (``deadLetters(limit:includingResolved:since:)``, the statistics)
/// leave it out; one that fails again takes the new reason and `replayedDate`.
extension SQLiteStore {
    /// The migration that lets a replay settle a dead letter: when it was last replayed, when it was
    /// resolved and how. Letters kept before it wait, as they did.
    static func addDeadLetterReplays(_ db: Database) throws {
        try db.alter(table: StoreSchema.Table.deadLetter) { t in
            t.add(column: "replayedDate", .double)
            t.add(column: "resolvedDate", .double)
            t.add(column: "resolution", .text)
        }
        try db.create(index: "deadLetter_waiting", on: StoreSchema.Table.deadLetter, columns: ["resolvedDate", "createdDate"])
    }

    /// Records what a replay of dead letter `id` came to, at `date`. A resolved letter is left as it is, and
    /// a failure with the reason it has already changes nothing (the same replay twice changes nothing); a
    /// nil detail keeps the one it has. Returns whether the letter changed.
    static func settleDeadLetter(_ id: Int64, _ settlement: DeadLetterSettlement, at date: Date, in db: Database) throws -> Bool {
        switch settlement {
        case .resolved(let resolution):
            try db.execute(
                sql: "UPDATE deadLetter SET resolvedDate = ?, replayedDate = ?, resolution = ? WHERE id = ? AND resolvedDate IS NULL",
                arguments: [date.storeSeconds, date.storeSeconds, resolution, id])
        case .failedAgain(let reason, let detail):
            try db.execute(
                sql: "UPDATE deadLetter SET reason = ?, detail = coalesce(?, detail), replayedDate = ? WHERE id = ? AND resolvedDate IS NULL AND reason IS NOT ?",
                arguments: [reason, detail, date.storeSeconds, id, reason])
        }
        return db.changesCount > 0
    }

    /// Dead letter `id`, waiting or resolved, with its payload.
    public func deadLetter(id: Int64) throws -> DeadLetter? {
        try readSnapshot { db in
            try Row.fetchOne(db, sql: "SELECT * FROM deadLetter WHERE id = ?", arguments: [id]).map(Self.deadLetter)
        }
    }

    /// Dead letters, newest first: those waiting for a person, or all of them; only those kept from `since` on
    /// when it is given.
    public func deadLetters(limit: Int, includingResolved: Bool, since: Date?) throws -> [DeadLetter] {
        var conditions: [String] = []
        var arguments: StatementArguments = []
        if !includingResolved { conditions.append("resolvedDate IS NULL") }
        if let since {
            conditions.append("createdDate >= ?")
            arguments += [since.storeSeconds]
        }
        arguments += [limit]
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try readSnapshot { db in
            try Row.fetchAll(db, sql: "SELECT * FROM deadLetter \(filter) ORDER BY id DESC LIMIT ?", arguments: arguments).map(Self.deadLetter)
        }
    }

    public func waitingDeadLetterCount() throws -> Int {
        try readSnapshot { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM deadLetter WHERE resolvedDate IS NULL") ?? 0 }
    }

    /// The dead letters waiting for a person, and those resolved.
    static func deadLetterCounts(in db: Database) throws -> (waiting: Int, resolved: Int) {
        let row = try Row.fetchOne(db, sql: "SELECT total(resolvedDate IS NULL) AS waiting, total(resolvedDate IS NOT NULL) AS resolved FROM deadLetter")
        return (Int((row?["waiting"] as Double?) ?? 0), Int((row?["resolved"] as Double?) ?? 0))
    }

    private static func deadLetter(_ row: Row) -> DeadLetter {
        DeadLetter(
            id: row["id"], system: row["system"], resourceType: row["resourceType"], resourceID: row["resourceID"],
            outboxEntryID: row["outboxEntryID"], reason: row["reason"], detail: row["detail"],
            payload: row["payload"], createdDate: row.date("createdDate") ?? Date(timeIntervalSince1970: 0),
            replayedDate: row.date("replayedDate"), resolvedDate: row.date("resolvedDate"), resolution: row["resolution"])
    }
}
