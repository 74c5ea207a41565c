import Crypto
import _CryptoExtras
import FHIR
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a client sends as `Authorization` with each request.
public protocol AuthorizationProvider: Sendable {
    /// The header's value (`Bearer ...`), or nil for none.
    func authorization() throws -> String?
    /// The server answered 401: forget any cached token, so that the next call gets a new one.
    func invalidate()
}

/// Why a client cannot authorize itself.
public enum AuthorizationError: Error, CustomStringConvertible, Equatable {
    /// The token or key cannot be read (its source named).
    case unreadable(source: String, reason: String)
    /// The server's SMART configuration or token endpoint said no, or said something else.
    case refused(endpoint: String, reason: String)

    public var description: String {
        switch self {
        case .unreadable(let source, let reason): return "cannot read the credentials from \(source): \(reason)"
        case .refused(let endpoint, let reason): return "\(endpoint) refused the client: \(reason)"
        }
    }
}

/// A fixed bearer token, read from an environment variable or a file (never from the command line,
/// where other users of the machine can read it), once.
public struct BearerToken: AuthorizationProvider {
    private let token: String

    /// The token in environment variable `name`.
    public static func environment(_ name: String, _ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> BearerToken {
        guard let value = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else {
            throw AuthorizationError.unreadable(source: "environment variable \(name)", reason: "it is not set or empty")
        }
        return BearerToken(token: value)
    }

    /// The token in file `path` (its first line).
    public static func file(_ path: String) throws -> BearerToken {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AuthorizationError.unreadable(source: path, reason: "no such file, or not readable")
        }
        let token = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init)?
            .trimmingCharacters(in: .whitespaces) ?? ""
        guard !token.isEmpty else { throw AuthorizationError.unreadable(source: path, reason: "the file is empty") }
        return BearerToken(token: token)
    }

    public func authorization() throws -> String? { "Bearer \(token)" }
    public func invalidate() {}
}

/// SMART Backend Services (the client credentials grant with a signed JWT assertion): the token
/// endpoint from `[base]/.well-known/smart-configuration`, an assertion signed with the client's
/// private key (ES384 with a P-384 key, or RS384 with an RSA key, from PEM), and the access token kept
/// until shortly before it expires.
public final class SMARTBackendServices: AuthorizationProvider, @unchecked Sendable {
    public enum Key: @unchecked Sendable {  // the keys are immutable values
        case es384(P384.Signing.PrivateKey)
        case rs384(_RSA.Signing.PrivateKey)

        /// A private key from PEM: P-384 (ES384) or RSA (RS384).
        public static func pem(_ text: String, source: String) throws -> Key {
            if let key = try? P384.Signing.PrivateKey(pemRepresentation: text) { return .es384(key) }
            // Read without swift-crypto's own size floor, so that a weak key is named as such.
            if let key = try? _RSA.Signing.PrivateKey(unsafePEMRepresentation: text) {
                // RFC 7518 §3.3 and jwt-kit: RSA keys of fewer than 2048 bits are not used for signing.
                guard key.keySizeInBits >= 2048 else {
                    throw AuthorizationError.unreadable(source: source, reason: "the RSA key has \(key.keySizeInBits) bits; RS384 needs at least 2048")
                }
                return .rs384(key)
            }
            throw AuthorizationError.unreadable(source: source, reason: "not a PEM P-384 (ES384) or RSA (RS384) private key")
        }
    }

    public let base: URL
    public let clientID: String
    public let scope: String
    let key: Key
    let keyID: String?
    private let timeout: TimeInterval
    private let lock = NSLock()
    private var cached: (token: String, expires: Date)?
    private var tokenEndpoint: URL?

    public init(base: URL, clientID: String, key: Key, keyID: String? = nil, scope: String = "system/*.read system/*.write", timeout: TimeInterval = 30) {
        self.base = base
        self.clientID = clientID
        self.key = key
        self.keyID = keyID
        self.scope = scope
        self.timeout = timeout
    }

    public func authorization() throws -> String? {
        lock.lock()
        defer { lock.unlock() }
        if let cached, cached.expires > Date() { return "Bearer \(cached.token)" }
        let endpoint = try tokenEndpoint ?? discoverTokenEndpoint()
        tokenEndpoint = endpoint
        let (token, lifetime) = try requestToken(at: endpoint)
        // Renewed a minute early (or at half its life, for short ones): never sent as it expires.
        cached = (token, Date().addingTimeInterval(max(1, min(lifetime - 60, lifetime / 2))))
        return "Bearer \(token)"
    }

    public func invalidate() {
        lock.lock()
        cached = nil
        lock.unlock()
    }

    /// `token_endpoint` of `[base]/.well-known/smart-configuration`.
    private func discoverTokenEndpoint() throws -> URL {
        let url = base.appendingPathComponent(".well-known/smart-configuration")
        let (status, data) = try exchange(URLRequest(url: url, timeoutInterval: timeout))
        guard status == 200, let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let text = object["token_endpoint"] as? String, let endpoint = URL(string: text, relativeTo: base)?.absoluteURL
        else {
            throw AuthorizationError.refused(endpoint: url.absoluteString, reason: "no token_endpoint in its SMART configuration (status \(status))")
        }
        return endpoint
    }

