import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The sync job's requests, one at a time per stream, each waited for with two bounds a server cannot
/// stretch: the size of the answer (a `Content-Length` over it is refused before its body is read, and a
/// body that grows past it is cut off), and a deadline for the whole exchange (a server that trickles a
/// byte at a time, which resets URLSession's idle timeout, still ends there). The waiting thread sleeps
/// on a semaphore; nothing polls.
final class BoundedTransfers: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// What one request came to.
    struct Outcome {
        var data = Data()
        var response: URLResponse?
        var error: (any Error)?
        /// Set when the answer was cut off for its size: its declared or received byte count.
        var oversize: Int64?
        /// Set when the deadline passed before the answer was complete.
        var timedOut = false
    }

    private final class Transfer {
        let limit: Int64
        var outcome = Outcome()
        let done = DispatchSemaphore(value: 0)

        init(limit: Int64) {
            self.limit = limit
        }
    }

    private let lock = NSLock()
    private var transfers: [Int: Transfer] = [:]

    /// Sends `request` through `session` (whose delegate this is) and waits for its answer, at most
    /// `deadline` seconds, keeping at most `limit` bytes of its body.
    func send(_ request: URLRequest, through session: URLSession, limit: Int64, deadline: TimeInterval) -> Outcome {
        let transfer = Transfer(limit: limit)
        let task = session.dataTask(with: request)
        lock.withLock { transfers[task.taskIdentifier] = transfer }
        task.resume()
        if transfer.done.wait(timeout: .now() + max(0, deadline)) == .timedOut {
            lock.withLock { transfer.outcome.timedOut = true }
            task.cancel()
            // The cancellation completes the task promptly; wait for it, boundedly, so nothing of it runs on.
            _ = transfer.done.wait(timeout: .now() + 5)
        }
        return lock.withLock {
            transfers[task.taskIdentifier] = nil
            return transfer.outcome
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let refused: Transfer? = lock.withLock {
            guard let transfer = transfers[dataTask.taskIdentifier] else { return nil }
            transfer.outcome.response = response
            guard response.expectedContentLength > transfer.limit else { return nil }
            transfer.outcome.oversize = response.expectedContentLength
            return transfer
        }
        completionHandler(refused == nil ? .allow : .cancel)
        // The answer is decided: the waiter goes on at once, whenever the cancelled task completes.
        if let refused {
            dataTask.cancel()
            refused.done.signal()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let refused: Transfer? = lock.withLock {
            guard let transfer = transfers[dataTask.taskIdentifier], transfer.outcome.oversize == nil else { return nil }
            if Int64(transfer.outcome.data.count + data.count) > transfer.limit {
                transfer.outcome.oversize = Int64(transfer.outcome.data.count + data.count)
                transfer.outcome.data = Data()
                return transfer
            }
            transfer.outcome.data.append(data)
            return nil
        }
        if let refused {
            dataTask.cancel()
            refused.done.signal()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let transfer: Transfer? = lock.withLock {
            guard let transfer = transfers[task.taskIdentifier] else { return nil }
            transfer.outcome.error = error
            if transfer.outcome.response == nil { transfer.outcome.response = task.response }
            return transfer
        }
        transfer?.done.signal()
    }
}
