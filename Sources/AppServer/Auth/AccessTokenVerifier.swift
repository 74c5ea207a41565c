import Foundation
import Hummingbird

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
        try verify(token, now: now)
    }
}

/// CareGate's own verifier, and a SMART issuer's when `serve --issuer` names one. A token goes to the
/// issuer's verifier when its (still unverified) `iss` is that issuer, and to CareGate's otherwise; each
/// then checks everything itself, so the routing gives a forger nothing.
public struct CompositeTokenVerifier: AccessTokenVerifier {
    public let own: TokenVerifier
    public let issuer: IssuerTokenVerifier?

    public init(own: TokenVerifier, issuer: IssuerTokenVerifier?) {
        self.own = own
        self.issuer = issuer
    }

    public func verify(_ token: String, access: TokenAccess, now: Date) async throws(TokenError) -> VerifiedToken {
        if let issuer, JWTParts.unverifiedIssuer(of: token) == issuer.configuration.issuer {
            return try await issuer.verify(token, access: access, now: now)
        }
        return try own.verify(token, now: now)
    }
}

/// The three parts of a compact JWS, split and decoded, nothing verified.
struct JWTParts {
    var header: Data
    var claims: Data
    var signature: Data
    /// The bytes the signature covers: `header.claims` as sent.
    var signingInput: Data

    /// Splits `token`, or throws ``TokenError/malformed``; tokens over ``TokenVerifier/maximumLength`` are not read.
    init(_ token: String) throws(TokenError) {
        guard token.utf8.count <= TokenVerifier.maximumLength else { throw .malformed }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(parts[0]), let claims = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2])
        else { throw .malformed }
        self.header = header
        self.claims = claims
        self.signature = signature
        signingInput = Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
    }

    /// The `iss` claim of `token`, unverified: only to choose which verifier checks it.
    static func unverifiedIssuer(of token: String) -> String? {
        guard let parts = try? JWTParts(token) else { return nil }
        struct IssuerOnly: Decodable { var iss: String? }
        return (try? JSONDecoder().decode(IssuerOnly.self, from: parts.claims))?.iss
    }
}
