import Dispatch

/// Where the app server runs its calls to the store: on threads of its own, never on the threads that
/// serve connections and run request tasks.
///
/// The store's calls are synchronous (SQLite through GRDB): a read takes tens of microseconds, a write can
/// wait seconds for another process's transaction (`caregate sync`). On the event loop or Swift's
/// cooperative pool (as many threads as cores) either would stall every other connection meanwhile.
///
/// ```swift
/// let tasks = try await StoreWork.read { try PatientData(store: store, patientID: id).tasks() }
/// ```
///
/// ## Topics
///
/// - ``read(_:)``: reads of a WAL store, which never wait for a writer.
/// - ``write(_:)``: work that may wait for the store's writer or its writer lease (a push).
enum StoreWork {
    /// Reads: concurrent, as many at once as the store's pool of readers admits.
    private static let readers = DispatchQueue(label: "caregate.serve.store-read", qos: .userInitiated, attributes: .concurrent)
    /// Writes: a waiting writer blocks a thread of its own, never a reader's.
    private static let writers = DispatchQueue(label: "caregate.serve.store-write", qos: .userInitiated, attributes: .concurrent)

    /// Runs `body`, a read of the store, off the request's thread.
    static func read<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await run(on: readers, body)
    }

    /// Runs `body`, which may wait for the store's writer, off the request's thread.
    static func write<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await run(on: writers, body)
    }

    private static func run<T: Sendable>(on queue: DispatchQueue, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result(catching: body)) }
        }
    }
}
