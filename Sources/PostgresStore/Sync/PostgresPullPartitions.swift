import Foundation
import Logging
import PostgresNIO
import Store

/// How several sync workers split the pulls of one store so that two never import the same resources at
/// once, and move a pull's cursor only while they hold its part of the work (issue 47, item 2).
///
/// A *partition* names one part of the pulls: a server and a resource type (`partition(server:resourceType:)`),
/// or one patient's resources of a type when the job pulls patient by patient. A worker claims the
/// partitions it will pull, with a lease as the outbox's claims have (``PostgresOutbox``): claimed in one
/// statement that passes over rows another claim is taking (`FOR UPDATE SKIP LOCKED`), so two workers
/// never hold one partition, and a dead worker's partitions are taken over once its lease lapses. A
/// worker renews its lease while it pulls, and releases what it is done with.
///
/// The cursor of a pull (``SyncCheckpoint``) moves only under the partition's claim, in the transaction
/// that stores what was pulled (``setCheckpoint(_:holding:worker:on:now:)``): the claim's row is locked
/// until that transaction commits, so a takeover waits for it, and a worker whose claim was taken over
/// moves nothing (it is told, and stops).
///
/// Locks are taken in one order (partitions sorted by their bytes), each statement its own transaction
/// or the caller's one import transaction: workers cannot deadlock on them.
public struct PostgresPullPartitions: Sendable {
    public let database: PostgresDatabase

    public init(database: PostgresDatabase) {
        self.database = database
    }

    /// The most partitions one call names, and the longest lease.
    public static let limits = (partitions: 10_000, lease: Duration.seconds(86_400))

    /// The partition of the pulls of `resourceType` from `server`, or of one patient's.
    public static func partition(server: String, resourceType: String, patient: String? = nil) -> String {
        PullPartition.name(server: server, resourceType: resourceType, patient: patient)
    }

    /// Claims for `worker`, until `now + lease`, those of `partitions` that no other live claim holds
    /// (those `worker` holds already are renewed); returns them, sorted. `now` is the database's clock
    /// when nil.
    /// With `presence`, the claims last only while `worker`'s presence lock is held as well
    /// (``PostgresWorkerPresence``: the caller announces it first), so that they are free as soon as its
    /// process dies. A claim whose worker is gone is free, whatever its lease.
    public func claim(_ partitions: [String], worker: String, leaseFor lease: Duration, now: Date? = nil, presence: Bool = false) throws -> [String] {
        try Self.check(partitions, worker: worker)
        guard lease > .zero, lease <= Self.limits.lease else {
            throw PostgresOutboxRequestError(reason: "a lease lasts more than 0 seconds and at most \(Self.limits.lease), not \(lease)")
        }
        let sorted = Array(Set(partitions)).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let seconds = lease.inSeconds
        return try database.run { client in
            // Rows made in byte order (any collation): concurrent claimers insert without deadlocking.
            try await client.finish("""
                INSERT INTO pull_partition (partition)
                SELECT p FROM unnest(\(sorted)::text[]) AS p ORDER BY p COLLATE "C" ON CONFLICT DO NOTHING
                """, logger: Self.logger)
            let rows = try await client.query("""
                WITH clock AS (SELECT COALESCE(\(now)::timestamptz, clock_timestamp()) AS now),
                present AS MATERIALIZED (\(unescaped: PostgresWorkerPresence.presentSQL)),
                free AS MATERIALIZED (
                    SELECT p.partition FROM pull_partition p, clock
                    WHERE p.partition = ANY(\(sorted)::text[])
                      AND (p.claimed_until IS NULL OR NOT \(unescaped: PostgresWorkerPresence.liveSQL("p", now: "clock.now")) OR p.claimed_by = \(worker))
                    ORDER BY p.partition COLLATE "C"
                    FOR UPDATE OF p SKIP LOCKED
                )
                UPDATE pull_partition p SET claimed_by = \(worker), claimed_until = clock.now + make_interval(secs => \(seconds)), claimed_presence = \(presence)
                FROM free, clock WHERE p.partition = free.partition
                RETURNING p.partition
                """, logger: Self.logger)
            var claimed: [String] = []
            for try await partition in rows.decode(String.self) { claimed.append(partition) }
            return claimed.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }
    }

    /// Gives back `worker`'s claims of `partitions` (done, or stopping): another worker may take them at once.
    public func release(_ partitions: [String], worker: String) throws {
        try Self.check(partitions, worker: worker)
        try database.run { client in
            try await client.finish(
                "UPDATE pull_partition SET claimed_by = NULL, claimed_until = NULL WHERE partition = ANY(\(partitions)::text[]) AND claimed_by = \(worker)",
                logger: Self.logger)
        }
    }

    /// Who holds `partition` now and until when; nil when nobody's claim is live (its lease lapsed, or its
    /// worker, when the claim asked for its presence, is gone).
    public func holder(of partition: String, now: Date? = nil) throws -> (worker: String, until: Date)? {
        try database.run { client in
            let rows = try await client.query("""
                WITH clock AS (SELECT COALESCE(\(now)::timestamptz, clock_timestamp()) AS now),
                present AS MATERIALIZED (\(unescaped: PostgresWorkerPresence.presentSQL))
                SELECT p.claimed_by, p.claimed_until FROM pull_partition p, clock
                WHERE p.partition = \(partition) AND \(unescaped: PostgresWorkerPresence.liveSQL("p", now: "clock.now"))
                """, logger: Self.logger)
            var found: (String, Date)?
            for try await (worker, until) in rows.decode((String, Date).self) { found = (worker, until) }
            return found
        }
    }

