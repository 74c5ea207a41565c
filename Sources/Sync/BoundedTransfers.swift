import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix

/// The sync job's HTTP exchanges, on AsyncHTTPClient, each bounded in what a server cannot stretch:
///
/// - the size of the answer: a `Content-Length` over the limit is refused before its body is read, a
///   body that grows past it (chunked, or longer than it said) is refused at the byte that crosses it, a
///   compressed body is counted as it inflates (and the inflater has the same limit), and a refused
///   answer closes its connection and drops what it held, so nothing the server sends after that is
///   read or kept (URLSession on Linux could not promise this: libcurl read on after a cancel);
/// - the time: an idle timeout (connect, and between two reads) and a deadline for the whole exchange,
///   which a server trickling a byte a second still meets.
///
/// No redirect is followed here (``FHIRRedirects`` decides, hop by hop).
///
/// The sync job is a batch process of synchronous calls on threads of its own (never a Swift
/// concurrency thread), so the caller's thread waits on a semaphore for the exchange, which runs on
/// AsyncHTTPClient's event loops through its delegate API: no task of the concurrency pool is involved,
/// so a blocked caller cannot starve the work it waits for. One client per ``BoundedTransfers``, on the
/// process's shared event loops (no threads of its own) and per proxy the environment names
/// (``EnvironmentProxy``), shut down when it goes.
final class BoundedTransfers: Sendable {
    /// One request to send.
    struct Request: Sendable {
        var method: String
        var url: URL
        var headers: [(String, String)]
        var body: Data?
    }

    /// A complete answer.
    struct Answer: Sendable {
        var status: Int
        /// Header fields, names in lower case (repeated fields joined with ", ").
        var headers: [String: String]
        var body: Data
    }

    /// Why an exchange ended without an answer.
    enum Failure: Error, Equatable {
        /// The answer is over the limit: its declared size, or the bytes received when it crossed it.
        case tooLarge(bytes: Int64)
        /// No connection or no byte for the idle timeout (`idle`), or the whole deadline passed.
        case timedOut(idle: Bool)
        /// No answer: refused, reset, DNS, TLS, a malformed answer.
        case transport(String)
    }

    /// Seconds a connection or a read may stay silent.
    let idleTimeout: TimeInterval
    private let configuration: HTTPClient.Configuration
    /// A client per proxy (nil: direct), made on first use; rarely more than one.
    private let clients = NIOLockedValueBox<[HTTPClient.Configuration.Proxy?: HTTPClient]>([:])

    /// `idleTimeout` for connecting and between reads; a compressed answer inflates to at most
    /// `inflatedLimit` bytes (the callers' largest answer).
    init(idleTimeout: TimeInterval, inflatedLimit: Int64) {
        self.idleTimeout = idleTimeout
        let idle = TimeAmount.nanoseconds(Int64(min(max(idleTimeout, 0.001), 1e9) * 1e9))
        var configuration = HTTPClient.Configuration(
            // Never followed by the client: the callers check every hop against their rule.
            redirectConfiguration: .disallow,
            timeout: HTTPClient.Configuration.Timeout(connect: idle, read: idle),
            // Asks for gzip and deflate (as libcurl did) and inflates within the limit: a zip bomb fails
            // at the limit, never past it.
            decompression: .enabled(limit: .size(Int(clamping: inflatedLimit)))
        )
        configuration.connectionPool = HTTPClient.Configuration.ConnectionPool(idleTimeout: .seconds(30))
        // A connection that cannot be made fails its request at once; the callers' retry policy, which
        // logs and reports each attempt, tries again. Left on, the client itself kept retrying a refused
        // connection until the connect timeout of each attempt: 2.5 minutes of silence before a
        // `sync --once` could say that the server refused it.
        configuration.connectionPool.retryConnectionEstablishment = false
        self.configuration = configuration
    }

    deinit {
        // Non-blocking: the owner may go away on any thread, an event loop's included.
        for client in clients.withLockedValue({ $0.values }) { client.shutdown { _ in } }
    }

    /// The client for `url`: through the proxy the environment names for it, or direct.
    private func client(for url: URL) -> HTTPClient {
        let proxy = EnvironmentProxy.proxy(for: url)
        return clients.withLockedValue { clients in
            if let client = clients[proxy] { return client }
            var configuration = configuration
            configuration.proxy = proxy
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            clients[proxy] = client
            return client
        }
    }

