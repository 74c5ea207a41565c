import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// `GET`s of small JSON documents (an issuer's discovery document and JWK Set) on AsyncHTTPClient,
/// with bounds the server cannot stretch:
///
/// - size: a `Content-Length` over the limit is refused before the body is read, a body that grows past
///   it is refused at the limit (`collect(upTo:)`), and its connection is closed, so nothing the server
///   sends after that is read or kept (URLSession on Linux could not promise this);
/// - time: a deadline for the whole exchange, redirects and body included, however slowly it trickles;
/// - redirects: the client follows none by itself; each hop is checked against the issuer's rule
///   (``refusal(_:)``: https, plain http only on the loopback, no user info), at most
///   ``maximumRedirects`` of them, so that a redirect cannot lead where naming the URL could not.
///
/// One client per instance, on the process's shared event loops, shut down when the instance goes.
final class BoundedFetch: Sendable {
    /// Redirects followed per fetch at most.
    static let maximumRedirects = 3

    private let client: HTTPClient

    init() {
        let configuration = HTTPClient.Configuration(
            // Never followed by the client: `get` checks every hop against the issuer's rule.
            redirectConfiguration: .disallow,
            timeout: HTTPClient.Configuration.Timeout(connect: .seconds(10), read: .seconds(10)),
            // Asks for no compression, so takes none: the limit is on the bytes as sent.
            decompression: .disabled
        )
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    deinit {
        // Non-blocking: the owner may go away on any thread.
        client.shutdown { _ in }
    }

    /// The fetch an ``IssuerTokenVerifier`` reads the network with: one client, kept as long as the
    /// verifier keeps the closure.
    static func network() -> @Sendable (URL, Int, TimeInterval) async throws(IssuerError) -> Data {
        let fetcher = BoundedFetch()
        return { url, limit, deadline throws(IssuerError) in try await fetcher.get(url, limit: limit, deadline: deadline) }
    }

    /// ``get(_:limit:deadline:)`` on a client of its own, for a single fetch.
    static func get(_ url: URL, limit: Int, deadline: TimeInterval) async throws(IssuerError) -> Data {
        try await BoundedFetch().get(url, limit: limit, deadline: deadline)
    }

    /// Why `url` may not be read for an issuer, or nil when it may: https, or plain http on 127.0.0.1,
    /// ::1 or localhost (for tests and local issuers), with no user name or password. The same rule as
    /// the issuer's own URL and its `jwks_uri`.
    static func refusal(_ url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else { return "not an absolute URL" }
        guard url.user == nil, url.password == nil else { return "a URL with a user name or password" }
        guard scheme == "https" || (scheme == "http" && IssuerConfiguration.isLoopback(host)) else {
            return "must be https (http only on 127.0.0.1, ::1 or localhost)"
        }
        return nil
    }

    /// The body of `url` when it answers 200 within `deadline` seconds and `limit` bytes, following at
    /// most ``maximumRedirects`` redirects that each keep to ``refusal(_:)``'s rule.
    func get(_ url: URL, limit: Int, deadline: TimeInterval) async throws(IssuerError) -> Data {
        let name = url.absoluteString
        // At most a day, so that the nanoseconds cannot overflow.
        let deadline = min(max(0, deadline), 86_400)
        let result: Result<Data, IssuerError> = await withTaskGroup(of: Result<Data, IssuerError>?.self) { group in
            group.addTask { await self.follow(url, limit: limit, deadline: .now() + .nanoseconds(Int64(deadline * 1e9))) }
            group.addTask {
                // The whole exchange's deadline: the body has none of its own in AsyncHTTPClient.
                try? await Task.sleep(nanoseconds: UInt64(deadline * 1e9))
                return Task.isCancelled ? nil : .failure(.unreachable(url: name, reason: "no complete answer within \(Int(deadline)) s"))
            }
            var first: Result<Data, IssuerError>?
            while first == nil, let next = await group.next() { first = next }
            // Cancelling the fetch closes its connection: nothing it read is kept.
            group.cancelAll()
            return first ?? .failure(.unreachable(url: name, reason: "no answer"))
        }
        return try result.get()
    }

    /// The fetch and its redirects, each hop checked before it is sent.
    private func follow(_ url: URL, limit: Int, deadline: NIODeadline) async -> Result<Data, IssuerError> {
        let name = url.absoluteString
        var current = url
        for hop in 0...Self.maximumRedirects {
            if let reason = Self.refusal(current) {
                return .failure(.unreachable(url: name, reason: hop == 0 ? reason : "its redirect to \(Self.withoutCredentials(current)) is not followed: \(reason)"))
            }
            var request = HTTPClientRequest(url: current.absoluteString)
            request.headers.add(name: "Accept", value: "application/json")
            do {
                let response = try await client.execute(request, deadline: deadline)
                if [301, 302, 303, 307, 308].contains(Int(response.status.code)) {
                    guard let location = response.headers.first(name: "location"),
                          let target = URL(string: location, relativeTo: current)?.absoluteURL
                    else { return .failure(.unreachable(url: name, reason: "HTTP \(response.status.code) without a usable Location")) }
                    current = target
                    continue
                }
                guard response.status == .ok else { return .failure(.unreachable(url: name, reason: "HTTP \(response.status.code)")) }
                let body = try await response.body.collect(upTo: limit)
                return .success(Data(body.readableBytesView))
            } catch is NIOTooManyBytesError {
                return .failure(.tooLarge(url: name, limit: limit))
            } catch {
                return .failure(.unreachable(url: name, reason: Self.describe(error)))
            }
        }
        return .failure(.unreachable(url: name, reason: "more than \(Self.maximumRedirects) redirects"))
    }

    /// `url` without a user name or password, for messages.
    static func withoutCredentials(_ url: URL) -> String {
        guard url.user != nil || url.password != nil, var parts = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url.absoluteString }
        parts.user = nil
        parts.password = nil
        return parts.string ?? url.absoluteString
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError {
            switch error {
            case .readTimeout, .connectTimeout: return "no answer within 10 s"
            case .deadlineExceeded: return "no complete answer in time"
            default: return "\(error)"
            }
        }
        return "\(error)"
    }
}
