import Foundation
import JWTKit
import Logging

/// Where a SMART/OpenID issuer is, and the bounds on reading it (`caregate serve --issuer URL`).
public struct IssuerConfiguration: Sendable {
    /// The issuer exactly as its tokens write `iss` (and its discovery document writes `issuer`).
    public let issuer: String
    /// What the tokens' `aud` must contain: CareGate's base URL, as apps name it to the issuer.
    public let audience: String
    /// Each fetch (discovery document, JWK Set) ends by this deadline.
    public var fetchTimeout: TimeInterval = 5
    /// The largest discovery document or JWK Set read.
    public var maximumDocumentBytes = 256 * 1024
    /// The most keys a JWK Set may hold.
    public var maximumKeys = 32
    /// A token naming a key the cache lacks refetches the JWK Set at most this often.
    public var refetchInterval: TimeInterval = 60
    /// After a failed fetch, the next one waits at least this long.
    public var retryAfterFailure: TimeInterval = 10
    /// Leeway for `exp` and `nbf`.
    public var clockSkew: TimeInterval = 60

    /// Checks `issuer`: an absolute https URL (plain http only on the loopback, for tests and local
    /// issuers), with no query, fragment or user info.
    public init(issuer: String, audience: String) throws(IssuerError) {
        guard let url = URL(string: issuer), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
              url.query == nil, url.fragment == nil, url.user == nil, url.password == nil
        else { throw .badIssuerURL(issuer, reason: "not an absolute URL without query, fragment or user") }
        guard scheme == "https" || (scheme == "http" && Self.isLoopback(host)) else {
            throw .badIssuerURL(issuer, reason: "must be https (http only on 127.0.0.1, ::1 or localhost)")
        }
        guard !audience.isEmpty else { throw .badIssuerURL(issuer, reason: "the audience is empty") }
        self.issuer = issuer
        self.audience = audience
    }

    static func isLoopback(_ host: String) -> Bool {
        ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
    }

    /// `.well-known/<name>` under the issuer (SMART App Launch 2.x §2.7; OpenID Connect Discovery §4).
    func wellKnown(_ name: String) -> URL? {
        let base = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        return URL(string: base + "/.well-known/" + name)
    }
}

/// Why an issuer's keys cannot be had. Names URLs and reasons, never a token.
public enum IssuerError: Error, Equatable, CustomStringConvertible {
    case badIssuerURL(String, reason: String)
    case unreachable(url: String, reason: String)
    case tooLarge(url: String, limit: Int)
    case badDocument(url: String, reason: String)

    public var description: String {
        switch self {
        case .badIssuerURL(let url, let reason): return "the issuer \(url) cannot be used: \(reason)"
        case .unreachable(let url, let reason): return "cannot read \(url): \(reason)"
        case .tooLarge(let url, let limit): return "\(url) is larger than \(limit) bytes"
        case .badDocument(let url, let reason): return "\(url) is not usable: \(reason)"
        }
    }
}

/// Checks access tokens of a SMART App Launch / OpenID Connect issuer against its published keys.
///
/// The keys come from the JWK Set its discovery document names (`jwks_uri` of
/// `.well-known/smart-configuration`, else of `.well-known/openid-configuration`), fetched on first use
/// and again, at most once a minute, when a token names a key (`kid`) the cache lacks.
///
/// A token is accepted when: its algorithm is one of ``JWSAlgorithm`` (`none` and `HS*` refused unread)
/// and its header has no `crit` (`SignedToken`'s rules); the key its `kid` names (or, without one, the
/// set's only key fitting the algorithm) fits that algorithm and, alone, verifies its signature through
/// jwt-kit (a `kid` the cache lacks refetches the set, never falls back to another key); `iss` is
/// the issuer; `aud` contains the audience; `exp` is present and not past, `nbf` not ahead (60 s leeway);
/// `patient` is a FHIR id (the store's patient `Patient/<id>`); and its `scope` grants the request's
/// access (``SMARTScopes``). Anything else is a ``TokenError``; an issuer that cannot be read is
/// ``TokenError/issuerUnavailable`` (503).
public final class IssuerTokenVerifier: AccessTokenVerifier {
    public let configuration: IssuerConfiguration
    private let keys: IssuerKeys

