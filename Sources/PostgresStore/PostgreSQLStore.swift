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
/// equal to the bit; the outbox keeps `timestamptz` (microseconds), which its leases compare with the
/// database's clock.
///
/// ## Topics
/// - ``open(_:)``: connect and migrate
/// - ``migrations``: the schema
public final class PostgreSQLStore: Sendable {
    public let database: PostgresDatabase
    /// The writer lease and the append gate, on sessions of their own (``withWriterLease(_:_:)``).
    public let lease: PostgresWriterLease
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
    /// `busyTimeout`: how long a write job waits for the writer lease, in seconds.
    public static func open(_ database: PostgresDatabase, busyTimeout: TimeInterval = 30) throws -> PostgreSQLStore {
        try migrations.apply(to: database)
        return PostgreSQLStore(database: database, busyTimeout: busyTimeout)
    }

    private init(database: PostgresDatabase, busyTimeout: TimeInterval) {
        self.database = database
        lease = PostgresWriterLease(location: database.connectingLocation, database: database, environment: [:], busyTimeout: busyTimeout)
    }

    /// Ends the store's connections (the lock sessions first, which releases what they hold).
    public func close() {
        lease.close()
        database.close()
    }

    static let logger = Logger(label: "caregate.postgres.store")
}
