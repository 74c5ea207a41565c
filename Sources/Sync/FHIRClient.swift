import FHIR
import Foundation

/// A FHIR R4 REST client over AsyncHTTPClient (``BoundedTransfers``): read, vread, search (GET or
/// POST `_search`) following `next` links, transaction and batch Bundles, create (conditional too),
/// update (conditional too), and the capability statement; JSON or XML on the wire. It asks for gzip
/// and deflate and decodes what comes back, within ``maxResponseBytes`` of decoded bytes.
///
/// No answer holds more than ``maxResponseBytes`` of memory, whatever the server does: a larger
/// `Content-Length` is refused before the body, a body that grows past it is cut off with its
/// connection closed, and nothing sent after that is read. Redirects are followed by ``FHIRRedirects``:
/// to the same scheme or a stronger one only, and without credentials once they leave the origin.
///
/// Calls are synchronous: the sync job is a batch process that does one request at a time per
/// stream. Every failure is a ``FHIRClientError`` naming the request: no answer (with the transport's
/// reason), a timeout, an error status (with the OperationOutcome's text when the server sent one), or
/// an answer that is not FHIR (an HTML error page, say).
///
/// ```swift
/// let client = FHIRClient(base: URL(string: "http://127.0.0.1:8080/fhir")!)
/// let patient = try client.read("Patient", "pat-1")
/// try client.search("Observation", [("patient", "pat-1"), ("_count", "100")]) { page in ... }
/// ```
public final class FHIRClient: @unchecked Sendable {
    /// The format asked for and sent.
    public enum Format: String, Sendable {
        case json, xml

        var mediaType: String { self == .json ? "application/fhir+json" : "application/fhir+xml" }
    }

    public let base: URL
    public let format: Format
    /// Seconds a request may take before it fails as a timeout.
    public let timeout: TimeInterval
    /// Headers sent with every request (authorization, for one).
    public var headers: [String: String]
    /// When a failed request is sent again (idempotent requests only).
    public let retry: RetryPolicy
    /// Where the `Authorization` header comes from (none, a bearer token, SMART Backend Services).
    public let authorization: (any AuthorizationProvider)?
    /// The largest answer read, in bytes; a larger one fails its request (``FHIRClientError/tooLarge(request:bytes:limit:)``).
    public let maxResponseBytes: Int64
    /// Seconds all requests of a job may take together (from ``resetRetries()``); past it a request
    /// fails at once with ``FHIRClientError/runTimeout(request:seconds:)``.
    public let runTimeout: TimeInterval
    private let transfers: BoundedTransfers
    private let counter = RetryCounter()
    /// Told of every request sent (each attempt, each redirect followed as one): its operation
    /// (``FHIROperation``), the status answered (nil for no answer) and how long it took. For metrics.
    public var requestObserver: (@Sendable (_ operation: FHIROperation, _ status: Int?, _ seconds: TimeInterval) -> Void)?

    /// Requests sent again so far, for the job's report.
    public var retries: Int { counter.value }

    /// Starts a new job: its count of retries (and its ``RetryPolicy/maxRetriesPerJob``) and its
    /// ``runTimeout``.
    public func resetRetries() { counter.reset() }

    public init(
        base: URL, format: Format = .json, timeout: TimeInterval = 30, headers: [String: String] = [:], retry: RetryPolicy = RetryPolicy(),
        authorization: (any AuthorizationProvider)? = nil, maxResponseBytes: Int64 = 256 << 20, runTimeout: TimeInterval = 3600
    ) {
        self.base = base
        self.format = format
        self.timeout = timeout
        self.headers = headers
        self.retry = retry
        self.authorization = authorization
        self.maxResponseBytes = maxResponseBytes
        self.runTimeout = runTimeout
        transfers = BoundedTransfers(idleTimeout: timeout, inflatedLimit: maxResponseBytes)
    }

    // MARK: - Interactions

    /// The server's CapabilityStatement (`GET [base]/metadata`).
    public func capabilities() throws -> Element {
        try expectResource(send("GET", path: "metadata"), type: "CapabilityStatement")
    }

    /// `GET [base]/Type/id`.
    public func read(_ type: String, _ id: String) throws -> Element {
        try expectResource(send("GET", path: "\(type)/\(Self.escaped(id))"), type: type)
    }

    /// `GET [base]/Type/id/_history/version`.
    public func vread(_ type: String, _ id: String, version: String) throws -> Element {
        try expectResource(send("GET", path: "\(type)/\(Self.escaped(id))/_history/\(Self.escaped(version))"), type: type)
    }

