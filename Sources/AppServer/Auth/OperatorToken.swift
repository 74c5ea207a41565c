@preconcurrency import Crypto
import FHIRCore
import Foundation
import JWTKit

/// An operator's token: a JWT signed with ES256 by the server's key, like a patient's, but for the operator
/// page (`/operator`) only.
///
/// ```swift
/// let token = try OperatorToken.issue(name: "night-shift", key: key, lifetime: 8 * 3600)
/// let verified = try await OperatorTokenVerifier(key: key.publicKey).verify(token)   // verified.name == "night-shift"
/// ```
///
/// Its claims differ from a patient token's in three ways, each enough to keep the two apart: the audience
/// is ``audience`` (not the app API's), `role` is `operator`, and there is no `patient` claim (`sub` is
/// `operator:NAME`). ``TokenVerifier`` refuses it (wrong audience, and a `role`), and
/// ``OperatorTokenVerifier`` refuses a patient's token (403: a valid token of the wrong kind).
public enum OperatorToken {
    /// The audience of operator tokens.
    public static let audience = "caregate-operator"
    /// The `role` claim's value.
    public static let role = "operator"
    /// The longest lifetime `operators token` issues (31 days): a person's session, not a service's key.
    public static let maximumLifetime: TimeInterval = 31 * 86_400

    /// A signed token for operator `name`, valid from `now` for `lifetime` seconds (synchronous code).
    public static func issue(name: String, key: ServerKey, lifetime: TimeInterval, now: Date = Date()) throws -> String {
        try waitForTask { try await issueAsync(name: name, key: key, lifetime: lifetime, now: now) }
    }

    /// A signed token for operator `name`, valid from `now` for `lifetime` seconds.
    public static func issueAsync(name: String, key: ServerKey, lifetime: TimeInterval, now: Date = Date()) async throws -> String {
        let issued = now.timeIntervalSince1970.rounded(.down)
        let claims = PatientToken.Claims(
            iss: PatientToken.issuer, sub: "operator:\(name)", aud: .one(audience), patient: nil, iat: issued, nbf: nil,
            exp: issued + lifetime.rounded(.down), jti: UUID().uuidString, role: role)
        return try await PatientToken.sign(claims, key: key)
    }
}

/// What a verified operator token says.
public struct VerifiedOperator: Sendable, Equatable {
    /// The token's `sub` (`operator:NAME`).
    public var subject: String
    public var expires: Date
}

/// Why an operator token is refused: ``invalid`` (401: no token, or one that does not verify) or
/// ``notAnOperator`` (403: a valid token of the server's, but a patient's).
public enum OperatorTokenError: Error, Equatable, CustomStringConvertible {
    case invalid(TokenError)
    case notAnOperator

    public var description: String {
        switch self {
        case .invalid(let error): return error.description
        case .notAnOperator: return "the token is not an operator's: the operator page needs a token of `caregate operators token`"
        }
    }
}

/// Checks operator tokens: the same signature, algorithm, expiry and issuer checks as ``TokenVerifier``,
/// then the operator's audience and role.
public struct OperatorTokenVerifier: Sendable {
    public let key: P256.Signing.PublicKey

    public init(key: P256.Signing.PublicKey) { self.key = key }

    public func verify(_ token: String, now: Date = Date()) async throws(OperatorTokenError) -> VerifiedOperator {
        guard !token.isEmpty else { throw .invalid(.missing) }
        guard token.utf8.count <= SignedToken.maximumLength else { throw .invalid(.malformed) }
        let claims: PatientToken.Claims
        do {
            _ = try SignedToken.header(of: token, accepting: ["ES256"])
            let keys = JWTKeyCollection()
            guard let verifying = try? ES256PublicKey(backing: key) else { throw TokenError.badSignature }
            await keys.add(ecdsa: verifying)
            claims = try await SignedToken.verify(token, as: PatientToken.Claims.self, with: keys)
        } catch let error as TokenError {
            throw .invalid(error)
        } catch {
            throw .invalid(.badSignature)
        }
        let time = now.timeIntervalSince1970
        guard let exp = claims.exp, exp.isFinite, time < exp + TokenVerifier.clockSkew else { throw .invalid(.expired) }
        if let nbf = claims.nbf, time + TokenVerifier.clockSkew < nbf { throw .invalid(.notYetValid) }
        guard claims.iss == PatientToken.issuer else { throw .invalid(.wrongIssuer) }
        guard claims.aud?.contains(OperatorToken.audience) == true, claims.role == OperatorToken.role, claims.patient == nil,
              let subject = claims.sub, subject.hasPrefix("operator:")
        else { throw .notAnOperator }
        return VerifiedOperator(subject: subject, expires: Date(timeIntervalSince1970: exp))
    }
}