    /// `fetch` reads one URL within a byte limit and a deadline (the network when nil; tests give their own).
    public init(
        _ configuration: IssuerConfiguration, logger: Logger = Logger(label: "caregate.issuer"),
        fetch: (@Sendable (URL, Int, TimeInterval) async throws(IssuerError) -> Data)? = nil
    ) {
        self.configuration = configuration
        // The network: one bounded client (AsyncHTTPClient), kept while the verifier lives.
        keys = IssuerKeys(configuration: configuration, logger: logger, fetch: fetch ?? BoundedFetch.network())
    }

    /// Fetches the issuer's keys now (at start-up), so that the first token does not wait for them.
    public func refreshKeys(now: Date = Date()) async throws(IssuerError) -> Int {
        try await keys.refresh(now: now)
    }

    /// The claims CareGate reads; jwt-kit decodes them once the signature verifies, and ``verify(_:access:now:)``
    /// checks each, so that the error says which is wrong.
    struct Claims: JWTPayload {
        var iss: String?
        var sub: String?
        var aud: PatientToken.Audience?
        var patient: String?
        var nbf: Double?
        var exp: Double?
        var scope: String?

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    public func verify(_ token: String, access: TokenAccess, now: Date) async throws(TokenError) -> VerifiedToken {
        // The algorithm, crit and kid first (``SignedToken``), then the one key they name, then jwt-kit.
        let header = try SignedToken.header(of: token, accepting: JWSAlgorithm.names)
        guard let algorithm = JWSAlgorithm(rawValue: header.algorithm) else { throw .unsupportedAlgorithm }
        let key = try await keys.key(id: header.keyID, for: algorithm, now: now)
        let claims = try await SignedToken.verify(token, as: Claims.self, with: await key.collection(for: algorithm))
        guard claims.iss == configuration.issuer else { throw .wrongIssuer }
        let time = now.timeIntervalSince1970
        guard let exp = claims.exp, exp.isFinite, time < exp + configuration.clockSkew else { throw .expired }
        if let nbf = claims.nbf, !(time + configuration.clockSkew >= nbf) { throw .notYetValid }
        guard claims.aud?.contains(configuration.audience) == true else { throw .wrongAudience }
        guard let patient = claims.patient, let patientID = Self.storePatientID(patient) else { throw .noPatient }
        guard SMARTScopes(claims.scope).grants(access) else { throw .insufficientScope }
        return VerifiedToken(subject: claims.sub ?? patientID, patientID: patientID, expires: Date(timeIntervalSince1970: exp))
    }

