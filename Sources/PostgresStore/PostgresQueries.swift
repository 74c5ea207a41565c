import Logging
import PostgresNIO

// postgres-nio answers a query once its rows are described, before the statement has finished: a
// statement that waits (`pg_advisory_lock`) has not taken its lock then, an INSERT may not be done when
// the next statement runs on another pooled connection, and an error (a lock timeout, a unique key)
// would go unseen. Every statement whose rows nobody reads is run to its end with `finish`.
extension PostgresConnection {
    /// Runs `query` to its end. postgres-nio answers a query once its rows are described, before the
    /// statement has finished: a statement that waits (`pg_advisory_lock`) has not taken its lock then, and
    /// its error (a lock timeout) would go unseen.
    func finish(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await self.query(query, logger: logger) {}
    }

    /// Runs `query` to its end and returns its first column, row by row.
    func values<T: PostgresDecodable>(_ query: PostgresQuery, as type: T.Type, logger: Logger) async throws -> [T] {
        var values: [T] = []
        for try await value in try await self.query(query, logger: logger).decode(T.self) { values.append(value) }
        return values
    }
}

extension PostgresClient {
    /// Runs `query` on a pooled connection to its end (see ``PostgresConnection/finish(_:logger:)``).
    func finish(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await self.query(query, logger: logger) {}
    }
}

extension Duration {
    /// The duration in seconds, as PostgreSQL's `make_interval(secs => ...)` takes it.
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
