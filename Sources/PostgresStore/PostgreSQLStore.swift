import Foundation
import Logging
import PostgresNIO
import Store
import Synchronization

/// The PostgreSQL store: the whole ``Store`` protocol, and ``AppSyncStore``, ``ConsentStore``,
/// ``QuestionnaireStore``, ``SyncRunStore``, ``ImportCoverageStore`` and ``AuditTrailStore``, with the
/// semantics of ``SQLiteStore``, checked by contract tests that run the same batches on both
/// (`EntityWriteContractTests`, `EntityReadContractTests`, `AppSyncContractTests`, `StagingContractTests`
/// and others in Tests/PostgresStoreTests). Several processes on several machines share one database:
/// the writer lease and append gate are advisory locks (``lease``), the app clock is ticked under its row
/// lock until commit, and the outbox and the pulls offer claims for workers side by side (``outbox``,
/// ``pulls``), which the sync job's pushes and pulls use (``OutboxClaimingStore``, ``PullPartitionStore``).
/// `caregate --store postgres://...` opens one
/// (``open(location:creating:busyTimeout:environment:warn:)``); Docs/postgresql.md says how.
///
/// The operations history and the audit trail keep dates as seconds since 1970 in `double precision`, as
/// the SQLite store keeps them, so that they move from one store to the other (`caregate store migrate`)
/// equal to the bit; so do the outbox's entries and the staging records (``PostgresStagingSchema``). Only
/// the claims' leases (`claimed_until`) are `timestamptz`, compared with the database's clock.
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

    /// The presence of this process's workers, which their claims last on (``PostgresWorkerPresence``).
    let presence: PostgresWorkerPresence

    /// A store on `database`, migrated to this build's schema.
    /// `busyTimeout`: how long a write job waits for the writer lease, in seconds.
    public static func open(_ database: PostgresDatabase, busyTimeout: TimeInterval = 30) throws -> PostgreSQLStore {
        try migrations.apply(to: database)
        return PostgreSQLStore(database: database, busyTimeout: busyTimeout)
    }

    private init(database: PostgresDatabase, busyTimeout: TimeInterval) {
        self.database = database
        lease = PostgresWriterLease(location: database.connectingLocation, database: database, environment: [:], busyTimeout: busyTimeout)
        presence = PostgresWorkerPresence(database: database)
    }

    /// Ends the store's connections (the lock sessions first, which releases what they hold).
    public func close() {
        presence.close()
        lease.close()
        database.close()
    }

    static let logger = Logger(label: "caregate.postgres.store")
}