    /// Sends `request` and waits for its whole answer, at most until `deadline`, keeping at most `limit`
    /// bytes of its body (after decoding its content encoding).
    func send(_ request: Request, limit: Int64, deadline: Date) throws(Failure) -> Answer {
        let prepared: HTTPClient.Request
        do {
            var headers = HTTPHeaders()
            for (name, value) in request.headers { headers.add(name: name, value: value) }
            prepared = try HTTPClient.Request(
                url: request.url, method: HTTPMethod(rawValue: request.method), headers: headers, body: request.body.map { .bytes($0) })
        } catch {
            throw .transport("\(error)")
        }
        let collector = BoundedCollector(limit: limit)
        let task = client(for: request.url).execute(request: prepared, delegate: collector)
        let done = DispatchSemaphore(value: 0)
        let outcome = NIOLockedValueBox<Result<BoundedCollector.Collected, any Error>?>(nil)
        task.futureResult.whenComplete { result in
            outcome.withLockedValue { $0 = result }
            done.signal()
        }
        if done.wait(timeout: .now() + max(0, deadline.timeIntervalSinceNow)) == .timedOut {
            task.cancel()
            // The cancel closes the connection at once; wait for it, boundedly, so nothing of it runs on.
            _ = done.wait(timeout: .now() + 5)
            throw .timedOut(idle: false)
        }
        switch outcome.withLockedValue({ $0 }) {
        case .success(let collected)?:
            var headers: [String: String] = [:]
            for (name, value) in collected.head.headers {
                let key = name.lowercased()
                headers[key] = headers[key].map { $0 + ", " + value } ?? value
            }
            return Answer(status: Int(collected.head.status.code), headers: headers, body: collected.body)
        case .failure(let error)?:
            throw Self.failure(error, collector: collector)
        case nil:
            throw .timedOut(idle: false)
        }
    }

    private static func failure(_ error: any Error, collector: BoundedCollector) -> Failure {
        if let oversize = collector.oversize { return .tooLarge(bytes: oversize) }
        if let error = error as? NIOHTTPDecompression.DecompressionError, error == .limit {
            return .tooLarge(bytes: collector.limit + 1)
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .readTimeout, .connectTimeout, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout: return .timedOut(idle: true)
            case .deadlineExceeded: return .timedOut(idle: false)
            case .remoteConnectionClosed: return .transport("the server closed the connection before its answer was complete")
            default: return .transport("\(error)")
            }
        }
        if case ChannelError.connectTimeout = error { return .timedOut(idle: true) }
        return .transport(reason(error))
    }

    /// What a report says of a failed connection: the system's words for it ("Connection refused"), or
    /// that the host name does not resolve, rather than NIO's descriptions.
    static func reason(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first { return reason(first.error) }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "the host name \(error.host) does not resolve" }
        }
        return "\(error)"
    }
}

/// Collects one answer's body up to a limit, straight into `Data` (no copy at the end: a page near the
/// limit is held once); past the limit, fails the request, which closes its connection, and drops what
/// it held.
private final class BoundedCollector: HTTPClientResponseDelegate {
    /// A complete answer: its head and body.
    struct Collected: Sendable {
        var head: HTTPResponseHead
        var body: Data
    }

    typealias Response = Collected

    private struct State {
        var head: HTTPResponseHead?
        var body = Data()
        var oversize: Int64?
    }

    struct TooLarge: Error {}

    let limit: Int64
    private let state = NIOLockedValueBox(State())

    init(limit: Int64) {
        self.limit = limit
    }

    /// The declared or received size that crossed the limit, if one did.
    var oversize: Int64? { state.withLockedValue { $0.oversize } }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let declared = head.headers.first(name: "content-length").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        return state.withLockedValue { state in
            state.head = head
            if let declared, declared > limit {
                state.oversize = declared
                return task.eventLoop.makeFailedFuture(TooLarge())
            }
            // The size it declares (within the limit), at once: no doubling of the buffer as it comes.
            if let declared, declared > 0 { state.body.reserveCapacity(Int(declared)) }
            return task.eventLoop.makeSucceededVoidFuture()
        }
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Response>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        state.withLockedValue { state in
            guard state.oversize == nil else { return task.eventLoop.makeFailedFuture(TooLarge()) }
            let total = Int64(state.body.count) + Int64(buffer.readableBytes)
            if total > limit {
                state.oversize = total
                state.body = Data()
                return task.eventLoop.makeFailedFuture(TooLarge())
            }
            state.body.append(contentsOf: buffer.readableBytesView)
            return task.eventLoop.makeSucceededVoidFuture()
        }
    }

    func didReceiveError(task: HTTPClient.Task<Response>, _ error: any Error) {
        state.withLockedValue { $0.body = Data() }
    }

    func didFinishRequest(task: HTTPClient.Task<Response>) throws -> Response {
        try state.withLockedValue { state in
            guard let head = state.head, state.oversize == nil else { throw TooLarge() }
            let body = state.body
            state.body = Data()
            return Collected(head: head, body: body)
        }
    }
}
