/// A synchronous store whose every call blocks its thread on a database server (PostgreSQL through a
/// connection pool), and which serves ``concurrentCalls`` calls at once.
///
/// ``PooledAppStore`` runs such a store's reads on up to ``concurrentCalls`` threads of its own, and never
/// on the caller's thread: a call blocks for a round trip to the server, and the caller is a Swift
/// concurrency thread that must not wait. (A SQLite store's read, which waits for nothing when a reader
/// connection is free, may run on the caller's thread.)
public protocol ConcurrentBlockingStore: Sendable {
    /// The calls the store serves at once without one waiting for another (its pool's connections).
    var concurrentCalls: Int { get }
}
