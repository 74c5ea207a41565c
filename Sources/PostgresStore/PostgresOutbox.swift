import CareModel
import Foundation
import Logging
import PostgresNIO
import Store

/// The export outbox on PostgreSQL, shared by any number of workers: the SQLite store's outbox
/// (``OutboxEntry``, ``OutboxState``, ``OutboxTransition``, one entry per destination and entity version)
/// plus claims, so that several workers push side by side and never send the same entry at once.
///
/// A worker ``claim(worker:limit:leaseFor:now:)``s a batch of due entries (`FOR UPDATE SKIP LOCKED`, in id
/// order, in one short statement), sends them, and records the answer with ``transition(_:_:worker:)`` or
/// ``acknowledge(_:worker:at:)``, which only the entry's current claimant may do. A claim lapses at its
/// `claimed_until`: a worker that died leaves its entries to be taken over by the next claim. A late
/// answer of the worker whose claim was taken over is refused (``PostgresOutboxRefusal/claimNotHeld(id:worker:holder:)``),
/// so an entry is acknowledged once.
///
/// Locks are taken in one order (by id) by every statement that writes several entries, and each
/// statement is its own transaction: workers cannot deadlock each other, and no lock is held while a
/// worker talks to a FHIR server.
///
/// ## Topics
/// - ``enqueue(_:)``: add entries (an entity version already queued for a destination keeps its entry)
/// - ``claim(worker:limit:leaseFor:now:)``, ``transition(_:_:worker:)``, ``acknowledge(_:worker:at:)``: the workers' side
/// - ``entry(id:)``, ``entry(destination:entityUUID:)``, ``entries(ids:)``, ``entries(in:limit:)``, ``claimHolder(id:)``: reads
/// - ``PostgresOutboxSchema``: its tables
public struct PostgresOutbox: Sendable {
    public let database: PostgresDatabase

    /// The outbox of `database`, whose schema must have been migrated (``prepare()``).
    public init(database: PostgresDatabase) {
        self.database = database
    }

    /// Applies the outbox's migrations (``PostgresOutboxSchema/migrations``, and the staging schema's changes
    /// to its table, ``PostgresStagingSchema/outboxMigrations``) that `database` lacks.
    public func prepare() throws {
        try PostgresMigrations(PostgresOutboxSchema.migrations + PostgresStagingSchema.outboxMigrations).apply(to: database)
    }

    static let logger = Logger(label: "caregate.postgres.outbox")
    /// Entries per INSERT of ``enqueue(_:)``: a bound on one statement's arrays.
    static let entriesPerStatement = 2_000

    /// Adds `entries` as pending, each unless the same entity version is already queued for its
    /// destination; returns the id of each entry, new or existing, in the order given. One transaction;
    /// rows are inserted in key order, so that concurrent enqueuers wait for each other in one order.
    public func enqueue(_ entries: [OutboxEntry]) throws -> [Int64] {
        guard !entries.isEmpty else { return [] }
        var firstOfKey: [EntryKey: OutboxEntry] = [:]
        for entry in entries where firstOfKey[EntryKey(entry)] == nil { firstOfKey[EntryKey(entry)] = entry }
        // Byte order, as the INSERT's ORDER BY (COLLATE "C"): every enqueuer meets the keys in one order.
        let unique = firstOfKey.values.sorted {
            $0.destination == $1.destination
                ? $0.entityUUID.uuidString < $1.entityUUID.uuidString : $0.destination.utf8.lexicographicallyPrecedes($1.destination.utf8)
        }
        let found = try database.run { client in
            try await client.withTransaction(logger: Self.logger) { connection in
                var ids: [EntryKey: Int64] = [:]
                for start in stride(from: 0, to: unique.count, by: Self.entriesPerStatement) {
                    let chunk = Array(unique[start..<min(start + Self.entriesPerStatement, unique.count)])
                    try await Self.insert(chunk, on: connection)
                    let rows = try await connection.query("""
                        SELECT o.id, o.destination, o.entity_uuid FROM outbox o
                        JOIN unnest(\(chunk.map(\.destination))::text[], \(chunk.map(\.entityUUID))::uuid[]) AS t(destination, entity_uuid)
                          ON o.destination = t.destination AND o.entity_uuid = t.entity_uuid
                        """, logger: Self.logger)
                    for try await (id, destination, uuid) in rows.decode((Int64, String, UUID).self) {
                        ids[EntryKey(destination: destination, uuid: uuid)] = id
                    }
                }
                return ids
            }
        }
        return try entries.map { entry in
            guard let id = found[EntryKey(entry)] else {
                throw PostgresStoreError.server(url: database.location.redacted, problem: "an enqueued outbox entry was not found after its insert")
            }
            return id
        }
    }

