/// Runs a synchronous store call from async code without blocking a Swift concurrency thread: on a
/// thread of a small pool of its own, the calling task suspended meanwhile.
///
/// For the calls an async command or listener makes outside ``PooledAppStore``: opening and preparing the
/// store `caregate serve` serves, a metrics scrape's read of the outbox. A PostgreSQL store's calls
/// block their thread on the server, and Swift's cooperative pool (one thread a core) must never block.
///
/// ```swift
/// let store = try await BlockingCall.run { try options.open() }
/// ```
public enum BlockingCall {
    /// At most two such calls run at once; more wait in the pool's queue, holding no thread.
    private static let pool = BlockingWorkerPool(name: "cg-blocking", limit: 2)

    /// `work`'s result, `work` run on a thread of the pool.
    public static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            pool.submit { continuation.resume(with: Result { try work() }) }
        }
    }
}
