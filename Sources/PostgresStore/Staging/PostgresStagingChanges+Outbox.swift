import Foundation
import Logging
import PostgresNIO
import Store

// The outbox's changes within a batch: enqueues and the steps of the single-process jobs (the sync job on
// one worker, an export, `caregate outbox retry`), as the SQLite store makes them (SQLiteStore+Staging.swift).
// Workers sharing the outbox claim entries and step them under their claim instead (``PostgresOutbox``).
extension PostgresStagingChanges {
    /// Adds `entries` as pending, each unless the same entity version is already queued for its
    /// destination; returns the id of each, new or existing, in the order given.
    ///
    /// Those queued already are read first and only the others inserted, in the order given, so that ids
    /// grow in batch order (the push sends the oldest first) and none is spent on an entry that exists, as
    /// in SQLite. `ON CONFLICT DO NOTHING` covers a concurrent enqueue of the same version: the row it
    /// committed is read back.
    static func enqueue(_ entries: [OutboxEntry], on connection: PostgresConnection, logger: Logger) async throws -> [Int64] {
        guard !entries.isEmpty else { return [] }
        var ids: [EntryKey: Int64] = [:]
        var unique: [OutboxEntry] = []
        var seen = Set<EntryKey>()
        for entry in entries where seen.insert(EntryKey(entry)).inserted { unique.append(entry) }
        for start in stride(from: 0, to: unique.count, by: idsPerStatement) {
            let chunk = Array(unique[start..<min(start + idsPerStatement, unique.count)])
            try await readIDs(of: chunk, into: &ids, on: connection, logger: logger)
            let missing = chunk.filter { ids[EntryKey($0)] == nil }
            guard !missing.isEmpty else { continue }
            // postgres-nio binds no NULL inside an array: a payload's presence travels beside it.
            let payloads = missing.map { ByteBuffer(bytes: $0.payload ?? Data()) }
            let rows = try await connection.query("""
                INSERT INTO outbox (destination, entity_kind, entity_id, entity_uuid, payload, created_at, updated_at)
                SELECT destination, entity_kind, entity_id, entity_uuid, CASE WHEN has_payload THEN payload END, created_at, updated_at
                FROM unnest(\(missing.map(\.destination))::text[], \(missing.map(\.entityKind.rawValue))::text[], \(missing.map(\.entityID))::text[],
                            \(missing.map(\.entityUUID))::uuid[], \(payloads)::bytea[], \(missing.map { $0.payload != nil })::bool[],
                            \(missing.map(\.createdDate.timeIntervalSince1970))::float8[], \(missing.map(\.updatedDate.timeIntervalSince1970))::float8[])
                     WITH ORDINALITY AS t(destination, entity_kind, entity_id, entity_uuid, payload, has_payload, created_at, updated_at, position)
                ORDER BY position
                ON CONFLICT (destination, entity_uuid) DO NOTHING
                RETURNING id, destination, entity_uuid
                """, logger: logger)
            for try await (id, destination, uuid) in rows.decode((Int64, String, UUID).self) {
                ids[EntryKey(destination: destination, uuid: uuid)] = id
            }
            let raced = missing.filter { ids[EntryKey($0)] == nil }
            if !raced.isEmpty { try await readIDs(of: raced, into: &ids, on: connection, logger: logger) }
        }
        return try entries.map { entry in
            guard let id = ids[EntryKey(entry)] else {
                throw StoreError.invalidEntity(kind: entry.entityKind, id: entry.entityID, reason: "its outbox entry was not found after its insert")
            }
            return id
        }
    }

    /// Reads the ids of those of `entries` that are queued into `ids`.
    private static func readIDs(of entries: [OutboxEntry], into ids: inout [EntryKey: Int64], on connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query("""
            SELECT o.id, o.destination, o.entity_uuid FROM outbox o
            JOIN unnest(\(entries.map(\.destination))::text[], \(entries.map(\.entityUUID))::uuid[]) AS t(destination, entity_uuid)
              ON o.destination = t.destination AND o.entity_uuid = t.entity_uuid
            """, logger: logger)
        for try await (id, destination, uuid) in rows.decode((Int64, String, UUID).self) {
            ids[EntryKey(destination: destination, uuid: uuid)] = id
        }
    }

