import Dispatch

/// Runs `operation` from synchronous code and waits for it on this thread.
///
/// For the synchronous entry points over async-only libraries (jwt-kit signs and verifies only through
/// its `JWTKeyCollection` actor): `caregate patients token`'s callers without a task, the sync job's
/// SMART client assertion. Never call it from async code, which has the async variants: a thread of
/// Swift's cooperative pool waiting here could wait for a task that needs it.
package func waitForTask<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = TaskOutcome<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do { outcome.result = .success(try await operation()) } catch { outcome.result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try outcome.result.get()
}

/// What the task of ``waitForTask(_:)`` came to: written once by the task before it signals, read once
/// after the wait, so the semaphore orders the two (which the compiler cannot see).
private final class TaskOutcome<T: Sendable>: @unchecked Sendable {
    var result: Result<T, any Error> = .failure(CancellationError())
}
