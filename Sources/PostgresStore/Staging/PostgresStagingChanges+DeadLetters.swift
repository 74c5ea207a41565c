import Foundation
import Logging
import PostgresNIO
import Store

// Dead letters within a batch: filing one, and settling them after a replay, as the SQLite store does
// (SQLiteStore+Staging.swift, SQLiteStore+DeadLetters.swift). A dead letter is never deleted.
extension PostgresStagingChanges {
    /// Files `letter`; returns its id.
    static func add(_ letter: DeadLetter, on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        let ids = try await connection.values("""
            INSERT INTO dead_letter (system, resource_type, resource_id, outbox_entry_id, reason, detail, payload, created_date)
            VALUES (\(letter.system), \(letter.resourceType), \(letter.resourceID), \(letter.outboxEntryID), \(letter.reason),
                    \(letter.detail), \(letter.payload.map { ByteBuffer(bytes: $0) }), \(letter.createdDate.timeIntervalSince1970))
            RETURNING id
            """, as: Int64.self, logger: logger)
        guard let id = ids.first else { throw StoreError.invalidEntity(kind: .outcome, id: "a dead letter", reason: "its insert returned no id") }
        return id
    }

    /// Records what a replay of dead letter `id` came to, at `date`. A resolved letter is left as it is,
    /// and a failure with the reason it has already changes nothing (the same replay twice changes
    /// nothing); a nil detail keeps the one it has. Returns whether the letter changed.
    static func settleDeadLetter(
        _ id: Int64, _ settlement: DeadLetterSettlement, at date: Date, on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        try await settle(settlement, at: date, whereColumn: "id", is: id, on: connection, logger: logger) > 0
    }

    /// Settles each dead letter waiting for outbox entry `id` as ``settleDeadLetter(_:_:at:on:logger:)``
    /// does; returns how many changed.
    static func settleDeadLetters(
        ofOutboxEntry id: Int64, _ settlement: DeadLetterSettlement, at date: Date, on connection: PostgresConnection, logger: Logger
    ) async throws -> Int {
        try await settle(settlement, at: date, whereColumn: "outbox_entry_id", is: id, on: connection, logger: logger)
    }

    /// The settlement's UPDATE of the waiting letters whose `column` (a name of this file's, never input)
    /// is `value`; returns how many changed.
    private static func settle(
        _ settlement: DeadLetterSettlement, at date: Date, whereColumn column: StaticString, is value: Int64, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Int {
        let seconds = date.timeIntervalSince1970
        let name = "\(column)"
        let query: PostgresQuery = switch settlement {
        case .resolved(let resolution):
            """
            UPDATE dead_letter SET resolved_date = \(seconds), replayed_date = \(seconds), resolution = \(resolution)
            WHERE \(unescaped: name) = \(value) AND resolved_date IS NULL
            RETURNING 1
            """
        case .failedAgain(let reason, let detail):
            """
            UPDATE dead_letter SET reason = \(reason), detail = coalesce(\(detail)::text, detail), replayed_date = \(seconds)
            WHERE \(unescaped: name) = \(value) AND resolved_date IS NULL AND reason IS DISTINCT FROM \(reason)::text
            RETURNING 1
            """
        }
        var changed = 0
        for try await _ in try await connection.query(query, logger: logger) { changed += 1 }
        return changed
    }
}
