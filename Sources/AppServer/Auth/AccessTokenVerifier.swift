import Foundation
import Hummingbird
import JWTKit

/// Checks the bearer token of one request of the app API and says which patient's data it opens.
///
/// ``PatientAccessMiddleware`` makes one call, whoever signed the token: ``CompositeTokenVerifier`` sends
/// CareGate's own tokens to ``TokenVerifier`` and a SMART issuer's to ``IssuerTokenVerifier``.
///
/// ## Topics
///
/// - ``TokenAccess``: what the request does (read or write), which an issuer's scopes must grant.
/// - ``TokenError``: why a token is refused (401, or 403 for scopes that do not grant the access).
public protocol AccessTokenVerifier: Sendable {
    /// The verified token, or why it is refused. `access` is what the request does with patient data.
    func verify(_ token: String, access: TokenAccess, now: Date) async throws(TokenError) -> VerifiedToken
}

extension AccessTokenVerifier {
    public func verify(_ token: String, access: TokenAccess) async throws(TokenError) -> VerifiedToken {
        try await verify(token, access: access, now: Date())
    }
}

/// What a request does with the patient's data: `GET` reads it (pull, views, insights); anything else
/// (the push) writes it.
public enum TokenAccess: Sendable, Hashable {
    case read
    case write

    public init(_ method: HTTPRequest.Method) {
        self = method == .get || method == .head ? .read : .write
    }
}

/// CareGate's own tokens grant reading and writing the one patient they are bound to: `access` is not
/// narrowed further.
extension TokenVerifier: AccessTokenVerifier {
    public func verify(_ token: String, access: TokenAccess, now: Date) async throws(TokenError) -> VerifiedToken {
        try await verifyAsync(token, now: now)
    }
}

/// CareGate's own verifier, and a SMART issuer's when `serve --issuer` names one. A token goes to the
/// issuer's verifier when its (still unverified) `iss` is that issuer, and to CareGate's when it is
/// CareGate's own (`caregate`) or there is no issuer; each then checks everything itself, so the routing
/// gives a forger nothing.
///
/// A token naming any other `iss` while an issuer is configured is refused at once with
/// ``TokenError/issuerMismatch(expected:)``, which names the issuer accepted: issuers are compared as
/// exact strings (OpenID Connect Core §3.1.3.7 item 2, RFC 8414 §3.3), so `https://issuer.example/` with
/// a trailing slash is another issuer than `https://issuer.example`, and saying so beats sending it to
/// CareGate's own verifier to be refused for its algorithm.
public struct CompositeTokenVerifier: AccessTokenVerifier {
    public let own: TokenVerifier
    public let issuer: IssuerTokenVerifier?

    public init(own: TokenVerifier, issuer: IssuerTokenVerifier?) {
        self.own = own
        self.issuer = issuer
    }

    public func verify(_ token: String, access: TokenAccess, now: Date) async throws(TokenError) -> VerifiedToken {
        if let issuer {
            let claimed = Self.unverifiedIssuer(of: token)
            if claimed == issuer.configuration.issuer { return try await issuer.verify(token, access: access, now: now) }
            if let claimed, claimed != PatientToken.issuer { throw .issuerMismatch(expected: issuer.configuration.issuer) }
        }
        return try await own.verifyAsync(token, now: now)
    }

    /// The `iss` claim of `token`, unverified: only to choose which verifier checks it.
    static func unverifiedIssuer(of token: String) -> String? {
        struct IssuerOnly: JWTPayload {
            var iss: String?
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        return SignedToken.unverifiedClaims(of: token, as: IssuerOnly.self)?.iss
    }
}