    /// The store's id of the patient a SMART `patient` claim names: the claim is a FHIR logical id
    /// (`[A-Za-z0-9\-\.]{1,64}`), and the store names a patient imported from FHIR `Patient/<id>`.
    static func storePatientID(_ claim: String) -> String? {
        guard (1...64).contains(claim.utf8.count),
              claim.utf8.allSatisfy({ byte in
                  (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                      || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
              })
        else { return nil }
        return "Patient/" + claim
    }
}

/// The issuer's keys, fetched once and refetched when asked for one they lack (at most once per
/// ``IssuerConfiguration/refetchInterval``); concurrent askers wait for the one fetch under way.
actor IssuerKeys {
    let configuration: IssuerConfiguration
    let logger: Logger
    let fetch: @Sendable (URL, Int, TimeInterval) async throws(IssuerError) -> Data
    private var keys: [IssuerSigningKey] = []
    private var jwksURL: URL?
    /// No fetch before this date, unless none was ever made.
    private var nextFetch: Date?
    private var lastFetchFailed = false
    private var inFlight: Task<Result<Int, IssuerError>, Never>?

    init(configuration: IssuerConfiguration, logger: Logger, fetch: @escaping @Sendable (URL, Int, TimeInterval) async throws(IssuerError) -> Data) {
        self.configuration = configuration
        self.logger = logger
        self.fetch = fetch
    }

    /// The key `id` names for `algorithm`; without an id, the one key that fits it. An id the cache lacks
    /// refetches the set (never falls back to another key, as jwt-kit's default key would).
    func key(id: String?, for algorithm: JWSAlgorithm, now: Date) async throws(TokenError) -> IssuerSigningKey {
        if let found = lookup(id, algorithm) { return found }
        if let inFlight {
            _ = await inFlight.value
        } else if nextFetch.map({ now >= $0 || now < $0.addingTimeInterval(-configuration.refetchInterval) }) ?? true {
            _ = try? await refresh(now: now)
        }
        if let found = lookup(id, algorithm) { return found }
        throw lastFetchFailed && keys.isEmpty ? .issuerUnavailable : .unknownKey
    }

    private func lookup(_ id: String?, _ algorithm: JWSAlgorithm) -> IssuerSigningKey? {
        let fitting = keys.filter { $0.fits(algorithm) }
        guard let id else { return fitting.count == 1 ? fitting[0] : nil }
        return fitting.first { $0.keyID == id }
    }

    /// Fetches the JWK Set (discovering its URL first when needed); returns how many keys it holds.
    @discardableResult
    func refresh(now: Date) async throws(IssuerError) -> Int {
        if let inFlight { return try await inFlight.value.get() }
        let task = Task { await self.fetchKeys() }
        inFlight = task
        let result = await task.value
        inFlight = nil
        switch result {
        case .success(let count):
            lastFetchFailed = false
            nextFetch = now.addingTimeInterval(configuration.refetchInterval)
            logger.info("issuer keys fetched", metadata: ["issuer": "\(configuration.issuer)", "keys": "\(count)"])
        case .failure(let error):
            lastFetchFailed = true
            nextFetch = now.addingTimeInterval(configuration.retryAfterFailure)
            // A new JWK Set URL may be published: discover again next time.
            jwksURL = nil
            logger.warning("issuer keys not fetched", metadata: ["reason": "\(error)"])
        }
        return try result.get()
    }

    private func fetchKeys() async -> Result<Int, IssuerError> {
        do throws(IssuerError) {
            let url: URL
            if let jwksURL { url = jwksURL } else { url = try await discover() }
            let data = try await fetch(url, configuration.maximumDocumentBytes, configuration.fetchTimeout)
            guard let set = try? JSONDecoder().decode(JWKSetDocument.self, from: data) else {
                throw .badDocument(url: url.absoluteString, reason: "not a JWK Set")
            }
            guard set.keys.count <= configuration.maximumKeys else {
                throw .badDocument(url: url.absoluteString, reason: "more than \(configuration.maximumKeys) keys")
            }
            let usable = set.keys.compactMap(IssuerSigningKey.init)
            guard !usable.isEmpty else { throw .badDocument(url: url.absoluteString, reason: "no usable signing key") }
            jwksURL = url
            keys = usable
            return .success(usable.count)
        } catch {
            return .failure(error)
        }
    }

    /// `jwks_uri` of the SMART configuration, else of the OpenID configuration.
    private func discover() async throws(IssuerError) -> URL {
        var failures: [IssuerError] = []
        for name in ["smart-configuration", "openid-configuration"] {
            guard let url = configuration.wellKnown(name) else { continue }
            do throws(IssuerError) {
                let data = try await fetch(url, configuration.maximumDocumentBytes, configuration.fetchTimeout)
                guard let document = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    throw .badDocument(url: url.absoluteString, reason: "not a JSON object")
                }
                // OpenID Connect Discovery §4.3: the document's issuer is the one asked for, exactly.
                if let issuer = document["issuer"], issuer as? String != configuration.issuer {
                    throw .badDocument(url: url.absoluteString, reason: "its issuer is not \(configuration.issuer)")
                }
                guard let text = document["jwks_uri"] as? String, let jwks = URL(string: text), let host = jwks.host,
                      jwks.scheme == "https" || (jwks.scheme == "http" && IssuerConfiguration.isLoopback(host))
                else { throw .badDocument(url: url.absoluteString, reason: "no https jwks_uri") }
                return jwks
            } catch {
                failures.append(error)
            }
        }
        throw failures.first ?? .badIssuerURL(configuration.issuer, reason: "no discovery URL")
    }
}
