import Dispatch
import Synchronization

/// Where the app server runs its calls to the store.
///
/// The store's calls are synchronous (SQLite through GRDB). A read of a WAL store never waits for a
/// writer, in this process or another (`caregate sync`): it is CPU work, tens of microseconds for a pull,
/// like encoding the answer's JSON, so it runs on the request's own task. A hop to another thread and
/// back costs about as much as such a read, and under load every extra runnable thread lengthens the
/// tail of the answers. A write can wait seconds for another process's transaction or the writer lease:
/// on Swift's cooperative pool (as many threads as cores) that would stall every other connection
/// meanwhile, so writes run on a pool of threads of their own, of a fixed size (``ServerLimits/pushWorkers``):
/// a burst of pushes waits in its queue rather than starting a thread each.
///
/// ```swift
/// let tasks = try StoreWork.read { try PatientData(store: store, patientID: id).tasks() }
/// ```
///
/// ## Topics
///
/// - ``read(_:)``: reads of a WAL store, which never wait for a writer.
/// - ``write(_:)``: work that may wait for the store's writer or its writer lease (a push).
/// - ``writerThreads``: the size of the writers' pool.
enum StoreWork {
    /// Writes: a waiting writer blocks a thread of the pool, never one that serves requests.
    private static let writers = BlockingWorkerPool(name: "caregate.serve.store-write", limit: ServerLimits.defaultPushWorkers)

    private static let underway = Atomic<Int>(0)

    /// Writes submitted and not finished: waiting for a thread of the pool, for the store's writer
    /// lease, or writing (the `caregate_api_store_writes_in_flight` gauge).
    static var writesInFlight: Int { underway.load(ordering: .relaxed) }

    /// The most threads that run writes (one process serves one store: the server sets it as it starts).
    static var writerThreads: Int {
        get { writers.limit }
        set { writers.limit = newValue }
    }

    /// Runs `body`, a read of the store, on the request's task.
    static func read<T>(_ body: () throws -> T) rethrows -> T {
        try body()
    }

    /// Runs `body`, which may wait for the store's writer, on the writers' pool; the task is suspended,
    /// holding no thread, while it waits for a place.
    static func write<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        underway.add(1, ordering: .relaxed)
        defer { underway.subtract(1, ordering: .relaxed) }
        return try await withCheckedThrowingContinuation { continuation in
            writers.submit { continuation.resume(with: Result(catching: body)) }
        }
    }
}