    /// Posts the client credentials grant with a fresh assertion; the token and its lifetime in seconds.
    private func requestToken(at endpoint: URL) throws -> (String, TimeInterval) {
        let form = [
            ("grant_type", "client_credentials"), ("scope", scope),
            ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
            ("client_assertion", try assertion(audience: endpoint.absoluteString)),
        ]
        var request = URLRequest(url: endpoint, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.httpBody = Data(FHIRClient.formEncoded(form).utf8)
        let (status, data) = try exchange(request)
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        guard status == 200, let token = object?["access_token"] as? String, !token.isEmpty else {
            let reason = (object?["error_description"] as? String) ?? (object?["error"] as? String) ?? "status \(status)"
            throw AuthorizationError.refused(endpoint: endpoint.absoluteString, reason: reason)
        }
        let lifetime = (object?["expires_in"] as? NSNumber)?.doubleValue ?? 300
        return (token, lifetime)
    }

    /// The token endpoint's answers: a token is small (1 MiB at most, inflated or not), and the exchange
    /// is bounded in time. One client for the process, on the shared event loops: it lives as long as
    /// the process, as a token may be renewed at any time of a long run.
    private static let transfers = BoundedTransfers(idleTimeout: 30, inflatedLimit: 1 << 20)

    /// Sends `request` and returns the status and body of its answer. A GET (the SMART configuration)
    /// follows redirects as the FHIR client does (``FHIRRedirects``); the token POST follows none: its
    /// body is a credential made for that one endpoint.
    private func exchange(_ request: URLRequest) throws -> (Int, Data) {
        guard let url = request.url else { throw AuthorizationError.refused(endpoint: "", reason: "no URL") }
        let endpoint = FHIRClient.withoutCredentials(url)
        let method = request.httpMethod ?? "GET"
        var next: BoundedTransfers.Request? = BoundedTransfers.Request(
            method: method, url: url, headers: (request.allHTTPHeaderFields ?? [:]).map { ($0.key, $0.value) }, body: request.httpBody)
        let deadline = Date().addingTimeInterval(120)
        var hops = 0
        while let current = next {
            let answer: BoundedTransfers.Answer
            do {
                answer = try Self.transfers.send(current, limit: 1 << 20, deadline: deadline)
            } catch .tooLarge {
                throw AuthorizationError.refused(endpoint: endpoint, reason: "the answer is over 1 MiB, which no token answer is")
            } catch .timedOut(let idle) {
                throw AuthorizationError.refused(endpoint: endpoint, reason: idle ? "no answer for 30 s" : "no complete answer within 120 s")
            } catch .transport(let reason) {
                throw AuthorizationError.refused(endpoint: endpoint, reason: "no answer: \(reason)")
            }
            guard method == "GET", FHIRRedirects.isRedirect(answer.status) else { return (answer.status, answer.body) }
            do {
                next = try FHIRRedirects.next(after: current, answer: answer, origin: url)
            } catch {
                throw AuthorizationError.refused(endpoint: endpoint, reason: "its redirect to \(error.location) is not followed: \(error.reason)")
            }
            hops += 1
            if hops > FHIRRedirects.maximumHops {
                throw AuthorizationError.refused(endpoint: endpoint, reason: "more than \(FHIRRedirects.maximumHops) redirects")
            }
            if next == nil { return (answer.status, answer.body) }
        }
        throw AuthorizationError.refused(endpoint: endpoint, reason: "no answer")
    }
}

/// The credentials a command or a sync configuration names: at most one of a bearer token's
/// environment variable, a bearer token's file, or a SMART client id with its key file.
public struct AuthorizationSettings: Sendable, Equatable {
    public var tokenEnv: String?
    public var tokenFile: String?
    public var smartClientID: String?
    public var smartKey: String?

    public init(tokenEnv: String? = nil, tokenFile: String? = nil, smartClientID: String? = nil, smartKey: String? = nil) {
        self.tokenEnv = tokenEnv
        self.tokenFile = tokenFile
        self.smartClientID = smartClientID
        self.smartKey = smartKey
    }

    public var isEmpty: Bool { tokenEnv == nil && tokenFile == nil && smartClientID == nil && smartKey == nil }

    /// Why these settings cannot be used together, or nil.
    public var conflict: String? {
        let kinds = [tokenEnv != nil, tokenFile != nil, smartClientID != nil || smartKey != nil].filter { $0 }.count
        if kinds > 1 { return "give one of a token's environment variable, a token file, or a SMART client id with its key" }
        if (smartClientID == nil) != (smartKey == nil) { return "a SMART client id and its key go together" }
        return nil
    }

    /// The provider these settings name for the server at `base` (nil for none); reads the token or
    /// key now, so that a missing one is found before anything is sent.
    public func provider(base: URL) throws -> (any AuthorizationProvider)? {
        if let conflict { throw AuthorizationError.unreadable(source: "the settings", reason: conflict) }
        if let tokenEnv { return try BearerToken.environment(tokenEnv) }
        if let tokenFile { return try BearerToken.file(tokenFile) }
        guard let smartClientID, let smartKey else { return nil }
        guard let pem = FileManager.default.contents(atPath: smartKey) else {
            throw AuthorizationError.unreadable(source: smartKey, reason: "no such file, or not readable")
        }
        let key = try SMARTBackendServices.Key.pem(String(decoding: pem, as: UTF8.self), source: smartKey)
        return SMARTBackendServices(base: base, clientID: smartClientID, key: key)
    }
}