    /// Moves outbox entry `id` one step; refuses a step its current state does not allow
    /// (``StoreError/invalidOutboxTransition(id:from:to:)``) and an entry that is not there
    /// (``StoreError/outboxEntryNotFound(id:)``).
    static func transition(_ id: Int64, _ step: OutboxTransition, on connection: PostgresConnection, logger: Logger) async throws {
        let moved = try await update([id], by: step, on: connection, logger: logger)
        guard moved == 0 else { return }
        let states = try await connection.values("SELECT state FROM outbox WHERE id = \(id)", as: String.self, logger: logger)
        guard let text = states.first else { throw StoreError.outboxEntryNotFound(id: id) }
        guard let state = OutboxState(rawValue: text) else {
            throw StoreError.invalidEntity(kind: .outcome, id: "outbox entry \(id)", reason: "its state \(text) is unknown to this build")
        }
        throw StoreError.invalidOutboxTransition(id: id, from: state, to: step.targetState)
    }

    /// Moves the outbox entries `ids` by the same step, as ``transition(_:_:on:logger:)`` does one after
    /// another, in one UPDATE per ``idsPerStatement`` of them under a savepoint: when any cannot take the
    /// step (or an id is there twice: no state but `failed` takes a step twice in a row, and a repeated
    /// `failed` changes nothing), what the UPDATEs did is undone and the entries are taken one by one, so
    /// that the error is the one the first of them meets.
    static func transition(_ ids: [Int64], _ step: OutboxTransition, on connection: PostgresConnection, logger: Logger) async throws {
        guard ids.count > 1 else {
            if let id = ids.first { try await transition(id, step, on: connection, logger: logger) }
            return
        }
        try await connection.finish("SAVEPOINT outbox_steps", logger: logger)
        var movedAll = true
        for start in stride(from: 0, to: ids.count, by: idsPerStatement) {
            let chunk = Array(ids[start..<min(start + idsPerStatement, ids.count)])
            guard try await update(chunk, by: step, on: connection, logger: logger) == chunk.count else {
                movedAll = false
                break
            }
        }
        if movedAll {
            try await connection.finish("RELEASE SAVEPOINT outbox_steps", logger: logger)
            return
        }
        try await connection.finish("ROLLBACK TO SAVEPOINT outbox_steps", logger: logger)
        try await connection.finish("RELEASE SAVEPOINT outbox_steps", logger: logger)
        for id in ids { try await transition(id, step, on: connection, logger: logger) }
    }

    /// The UPDATE that moves entries `ids` by `step`, guarded by the states it may come from (the SQLite
    /// store's, column by column); returns how many rows it moved. An acknowledgement or a failure also
    /// ends a claim a worker held on the entry, as the claimants' steps do (``PostgresOutbox``).
    private static func update(_ ids: [Int64], by step: OutboxTransition, on connection: PostgresConnection, logger: Logger) async throws -> Int {
        let sources = OutboxState.allCases.filter { $0.allows(step.targetState) }.map(\.rawValue)
        let query: PostgresQuery
        switch step {
        case .sent(let date):
            query = """
                UPDATE outbox SET state = 'sent', attempts = attempts + 1, next_attempt_at = NULL, updated_at = \(date.timeIntervalSince1970)
                WHERE id = ANY(\(ids)::bigint[]) AND state = ANY(\(sources)::text[])
                RETURNING 1
                """
        case .acknowledged(let date, let server):
            query = """
                UPDATE outbox SET state = 'acknowledged', last_error = NULL, next_attempt_at = NULL, server_id = \(server?.id),
                    server_version = \(server?.version), updated_at = \(date.timeIntervalSince1970), claimed_until = NULL
                WHERE id = ANY(\(ids)::bigint[]) AND state = ANY(\(sources)::text[])
                RETURNING 1
                """
        case .failed(let error, let retryAt, let date):
            query = """
                UPDATE outbox SET state = 'failed', last_error = \(error), next_attempt_at = \(retryAt?.timeIntervalSince1970)::float8,
                    updated_at = \(date.timeIntervalSince1970), claimed_until = NULL
                WHERE id = ANY(\(ids)::bigint[]) AND state = ANY(\(sources)::text[])
                RETURNING 1
                """
        }
        var moved = 0
        for try await _ in try await connection.query(query, logger: logger) { moved += 1 }
        return moved
    }
}
