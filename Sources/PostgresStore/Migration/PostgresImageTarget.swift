import Foundation
import Logging
import PostgresNIO
import Store

/// An empty PostgreSQL store a migration fills, in one transaction: a migration that fails or is
/// stopped leaves the database as it was (PostgreSQL rolls back what a lost connection had begun).
///
/// Empty means: no row in any table a migration fills, and the sync clock never advanced. The
/// transaction holds the writer lease's advisory lock (``PostgresWriterLease/leaseKey``) for its length,
/// so that no CareGate process writes to the store meanwhile; a store whose lease another process holds
/// is refused rather than waited for.
public struct PostgresImageTarget: StoreImageTarget {
    public let store: PostgreSQLStore
    private static let logger = Logger(label: "caregate.postgres.migration")

    public init(store: PostgreSQLStore) {
        self.store = store
    }

    public var storeDescription: String { store.database.location.redacted }

    public func fill(_ copy: @escaping @Sendable (any StoreImageWriter) async throws -> Void) async throws {
        let url = storeDescription
        do {
            try await store.database.client.withTransaction(logger: Self.logger) { connection in
                let leased = try await connection.values(
                    "SELECT pg_try_advisory_xact_lock(\(PostgresWriterLease.leaseKey))", as: Bool.self, logger: Self.logger)
                guard leased.first == true else {
                    throw StoreMigrationError.targetNotEmpty(store: url, holds: "a CareGate process holding its writer lease")
                }
                if let held = try await Self.firstData(connection) {
                    throw StoreMigrationError.targetNotEmpty(store: url, holds: held)
                }
                let writer = PostgresImageWriter(connection: connection)
                try await copy(writer)
                try await writer.finish()
            }
        } catch let error as PostgresTransactionError {
            throw Self.cause(error, url: url)
        } catch let error as PSQLError {
            throw PostgresStoreError.server(url: url, problem: PostgresDatabase.message(error))
        }
    }

    /// What the store holds already ("rows in outbox"), or `nil` when it is empty.
    static func firstData(_ connection: PostgresConnection) async throws -> String? {
        for table in PostgresImageTable.filledTables {
            let found = try await connection.values(
                PostgresQuery(unsafeSQL: "SELECT EXISTS (SELECT 1 FROM \(table))"), as: Bool.self, logger: logger)
            if found.first == true { return "rows in \(table)" }
        }
        let clock = try await connection.values("SELECT clock FROM sync_clock", as: Int64.self, logger: logger)
        if let value = clock.first, value > 0 { return "a sync clock at \(value)" }
        return nil
    }

    /// The error that ended a transaction, as the store names it.
    private static func cause(_ error: PostgresTransactionError, url: String) -> any Error {
        let cause = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
        if let psql = cause as? PSQLError { return PostgresStoreError.server(url: url, problem: PostgresDatabase.message(psql)) }
        return cause ?? PostgresStoreError.server(url: url, problem: "the migration's transaction failed")
    }
}