    /// Searches `type` and hands each searchset Bundle to `page`, following `next` links to the end (or
    /// until `page` returns false). With `post`, the first request is `POST [base]/Type/_search` with the
    /// parameters as a form body; the `next` links are followed with GET, as servers give them.
    public func search(
        _ type: String, _ parameters: [(String, String)], post: Bool = false, page: (Element) throws -> Bool
    ) throws {
        var response: FHIRResponse
        if post {
            let body = Data(Self.formEncoded(parameters).utf8)
            response = try send("POST", path: "\(type)/_search", body: body, contentType: "application/x-www-form-urlencoded", idempotent: true)
        } else {
            response = try send("GET", path: type, query: parameters)
        }
        var seen: Set<String> = []
        while true {
            let bundle = try expectResource(response, type: "Bundle")
            guard try page(bundle) else { return }
            guard let next = bundle.children(named: "link").first(where: { $0.childValue("relation") == "next" })?.childValue("url"),
                  let url = URL(string: next, relativeTo: base)?.absoluteURL else { return }
            // A server that links a page to itself would loop forever.
            guard seen.insert(next).inserted else {
                throw FHIRClientError.notFHIR(request: "GET \(next)", reason: "the search's next link repeats a page it already gave")
            }
            response = try send("GET", url: url)
        }
    }

    /// `POST [base]` with a transaction or batch Bundle; the response Bundle. `idempotent` when sending
    /// it twice stores nothing twice (every entry a PUT or a conditional create): then it is retried.
    public func submit(_ bundle: Element, idempotent: Bool = false) throws -> Element {
        try expectResource(send("POST", path: "", resource: bundle, idempotent: idempotent), type: "Bundle")
    }

    /// `POST [base]/Type` (with `If-None-Exist` for a conditional create).
    public func create(_ resource: Element, ifNoneExist: String? = nil) throws -> FHIRResponse {
        let type = resource.resourceType ?? ""
        return try send("POST", path: type, resource: resource, extraHeaders: ifNoneExist.map { ["If-None-Exist": $0] } ?? [:], idempotent: ifNoneExist != nil)
    }

    /// `PUT [base]/Type/id`, or with `condition` a conditional update `PUT [base]/Type?condition`.
    public func update(_ resource: Element, condition: [(String, String)]? = nil) throws -> FHIRResponse {
        let type = resource.resourceType ?? ""
        if let condition { return try send("PUT", path: type, query: condition, resource: resource) }
        guard let id = resource.childValue("id") else {
            throw FHIRClientError.invalidRequest("an update needs the resource's id (or a condition)")
        }
        return try send("PUT", path: "\(type)/\(Self.escaped(id))", resource: resource)
    }

    // MARK: - Requests

    /// Sends one request to a path under the base and returns the answer, failing on no answer, a
    /// timeout or an error status. A failure a retry can mend is retried by the ``retry`` policy when the
    /// request is idempotent: GET, PUT and DELETE are; a POST only when the caller says so (a search, a
    /// conditional create, a Bundle of PUTs), since a plain create sent twice makes two resources.
    public func send(
        _ method: String, path: String, query: [(String, String)] = [], resource: Element? = nil,
        body: Data? = nil, contentType: String? = nil, extraHeaders: [String: String] = [:], idempotent: Bool? = nil
    ) throws -> FHIRResponse {
        var text = base.absoluteString
        if !path.isEmpty { text += (text.hasSuffix("/") ? "" : "/") + path }
        if !query.isEmpty { text += "?" + Self.formEncoded(query) }
        guard let url = URL(string: text) else { throw FHIRClientError.invalidRequest("'\(text)' is not a URL") }
        var payload = body
        var type = contentType
        if let resource {
            payload = format == .json ? FHIRJSON.write(resource) : FHIRXML.write(resource)
            type = format.mediaType
        }
        return try send(method, url: url, body: payload, contentType: type, extraHeaders: extraHeaders, idempotent: idempotent)
    }

    /// Sends one request to `url` (a link the server gave: a next page, a Bulk Data status or file).
    public func send(
        _ method: String, url: URL, body: Data? = nil, contentType: String? = nil, extraHeaders: [String: String] = [:], idempotent: Bool? = nil
    ) throws -> FHIRResponse {
        let retryable = idempotent ?? (method != "POST")
        var failures = 0
        var reauthorized = false
        while true {
            do {
                return try sendOnce(method, url: url, body: body, contentType: contentType, extraHeaders: extraHeaders)
            } catch FHIRClientError.status(_, 401, _, _) where authorization != nil && !reauthorized {
                // An expired or revoked token: one more try with a new one.
                authorization?.invalidate()
                reauthorized = true
            } catch let error as FHIRClientError where retryable && error.isTransient && counter.value < retry.maxRetriesPerJob {
                failures += 1
                guard let wait = retry.delay(afterFailures: failures, retryAfter: error.retryAfter) else { throw error }
                counter.add()
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            }
        }
    }

