import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSession {
    /// Sends `request` and waits for its answer: the sync job makes one request at a time per stream.
    func synchronousData(for request: URLRequest) -> (data: Data?, response: URLResponse?, error: (any Error)?) {
        let outcome = Exchange()
        let done = DispatchSemaphore(value: 0)
        dataTask(with: request) { data, response, error in
            outcome.set((data, response, error))
            done.signal()
        }.resume()
        done.wait()
        return outcome.get()
    }
}

/// The result of one data task, handed from URLSession's queue to the waiting caller.
private final class Exchange: @unchecked Sendable {
    private let lock = NSLock()
    private var value: (data: Data?, response: URLResponse?, error: (any Error)?) = (nil, nil, nil)

    func set(_ result: (data: Data?, response: URLResponse?, error: (any Error)?)) {
        lock.lock()
        value = result
        lock.unlock()
    }

    func get() -> (data: Data?, response: URLResponse?, error: (any Error)?) {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