    /// One INSERT of `entries` (unique keys, in key order), skipping those already queued.
    private static func insert(_ entries: [OutboxEntry], on connection: PostgresConnection) async throws {
        // postgres-nio binds no NULL inside an array: a payload's presence travels beside it.
        let payloads = entries.map { ByteBuffer(bytes: $0.payload ?? Data()) }
        try await connection.finish("""
            INSERT INTO outbox (destination, entity_kind, entity_id, entity_uuid, payload, created_at, updated_at)
            SELECT destination, entity_kind, entity_id, entity_uuid, CASE WHEN has_payload THEN payload END, created_at, updated_at
            FROM unnest(\(entries.map(\.destination))::text[], \(entries.map(\.entityKind.rawValue))::text[], \(entries.map(\.entityID))::text[],
                        \(entries.map(\.entityUUID))::uuid[], \(payloads)::bytea[], \(entries.map { $0.payload != nil })::bool[],
                        \(entries.map(\.createdDate.timeIntervalSince1970))::float8[], \(entries.map(\.updatedDate.timeIntervalSince1970))::float8[])
                 AS t(destination, entity_kind, entity_id, entity_uuid, payload, has_payload, created_at, updated_at)
            ORDER BY destination COLLATE "C", entity_uuid
            ON CONFLICT (destination, entity_uuid) DO NOTHING
            """, logger: logger)
    }

    // MARK: Reads

    /// Outbox entry `id`, if it exists.
    public func entry(id: Int64) throws -> OutboxEntry? {
        try read("WHERE id = \(id)").first?.entry
    }

    /// The entry of entity version `entityUUID` for `destination`, if one was queued.
    public func entry(destination: String, entityUUID: UUID) throws -> OutboxEntry? {
        try read("WHERE destination = \(destination) AND entity_uuid = \(entityUUID)").first?.entry
    }

    /// The entries `ids` that exist, in id order.
    public func entries(ids: [Int64]) throws -> [OutboxEntry] {
        let unique = Array(Set(ids)).sorted()
        var entries: [OutboxEntry] = []
        for start in stride(from: 0, to: unique.count, by: Self.entriesPerStatement) {
            let chunk = Array(unique[start..<min(start + Self.entriesPerStatement, unique.count)])
            entries += try read("WHERE id = ANY(\(chunk)::bigint[]) ORDER BY id").map(\.entry)
        }
        return entries
    }

    /// The entries in `state`, oldest first.
    public func entries(in state: OutboxState, limit: Int = 1_000) throws -> [OutboxEntry] {
        try read("WHERE state = \(state.rawValue) ORDER BY id LIMIT \(max(0, limit))").map(\.entry)
    }

    /// Who holds entry `id`'s claim and until when; nil when nobody does (never claimed, or released by an
    /// acknowledgement or a failure). A lapsed claim is still held until another worker takes it over.
    public func claimHolder(id: Int64) throws -> (worker: String, until: Date)? {
        guard let row = try read("WHERE id = \(id)").first, let worker = row.claimedBy, let until = row.claimedUntil else { return nil }
        return (worker, until)
    }

    /// The rows a condition (`WHERE ...`, with its binds) picks.
    private func read(_ condition: PostgresQuery) throws -> [PostgresOutboxRow] {
        let query = PostgresQuery(unsafeSQL: "SELECT \(PostgresOutboxRow.columns) FROM outbox " + condition.sql, binds: condition.binds)
        let url = database.location.redacted
        return try database.run { client in
            var rows: [PostgresOutboxRow] = []
            for try await values in try await client.query(query, logger: Self.logger).decode(PostgresOutboxRow.Columns.self) {
                rows.append(try PostgresOutboxRow(values, url: url))
            }
            return rows
        }
    }
}

/// An entry's key in the outbox: one entry per destination and entity version.
struct EntryKey: Hashable {
    var destination: String
    var uuid: UUID

    init(destination: String, uuid: UUID) {
        self.destination = destination
        self.uuid = uuid
    }

    init(_ entry: OutboxEntry) {
        self.init(destination: entry.destination, uuid: entry.entityUUID)
    }
}
