import Foundation

/// Runs `body` to its end off this thread and returns what it gives: for a synchronous test that starts
/// its servers on its own thread (a child process started from Swift's concurrency pool inherits its
/// blocked signals, so SIGTERM would not stop it) and has async steps between.
func blocking<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) throws -> Value {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox<Value>()
    Task.detached {
        do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    guard let result = box.result else { throw CancellationError() }
    return try result.get()
}

/// Written by the task before it signals, read after the wait: never at once.
private final class ResultBox<Value>: @unchecked Sendable {
    var result: Result<Value, any Error>?
}
