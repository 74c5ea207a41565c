import Foundation
import Logging
import PostgresNIO
import Store

/// The app API's server clock on PostgreSQL (CareKit's knowledge-vector sync): one process uuid and one
/// logical clock for the whole store, kept in the database (`sync_clock`, one row), so that every
/// `caregate serve` instance and sync worker is the same process of the vector and a device may talk to
/// any of them.
///
/// A sequence would not do: its values commit out of order, so a pull could see clock 11 while 10 is in
/// flight, and the device, which then knows 11, would skip 10 for good. So a writing transaction allocates
/// its clock with ``tick(on:)`` (`UPDATE sync_clock SET clock = clock + 1 RETURNING clock`), which keeps
/// the row locked until the transaction ends: the next writer's tick waits for that commit (or rollback),
/// so clocks commit in their order, and a snapshot that sees clock N sees every transaction of a clock up
/// to N. A pull reads ``serverClock(in:)`` and the revisions up to it in one snapshot.
///
/// Tick late in the transaction (just before its revision rows), and once: the row lock serializes every
/// writer of the store from the tick to the commit. The writing transaction must be READ COMMITTED
/// (PostgreSQL's default): under REPEATABLE READ or SERIALIZABLE the waiting tick fails with a
/// serialization error (SQLSTATE 40001) once the first commits, instead of reading the new clock.
///
/// The table is made by ``PostgresCoordinationMigrations``.
public enum PostgresServerClock {
    private static let logger = Logger(label: "caregate.postgres.clock")

    /// Allocates the next clock inside the transaction open on `connection` (READ COMMITTED), holding the
    /// clock's row lock until that transaction commits or rolls back.
    public static func tick(on connection: PostgresConnection) async throws -> Int64 {
        // Read to the statement's end: its row comes once the row lock is taken.
        if let clock = try await connection.values("UPDATE sync_clock SET clock = clock + 1 WHERE singleton RETURNING clock", as: Int64.self, logger: logger).first {
            return clock
        }
        throw PostgresStoreError.server(url: "sync_clock", problem: "the store's clock row is missing (was the store migrated?)")
    }

    /// The store's process uuid and its last committed clock, read on `connection` (in the caller's snapshot
    /// when it is in a transaction).
    public static func serverClock(on connection: PostgresConnection) async throws -> ServerClock {
        var found: ServerClock?
        for try await (uuid, clock) in try await connection.query("SELECT process_uuid, clock FROM sync_clock WHERE singleton", logger: logger).decode((UUID, Int64).self) {
            found = ServerClock(processUUID: uuid, clock: Int(clock))
        }
        if let found { return found }
        throw PostgresStoreError.server(url: "sync_clock", problem: "the store's clock row is missing (was the store migrated?)")
    }

    /// The store's process uuid and last committed clock, read through `database`'s pool.
    public static func serverClock(in database: PostgresDatabase) throws -> ServerClock {
        try database.run { client in
            try await client.withConnection { try await serverClock(on: $0) }
        }
    }
}
