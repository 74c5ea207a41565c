import Logging
import PostgresNIO
import Store

/// A PostgreSQL store's schema changes: named migrations applied in order, each in its own transaction
/// with its row in `schema_migrations`, so that a database is never left half-migrated; concurrent
/// migrators (several workers starting at once) wait for each other on a transaction-scoped advisory
/// lock and apply each migration once. A database holding migrations this build does not know was
/// prepared by a newer CareGate and is refused (``PostgresStoreError/newerSchema(url:unknown:)``).
public struct PostgresMigrations: Sendable {
    /// One named schema change: its SQL statements, run in order in one transaction.
    public struct Migration: Sendable {
        public var name: String
        public var statements: [String]

        public init(_ name: String, _ statements: [String]) {
            self.name = name
            self.statements = statements
        }
    }

    public var migrations: [Migration]

    public init(_ migrations: [Migration]) {
        self.migrations = migrations
    }

    /// The advisory lock key migrators share (any fixed number: "CGMIGRAT" in ASCII).
    static let lockKey: Int64 = 0x4347_4D49_4752_4154

    /// Applies the migrations `database` does not have yet; returns the names applied now.
    @discardableResult
    public func apply(to database: PostgresDatabase) throws -> [String] {
        let migrations = migrations
        let url = database.location.redacted
        let known = Set(migrations.map(\.name))
        return try database.run { client in
            let logger = Logger(label: "caregate.postgres.migrations")
            // Made and read under the lock: two migrators starting together would race on CREATE TABLE.
            let present = try await client.withTransaction(logger: logger) { connection -> [String] in
                try await connection.finish("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
                try await connection.finish(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())", logger: logger)
                var names: [String] = []
                for try await name in try await connection.query("SELECT name FROM schema_migrations ORDER BY name", logger: logger).decode(String.self) {
                    names.append(name)
                }
                return names
            }
            let unknown = present.filter { !known.contains($0) }
            if !unknown.isEmpty { throw PostgresStoreError.newerSchema(url: url, unknown: unknown) }
            var applied: [String] = []
            for migration in migrations {
                let didApply = try await client.withTransaction(logger: logger) { connection -> Bool in
                    try await connection.finish("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
                    var count: Int64 = 0
                    for try await found in try await connection.query("SELECT count(*) FROM schema_migrations WHERE name = \(migration.name)", logger: logger).decode(Int64.self) {
                        count = found
                    }
                    guard count == 0 else { return false }
                    for statement in migration.statements {
                        try await connection.finish(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.finish("INSERT INTO schema_migrations (name) VALUES (\(migration.name))", logger: logger)
                    return true
                }
                if didApply { applied.append(migration.name) }
            }
            return applied
        }
    }

    /// The names `database` has applied, in name order.
    public static func applied(in database: PostgresDatabase) throws -> [String] {
        try database.run { client in
            var names: [String] = []
            let rows = try await client.query("SELECT name FROM schema_migrations ORDER BY name", logger: Logger(label: "caregate.postgres.migrations"))
            for try await name in rows.decode(String.self) { names.append(name) }
            return names
        }
    }
}