    private func sendOnce(_ method: String, url: URL, body: Data?, contentType: String?, extraHeaders: [String: String]) throws -> FHIRResponse {
        var fields = HeaderFields()
        fields.set("Accept", format.mediaType)
        // A fresh connection per request: a sync job's requests are few and large, so reuse gains little,
        // and a server closing a kept-alive connection under a request cannot fail it.
        fields.set("Connection", "close")
        if let contentType { fields.set("Content-Type", contentType) }
        for (name, value) in headers.merging(extraHeaders, uniquingKeysWith: { _, new in new }) { fields.set(name, value) }
        if let value = try authorization?.authorization() {
            fields.set("Authorization", value)
        } else if let basic = Self.basicCredentials(url), !fields.contains("Authorization") {
            // A user name and password written into the server's URL, sent as libcurl sent them.
            fields.set("Authorization", basic)
        }
        let label = "\(method) \(Self.withoutCredentials(url))"
        let left = runTimeout - counter.runSeconds
        guard left > 0 else { throw FHIRClientError.runTimeout(request: label, seconds: runTimeout) }
        // The whole exchange, its redirects included, ends by this deadline, however slowly it trickles.
        let seconds = min(timeout * 4, left)
        let deadline = Date().addingTimeInterval(seconds)
        var request = BoundedTransfers.Request(method: method, url: Self.strippingCredentials(url), headers: fields.list, body: body)
        var hops = 0
        while true {
            let answer: BoundedTransfers.Answer
            let started = Date()
            var answered: Int?
            defer {
                if let requestObserver {
                    requestObserver(FHIROperation(method: request.method, url: request.url, base: base), answered, Date().timeIntervalSince(started))
                }
            }
            do {
                answer = try transfers.send(request, limit: maxResponseBytes, deadline: deadline)
                answered = answer.status
            } catch .tooLarge(let bytes) {
                throw FHIRClientError.tooLarge(request: label, bytes: bytes, limit: maxResponseBytes)
            } catch .timedOut(let idle) {
                throw FHIRClientError.timeout(request: label, seconds: idle ? timeout : seconds)
            } catch .transport(let reason) {
                throw FHIRClientError.transport(request: label, reason: reason)
            }
            let next: BoundedTransfers.Request?
            do {
                next = try FHIRRedirects.next(after: request, answer: answer, origin: url)
            } catch {
                throw FHIRClientError.redirectRefused(request: label, location: error.location, reason: error.reason)
            }
            guard let next else {
                let response = FHIRResponse(request: label, status: answer.status, headers: answer.headers, body: answer.body)
                guard (200..<300).contains(answer.status) else {
                    throw FHIRClientError.status(request: label, code: answer.status, retryAfter: response.retryAfter, detail: response.errorDetail)
                }
                return response
            }
            hops += 1
            guard hops <= FHIRRedirects.maximumHops else {
                throw FHIRClientError.redirectRefused(
                    request: label, location: Self.withoutCredentials(next.url), reason: "more than \(FHIRRedirects.maximumHops) redirects")
            }
            request = next
        }
    }

    /// `Basic ...` for a user name and password written into `url`, or nil.
    static func basicCredentials(_ url: URL) -> String? {
        guard let parts = URLComponents(url: url, resolvingAgainstBaseURL: true), let user = parts.user else { return nil }
        return "Basic " + Data("\(user):\(parts.password ?? "")".utf8).base64EncodedString()
    }

    /// `url` without its user name and password (they travel as `Authorization`, never in the URL).
    static func strippingCredentials(_ url: URL) -> URL {
        guard url.user != nil || url.password != nil, var parts = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url }
        parts.user = nil
        parts.password = nil
        return parts.url ?? url
    }

    /// `url` as reports show it: a password or user name written into it (`http://user:pw@host/`) is
    /// left out, so that it reaches no report, log or stored error.
    public static func withoutCredentials(_ url: URL) -> String {
        guard url.user != nil || url.password != nil, var parts = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url.absoluteString }
        parts.user = nil
        parts.password = nil
        return parts.string ?? url.absoluteString
    }

    private func expectResource(_ response: FHIRResponse, type: String) throws -> Element {
        let resource = try response.resource()
        guard resource.resourceType == type else {
            throw FHIRClientError.notFHIR(request: response.request, reason: "expected a \(type), got a \(resource.resourceType ?? "document without resourceType")")
        }
        return resource
    }

    /// `name=value&...`, each part percent-encoded as a form (RFC 3986 unreserved characters kept).
    static func formEncoded(_ parameters: [(String, String)]) -> String {
        parameters.map { "\(escaped($0.0))=\(escaped($0.1))" }.joined(separator: "&")
    }

    static func escaped(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~:|,")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

/// Header fields to send, in order, a name set once whatever its case (a later value replaces it).
private struct HeaderFields {
    private(set) var list: [(String, String)] = []

    mutating func set(_ name: String, _ value: String) {
        list.removeAll { $0.0.caseInsensitiveCompare(name) == .orderedSame }
        list.append((name, value))
    }

    func contains(_ name: String) -> Bool {
        list.contains { $0.0.caseInsensitiveCompare(name) == .orderedSame }
    }
}

/// Counts retries, and the time since the job started, across the threads that share a client.
private final class RetryCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    private var started = Date()

    /// Seconds since the job started (the client was made, or ``reset()``).
    var runSeconds: TimeInterval { lock.withLock { Date().timeIntervalSince(started) } }

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }

    func add() {
        lock.lock()
        count += 1
        lock.unlock()
    }

    func reset() {
        lock.lock()
        count = 0
        started = Date()
        lock.unlock()
    }
}
