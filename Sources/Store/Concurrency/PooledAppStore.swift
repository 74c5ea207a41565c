import Foundation
import Synchronization

/// ``AsyncAppStore`` for a synchronous store (SQLite through GRDB): its calls run on threads of two
/// bounded pools, one for reads and one for writes, the calling task suspended meanwhile; or, for a read
/// when one of the store's reader connections is certainly free, at once on the caller's thread.
///
/// - **Writes** (a push, a consent decision, a share, a replay) may wait seconds for the store's writer
///   lease or another process's transaction: they run on ``writeThreads`` threads of their own, and a
///   burst waits in their queue as closures, holding no thread.
/// - **Reads** never wait for a writer (WAL), but each needs one of the store's reader connections
///   (``SQLiteStore/readerCount``), and a GRDB pool whose readers are all in use blocks the thread that
///   asks. A writer's thread may hold one reader at a time for the reads of its unit, so the store's
///   readers beyond ``writeThreads`` are slots (``ReaderSlots``) that reads hold: a read that takes a slot
///   at once runs on the caller's thread (it waits for nothing, and a hop to another thread and back
///   costs about as much as a small read); one that finds none free goes to ``readThreads`` threads that
///   wait for a slot, so reads never queue behind writes waiting for the lease. A store with no reader
///   to spare (``SQLiteStore/inMemory(options:)``, one connection for all) has every read go to the
///   pool.
///
/// A store whose calls all wait on a database server (``ConcurrentBlockingStore``: PostgreSQL) has no
/// slots: its reads always go to ``readThreads`` threads, as many as the calls it serves at once, and
/// never block the caller's (a Swift concurrency) thread.
///
/// So the threads it adds to a process are at most ``readThreads`` + ``writeThreads``, whatever the load.
/// Idle threads end after a while (``BlockingWorkerPool``).
///
/// ```swift
/// let front = PooledAppStore(try SQLiteStore(path: "care.sqlite", options: .init(readers: 8)), writeThreads: 4)
/// let clock = try await front.serverClock()   // 4 reads at once on the callers' threads, more on 4 threads
/// ```
public final class PooledAppStore: AsyncAppStore {
    /// The synchronous store the calls run on.
    public let store: any AppSyncStore
    /// The most threads that run reads (the store's readers beyond the writers', at least 1).
    public let readThreads: Int
    /// The most threads that run writes.
    public let writeThreads: Int
    /// The readers free for reads; nil when the writers may use them all (every read then goes to the pool).
    private let slots: ReaderSlots?
    private let readers: BlockingWorkerPool
    private let writers: BlockingWorkerPool
    private let underway = Atomic<Int>(0)

    /// `store`'s calls, reads on its readers beyond `writeThreads` (at least one thread; for a
    /// ``ConcurrentBlockingStore``, its ``ConcurrentBlockingStore/concurrentCalls`` threads), writes on
    /// `writeThreads` threads (at least 1).
    public init(_ store: any AppSyncStore, writeThreads: Int) {
        self.store = store
        self.writeThreads = max(1, writeThreads)
        if let remote = store as? any ConcurrentBlockingStore {
            // Every call waits on the server: reads go to threads of their own, as many as it serves at once.
            slots = nil
            readThreads = max(1, remote.concurrentCalls)
        } else {
            let spare = Self.readerConnections(of: store) - self.writeThreads
            slots = spare > 0 ? ReaderSlots(count: spare) : nil
            readThreads = max(1, spare)
        }
        readers = BlockingWorkerPool(name: "cg-store-read", limit: readThreads)
        writers = BlockingWorkerPool(name: "cg-store-write", limit: self.writeThreads)
    }

    /// How many reads `store` serves at once without one waiting for another: its reader connections.
    static func readerConnections(of store: any AppSyncStore) -> Int {
        (store as? SQLiteStore)?.readerCount ?? 1
    }

    public var writesUnderway: Int { underway.load(ordering: .relaxed) }

    public func read<T: Sendable>(_ work: @escaping @Sendable (any AppSyncStore) throws -> T) async throws -> T {
        if let slots, slots.tryAcquire() {
            defer { slots.release() }
            return try work(store)
        }
        let (store, slots) = (store, slots)
        return try await withCheckedThrowingContinuation { continuation in
            readers.submit {
                slots?.acquire()
                let result = Result { try work(store) }
                slots?.release()
                continuation.resume(with: result)
            }
        }
    }

    public func write<T: Sendable>(_ work: @escaping @Sendable (any AppSyncStore) throws -> T) async throws -> T {
        underway.add(1, ordering: .relaxed)
        defer { underway.subtract(1, ordering: .relaxed) }
        let store = store
        return try await withCheckedThrowingContinuation { continuation in
            writers.submit { continuation.resume(with: Result { try work(store) }) }
        }
    }
}
