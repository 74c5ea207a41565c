import Foundation
import Logging
import PostgresNIO
import Store
import Synchronization

/// The PostgreSQL store, growing part by part toward the whole ``Store`` protocol (issue 47).
///
/// Today it keeps what does not depend on the care entities: the history of sync runs
/// (``SyncRunStore``), the last import's coverage (``ImportCoverageStore``) and the audit trail
/// (``AuditTrailStore``), with the same semantics as ``SQLiteStore``, checked by the same tests on both
/// (`OperationsStoreContractTests`, `AuditTrailContractTests`); and the outbox, whose entries several
/// workers claim side by side (``outbox``, `PostgresOutboxClaimsTests`). The entities,
/// versions, batch writer, outbox and revision log follow; until then `--store postgres://...` is
/// refused by the command line with a typed error (Docs/postgresql.md).
///
/// The operations history and the audit trail keep dates as seconds since 1970 in `double precision`, as
/// the SQLite store keeps them, so that they move from one store to the other (`store migrate`, to come)
/// equal to the bit; so do the outbox's entries and the staging records (``PostgresStagingSchema``). Only
/// the claims' leases (`claimed_until`) are `timestamptz`, compared with the database's clock.
///
/// ## Topics
/// - ``open(_:)``: connect and migrate
/// - ``migrations``: the schema
public final class PostgreSQLStore: Sendable {
    public let database: PostgresDatabase
    /// How many days the audit trail keeps (``prepareAuditTrail(retentionDays:)``).
    let auditRetentionDays = Mutex(AuditRetention.defaultDays)

    /// Every migration of the store, in order: each part's own list.
    public static let migrations = PostgresMigrations(
        PostgresOperationsSchema.migrations + PostgresCoordinationMigrations.all + PostgresOutboxSchema.migrations + PostgresPullSchema.migrations
            + PostgresEntitySchema.migrations + PostgresStagingSchema.migrations)

    /// The outbox, with claims for several workers (``PostgresOutbox``).
    public var outbox: PostgresOutbox { PostgresOutbox(database: database) }

    /// The pulls' partitions and cursors, claimed by several workers (``PostgresPullPartitions``).
    public var pulls: PostgresPullPartitions { PostgresPullPartitions(database: database) }

    /// A store on `database`, migrated to this build's schema.
    public static func open(_ database: PostgresDatabase) throws -> PostgreSQLStore {
        try migrations.apply(to: database)
        return PostgreSQLStore(database: database)
    }

    private init(database: PostgresDatabase) {
        self.database = database
    }

    /// Ends the store's connections.
    public func close() { database.close() }

    static let logger = Logger(label: "caregate.postgres.store")
}