    /// Moves the cursor of `checkpoint` (its server and resource type) when `worker` holds `partition`
    /// now, in its own transaction; false, and nothing written, when it does not (its claim lapsed or was
    /// taken over).
    public func setCheckpoint(_ checkpoint: SyncCheckpoint, holding partition: String, worker: String, now: Date? = nil) throws -> Bool {
        try database.run { client in
            try await client.withTransaction(logger: Self.logger) { connection in
                try await Self.setCheckpoint(checkpoint, holding: partition, worker: worker, on: connection, now: now)
            }
        }
    }

    /// ``setCheckpoint(_:holding:worker:now:)`` inside the caller's transaction on `connection` (the one that
    /// stores what was pulled): the partition's row stays locked until it commits, so no takeover
    /// happens between the check and the commit.
    public static func setCheckpoint(
        _ checkpoint: SyncCheckpoint, holding partition: String, worker: String, on connection: PostgresConnection, now: Date? = nil
    ) async throws -> Bool {
        let rows = try await connection.query("""
            WITH held AS (
                SELECT 1 FROM pull_partition
                WHERE partition = \(partition) AND claimed_by = \(worker)
                  AND claimed_until > COALESCE(\(now)::timestamptz, clock_timestamp())
                FOR UPDATE
            )
            INSERT INTO sync_checkpoint (server, resource_type, cursor, updated_date)
            SELECT \(checkpoint.server), \(checkpoint.resourceType), \(checkpoint.cursor), \(checkpoint.updatedDate.timeIntervalSince1970) FROM held
            ON CONFLICT (server, resource_type) DO UPDATE SET cursor = excluded.cursor, updated_date = excluded.updated_date
            RETURNING 1
            """, logger: logger)
        var moved = false
        for try await _ in rows { moved = true }
        return moved
    }

    /// Moves every cursor of `checkpoints` when `worker` holds the partition of each (its server and
    /// resource type) now, in one transaction that locks those partitions' rows (in byte order) until it
    /// commits; when it does not hold them all, moves nothing and returns the partitions it lacks (sorted).
    public func setCheckpoints(_ checkpoints: [SyncCheckpoint], worker: String, now: Date? = nil) throws -> [String] {
        let partitions = Array(Set(checkpoints.map { Self.partition(server: $0.server, resourceType: $0.resourceType) }))
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        try Self.check(partitions, worker: worker)
        guard !checkpoints.isEmpty else { return [] }
        var latest: [String: SyncCheckpoint] = [:]
        for checkpoint in checkpoints { latest[Self.partition(server: checkpoint.server, resourceType: checkpoint.resourceType)] = checkpoint }
        let rows = latest.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map(\.value)
        return try database.run { client in
            try await client.withTransaction(logger: Self.logger) { connection in
                let held = try await connection.values("""
                    SELECT partition FROM pull_partition
                    WHERE partition = ANY(\(partitions)::text[]) AND claimed_by = \(worker)
                      AND claimed_until > COALESCE(\(now)::timestamptz, clock_timestamp())
                    ORDER BY partition COLLATE "C"
                    FOR UPDATE
                    """, as: String.self, logger: Self.logger)
                let lost = partitions.filter { !Set(held).contains($0) }
                guard lost.isEmpty else { return lost }
                try await connection.finish("""
                    INSERT INTO sync_checkpoint (server, resource_type, cursor, updated_date)
                    SELECT * FROM unnest(\(rows.map(\.server))::text[], \(rows.map(\.resourceType))::text[], \(rows.map(\.cursor))::text[],
                                         \(rows.map(\.updatedDate.timeIntervalSince1970))::float8[])
                    ON CONFLICT (server, resource_type) DO UPDATE SET cursor = excluded.cursor, updated_date = excluded.updated_date
                    """, logger: Self.logger)
                return []
            }
        }
    }

    /// The cursor of the pulls of `resourceType` from `server`, if one was kept.
    public func checkpoint(server: String, resourceType: String) throws -> SyncCheckpoint? {
        try database.run { client in
            let rows = try await client.query(
                "SELECT cursor, updated_date FROM sync_checkpoint WHERE server = \(server) AND resource_type = \(resourceType)", logger: Self.logger)
            var found: SyncCheckpoint?
            for try await (cursor, updated) in rows.decode((String, Double).self) {
                found = SyncCheckpoint(server: server, resourceType: resourceType, cursor: cursor, updatedDate: Date(timeIntervalSince1970: updated))
            }
            return found
        }
    }

    static let logger = Logger(label: "caregate.postgres.pulls")

    /// Refuses a worker's name or partitions outside their bounds.
    static func check(_ partitions: [String], worker: String) throws {
        try PostgresOutbox.check(worker: worker)
        guard partitions.count <= limits.partitions, partitions.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 4_096 }) else {
            throw PostgresOutboxRequestError(reason: "a call names at most \(limits.partitions) partitions of 1 to 4096 bytes each")
        }
    }
}
