import Foundation
import Logging
import PostgresNIO
import Store

/// How a command opens the PostgreSQL store a URL names (`--store postgres://...`, `store:`, `CAREGATE_STORE`).
extension PostgreSQLStore {
    /// The store at `location`, migrated to this build's schema; its writers wait `busyTimeout` seconds for
    /// the writer lease (``StoreError/writerBusy(path:holder:waitedSeconds:)`` after).
    ///
    /// The database is reached first by a probe bounded by the URL's `connect_timeout` (plus a little
    /// for one query): postgres-nio's pool retries a connection the server refuses or never answers for as
    /// long as a call may take, so without it a wrong host or password would hold a command for minutes.
    /// A database holding no CareGate store yet is one only when `creating` (else
    /// ``StoreError/storeNotFound(path:)``, naming the URL without its password, as for a missing SQLite file).
    ///
    /// The password is found as libpq finds it (the URL's, else `PGPASSWORD`, else the password file);
    /// `warn` hears, once, of a password file that cannot be used. No message carries the password.
    public static func open(
        location: PostgresLocation, creating: Bool, busyTimeout: TimeInterval = 30, environment: [String: String] = ProcessInfo.processInfo.environment,
        warn: (String) -> Void = { _ in }
    ) throws -> PostgreSQLStore {
        let probe = try PostgresDatabase(
            location: location, environment: environment, timeout: .seconds(location.connectTimeout + probeQuerySeconds), warn: warn)
        defer { probe.close() }
        let exists = try probe.run { client in
            let rows = try await client.query("SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger)
            var found = false
            for try await value in rows.decode(Bool.self) { found = value }
            return found
        }
        guard exists || creating else { throw StoreError.storeNotFound(path: location.redacted) }
        return try open(try PostgresDatabase(location: location, environment: environment, warn: { _ in }), busyTimeout: busyTimeout)
    }

    /// Seconds the probe's query may take beyond the connection's `connect_timeout`.
    static let probeQuerySeconds = 3
}

/// A PostgreSQL store serves as many calls at once as its pool has connections; each call blocks its
/// thread on the server, so ``PooledAppStore`` runs them on threads of its own, never a caller's.
extension PostgreSQLStore: ConcurrentBlockingStore {
    public var concurrentCalls: Int { PostgresDatabase.maximumConnections }
}
