import Foundation
import Logging
import PostgresNIO
import Store

extension PostgreSQLStore {
    /// Runs `body` in one read-only snapshot (a REPEATABLE READ transaction): every statement of it sees
    /// the same committed state, as the SQLite store's reads do. Writers commit their clock under the
    /// clock's row lock (``PostgresServerClock``), so a snapshot that sees clock N sees every transaction
    /// of a clock up to N, and none after.
    func readSnapshot<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) throws -> T {
        try database.run { client in
            try await client.withConnection { connection in
                try await connection.finish("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: Self.logger)
                let value: T
                do {
                    value = try await body(connection)
                } catch {
                    try? await connection.finish("ROLLBACK", logger: Self.logger)
                    throw error
                }
                try await connection.finish("COMMIT", logger: Self.logger)
                return value
            }
        }
    }
}

/// A query built piece by piece: SQL text with `$n` placeholders, and the values they bind (always
/// bound, never spliced into the text).
struct ReadQuery {
    var sql: String
    var binds = PostgresBindings()

    init(_ sql: String = "") {
        self.sql = sql
    }

    /// Binds `value` and returns its placeholder.
    mutating func bind<T: PostgresThrowingDynamicTypeEncodable>(_ value: T) throws -> String {
        try binds.append(value)
        return "$\(binds.count)"
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: sql, binds: binds) }
}

/// A value that is not `Sendable` handed to a body that runs while its caller waits
/// (``PostgresDatabase/run(_:)`` blocks the calling thread until the body ends, so the value is never
/// used by two threads at once): the closures the store protocol takes (`including`, `day`).
struct CallerBound<Value>: @unchecked Sendable {
    let value: Value
}
