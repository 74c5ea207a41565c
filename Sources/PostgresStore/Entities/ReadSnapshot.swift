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

extension PostgreSQLStore {
    /// Runs `body`, a read whose answer one statement gives (or whose other statements read only what
    /// never changes, as a task version's schedule), on a pooled connection without a transaction: a
    /// statement sees one committed state by itself, and the two round trips of a snapshot are saved
    /// (the app server asks such reads for every request).
    func readStatement<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) throws -> T {
        try database.run { client in try await client.withConnection { try await body($0) } }
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

/// A value that is not `Sendable` (a closure the store protocol takes: `including`, `day`) lent to a body
/// that runs while its caller waits (``PostgresDatabase/run(_:)`` blocks the calling thread until the body
/// ends, so the value is never used by two threads at once).
///
/// The box lets go of the value when ``lend(_:_:)`` returns, even while the task that ran the body has
/// not yet been freed: a non-escaping closure lent with `withoutActuallyEscaping` must not outlive it.
final class CallerBound<Value>: @unchecked Sendable {
    private var lent: Value?

    private init(_ value: Value) {
        lent = value
    }

    /// The value; a body that runs after ``lend(_:_:)`` returned (it never does) is refused.
    func value() throws -> Value {
        guard let lent else { throw StoreError.database(message: "a read used a value of its caller after the read ended") }
        return lent
    }

    /// Runs `body` with `value` in a box, emptied when `body` returns.
    static func lend<T>(_ value: Value, _ body: (CallerBound<Value>) throws -> T) rethrows -> T {
        let box = CallerBound(value)
        defer { box.lent = nil }
        return try body(box)
    }
}
