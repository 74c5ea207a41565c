import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One `GET` of a small JSON document (an issuer's configuration or JWK Set) with two bounds the server
/// cannot stretch: its size (a `Content-Length` over the limit is refused before the body is read, a body
/// that grows past it is cut off) and a deadline for the whole exchange, however slowly it trickles.
enum BoundedFetch {
    /// The body of `url` when it answers 200 within `deadline` seconds and `limit` bytes.
    static func get(_ url: URL, limit: Int, deadline: TimeInterval) async throws(IssuerError) -> Data {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: deadline)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let transfer = Transfer(limit: limit)
        let session = URLSession(configuration: .ephemeral, delegate: transfer, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Transfer.Outcome, Never>) in
            let task = session.dataTask(with: request)
            transfer.start(task, continuation: continuation)
            DispatchQueue.global().asyncAfter(deadline: .now() + deadline) { transfer.expire() }
        }
        if outcome.oversize { throw .tooLarge(url: url.absoluteString, limit: limit) }
        if outcome.timedOut { throw .unreachable(url: url.absoluteString, reason: "no complete answer within \(Int(deadline)) s") }
        if let error = outcome.error { throw .unreachable(url: url.absoluteString, reason: error.localizedDescription) }
        guard let status = (outcome.response as? HTTPURLResponse)?.statusCode else {
            throw .unreachable(url: url.absoluteString, reason: "no HTTP answer")
        }
        guard status == 200 else { throw .unreachable(url: url.absoluteString, reason: "HTTP \(status)") }
        return outcome.data
    }

    /// The delegate of one request: collects the body within its limit and resumes the waiter once.
    private final class Transfer: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        struct Outcome {
            var data = Data()
            var response: URLResponse?
            var error: (any Error)?
            var oversize = false
            var timedOut = false
        }

        private let limit: Int
        private let lock = NSLock()
        private var outcome = Outcome()
        private var continuation: CheckedContinuation<Outcome, Never>?
        private var task: URLSessionTask?

        init(limit: Int) {
            self.limit = limit
        }

        func start(_ task: URLSessionDataTask, continuation: CheckedContinuation<Outcome, Never>) {
            lock.withLock {
                self.continuation = continuation
                self.task = task
            }
            task.resume()
        }

        /// Ends the request with what it has, marked as `change` says, cancelling it unless it completed;
        /// the first end wins.
        private func finish(cancelling: Bool, _ change: (inout Outcome) -> Void) {
            let resume: (CheckedContinuation<Outcome, Never>, Outcome, URLSessionTask?)? = lock.withLock {
                guard let continuation else { return nil }
                change(&outcome)
                self.continuation = nil
                return (continuation, outcome, task)
            }
            guard let resume else { return }
            if cancelling { resume.2?.cancel() }
            resume.0.resume(returning: resume.1)
        }

        func expire() {
            finish(cancelling: true) { $0.timedOut = true }
        }

        func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
        ) {
            let tooLarge = response.expectedContentLength > Int64(limit)
            lock.withLock { outcome.response = response }
            completionHandler(tooLarge ? .cancel : .allow)
            if tooLarge { finish(cancelling: true) { $0.oversize = true } }
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            let tooLarge: Bool = lock.withLock {
                guard outcome.data.count + data.count <= limit else { return true }
                outcome.data.append(data)
                return false
            }
            if tooLarge { finish(cancelling: true) { $0.oversize = true; $0.data = Data() } }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            finish(cancelling: false) { outcome in
                outcome.error = error
                if outcome.response == nil { outcome.response = task.response }
            }
        }
    }
}
