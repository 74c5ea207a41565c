import Foundation
import Logging
import PostgresNIO
import Store

/// A PostgreSQL database behind a synchronous front door: postgres-nio's connection pool
/// (`PostgresClient`), run in the background, and ``run(_:)`` which waits for an async body.
///
/// The store protocol is synchronous, postgres-nio async: ``run(_:)`` starts the body as a task and
/// blocks the calling thread until it ends. The calling thread must be one of the caller's own (a
/// command line's, a worker's): never an event loop's (refused with
/// ``PostgresStoreError/calledOnEventLoop``), and never a Swift concurrency thread (which cannot be
/// detected and would starve the pool that must run the body). The app server, which runs on those
/// threads, needs the async store protocol of issue 47 before it can use this.
///
/// ## Topics
/// - ``init(location:environment:timeout:warn:)``: connect (the password from the URL, `PGPASSWORD` or `.pgpass`)
/// - ``run(_:)``, ``close()``
/// - ``PostgresMigrations``: the schema
public final class PostgresDatabase: Sendable {
    /// The store, redacted: what messages name.
    public let location: PostgresLocation
    /// The location with the password the pool connects with: what the lock sessions connect with too
    /// (``PostgresWriterLease``). Never shown.
    let connectingLocation: PostgresLocation
    let client: PostgresClient
    /// The most connections the pool opens to the server (beside the lock sessions' own).
    public static let maximumConnections = 8
    /// The longest a ``run(_:)`` may take.
    public let timeout: Duration
    private let runner: Task<Void, Never>

    /// A pool for `location`, its password found as libpq finds it; `warn` hears of a password file
    /// that cannot be used. Nothing connects until the first ``run(_:)``.
    /// `timeout` bounds each ``run(_:)``, waiting for a connection included: postgres-nio's pool retries a
    /// connection that fails (a server that refuses TLS, a wrong password) for as long as it is asked.
    public init(
        location: PostgresLocation, environment: [String: String] = ProcessInfo.processInfo.environment, timeout: Duration = .seconds(300),
        warn: (String) -> Void = { _ in }
    ) throws {
        let located = location.withPassword(environment: environment, warn: warn)
        var configuration = try located.clientConfiguration()
        configuration.options.maximumConnections = Self.maximumConnections
        var logger = Logger(label: "caregate.postgres")
        // The pool's retries are info-level chatter, and its one warning (a lease asked for before the
        // background `run()` below has started, which then waits for it) says nothing to an operator: what
        // fails a call reaches its caller as an error.
        logger.logLevel = .error
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.timeout = timeout
        self.client = client
        connectingLocation = located
        var withoutPassword = located
        withoutPassword.password = nil
        self.location = withoutPassword
        // The pool serves leases only while it runs: for the life of this object.
        runner = Task.detached { await client.run() }
    }

    deinit { runner.cancel() }

    /// Ends the pool: its connections are closed; later calls fail.
    public func close() { runner.cancel() }

    /// Runs `body` with the pool and waits for it on this thread (see the type's notes on threads).
    /// A server's error is a ``PostgresStoreError/server(url:problem:)`` with the server's message.
    public func run<T: Sendable>(_ body: @escaping @Sendable (PostgresClient) async throws -> T) throws -> T {
        guard MultiThreadedEventLoopGroup.currentEventLoop == nil else { throw PostgresStoreError.calledOnEventLoop }
        let outcome = Outcome<T>()
        let done = DispatchSemaphore(value: 0)
        let client = client
        let url = location.redacted
        let timeout = timeout
        Task.detached {
            do {
                let value = try await withThrowingTaskGroup(of: T?.self) { group in
                    group.addTask { try await body(client) }
                    group.addTask {
                        try await Task.sleep(for: timeout)
                        return nil
                    }
                    defer { group.cancelAll() }
                    guard let first = try await group.next(), let value = first else {
                        throw PostgresStoreError.server(url: url, problem: "no answer within \(timeout) (is the server up, and does it take this sslmode and password?)")
                    }
                    return value
                }
                outcome.set(.success(value))
            } catch let error as PSQLError {
                outcome.set(.failure(PostgresStoreError.server(url: url, problem: Self.message(error))))
            } catch let error as PostgresTransactionError {
                let cause = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
                if let thrown = cause as? CallerThrew {
                    outcome.set(.failure(thrown.error))
                } else if let psql = cause as? PSQLError {
                    outcome.set(.failure(PostgresStoreError.server(url: url, problem: Self.message(psql))))
                } else {
                    outcome.set(.failure(cause ?? PostgresStoreError.server(url: url, problem: "the transaction failed")))
                }
            } catch let thrown as CallerThrew {
                outcome.set(.failure(thrown.error))
            } catch let error as PostgresStoreError {
                outcome.set(.failure(error))
            } catch let error as StoreError {
                // The store's own refusal (a bad interval, an id not found), as the SQLite store throws it.
                outcome.set(.failure(error))
            } catch {
                // The pool's own failures (a connection it could not make, its circuit breaker): named, with the URL.
                outcome.set(.failure(PostgresStoreError.server(url: url, problem: "\(error)")))
            }
            done.signal()
        }
        done.wait()
        return try outcome.get()
    }

    /// The server's own words for `error` (its message and SQLSTATE), or the kind of failure.
    static func message(_ error: PSQLError) -> String {
        if let fields = error.serverInfo, let text = fields[.message] {
            return text + (fields[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
        }
        return "\(error.code)"
    }
}

/// The result handed from the task to the waiting thread.
private final class Outcome<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<T, any Error>?

    func set(_ value: Result<T, any Error>) {
        lock.withLock { result = value }
    }

    func get() throws -> T {
        try lock.withLock { result! }.get()
    }
}

/// An error a caller's own closure threw inside a call (``PostgresDatabase/run(_:)``), carried through the
/// pool and thrown to the caller as it was (an app server's 400 stays a 400), never named the server's.
struct CallerThrew: Error {
    let error: any Error

    /// Runs `body`, a closure of the store's caller, marking what it throws as the caller's.
    static func marking<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw CallerThrew(error: error) }
    }
}
