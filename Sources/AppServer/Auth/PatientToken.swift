@preconcurrency import Crypto
import FHIRCore
import Foundation
import JWTKit

/// An access token of the app API: a JWT signed with ES256 by the server's key, bound to one patient of
/// the store and to the API's audience.
///
/// ```swift
/// let token = try PatientToken.issue(patientID: "Patient/pat-1", key: key, audience: PatientToken.defaultAudience, lifetime: 3600)
/// let verified = try TokenVerifier(key: key.publicKey).verify(token)   // verified.patientID == "Patient/pat-1"
/// ```
///
/// The claims: `iss` (`caregate`), `sub` and `patient` (the patient's id in the store), `aud`, `iat`,
/// `exp`, `jti`. The header names `alg: ES256`, `typ: JWT` and the key's `kid`.
public enum PatientToken {
    /// The audience of tokens for the app API.
    public static let defaultAudience = "caregate-app-api"
    public static let issuer = "caregate"
    /// The longest lifetime `patients token` issues (one year).
    public static let maximumLifetime: TimeInterval = 366 * 86_400

    /// The claims, encoded and decoded by jwt-kit; ``TokenVerifier`` checks each itself, so that the
    /// error says which is wrong.
    struct Claims: JWTPayload {
        var iss: String?
        var sub: String?
        var aud: Audience?
        var patient: String?
        var iat: Double?
        var nbf: Double?
        var exp: Double?
        var jti: String?
        /// `operator` on an operator's token (``OperatorToken``); absent on a patient's.
        var role: String?

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// `aud` is a string or an array of strings (RFC 7519 §4.1.3).
    enum Audience: Codable, Equatable {
        case one(String)
        case many([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) { self = .one(one) } else { self = .many(try container.decode([String].self)) }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .one(let value): try container.encode(value)
            case .many(let values): try container.encode(values)
            }
        }

        func contains(_ audience: String) -> Bool {
            switch self {
            case .one(let value): return value == audience
            case .many(let values): return values.contains(audience)
            }
        }
    }

    /// A signed token for `patientID`, valid from `now` for `lifetime` seconds (from synchronous code:
    /// `caregate patients token`; async code calls ``issueAsync(patientID:key:audience:lifetime:now:)``).
    public static func issue(
        patientID: String, key: ServerKey, audience: String = defaultAudience, lifetime: TimeInterval, now: Date = Date()
    ) throws -> String {
        try waitForTask { try await issueAsync(patientID: patientID, key: key, audience: audience, lifetime: lifetime, now: now) }
    }

    /// A signed token for `patientID`, valid from `now` for `lifetime` seconds: signed by jwt-kit as ES256
    /// with the server's key.
    public static func issueAsync(
        patientID: String, key: ServerKey, audience: String = defaultAudience, lifetime: TimeInterval, now: Date = Date()
    ) async throws -> String {
        let issued = now.timeIntervalSince1970.rounded(.down)
        let claims = Claims(
            iss: issuer, sub: patientID, aud: .one(audience), patient: patientID, iat: issued, nbf: nil,
            exp: issued + lifetime.rounded(.down), jti: UUID().uuidString, role: nil)
        return try await sign(claims, key: key)
    }

    /// `claims` signed as ES256 by the server's key, its `kid` in the header (a patient's or an operator's).
    static func sign(_ claims: Claims, key: ServerKey) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(backing: key.privateKey))
        return try await SignedToken.sign(claims, with: keys, keyID: key.keyID)
    }
}

/// What a verified token says: whom it was issued to and which patient's data it opens.
public struct VerifiedToken: Sendable, Equatable {
    public var subject: String
    public var patientID: String
    public var expires: Date
}

/// Why a token is refused. The message is safe to show a client: it names no patient and no key.
///
/// All are 401 (`WWW-Authenticate: Bearer error="invalid_token"`, or a bare `Bearer` for ``missing``,
/// RFC 6750 §3.1) but ``insufficientScope`` (403, `error="insufficient_scope"`) and ``issuerUnavailable``
/// (503: the issuer's keys cannot be read now, which is not the client's fault).
public enum TokenError: Error, Equatable, CustomStringConvertible {
    case missing
    case malformed
    case unsupportedAlgorithm
    case badSignature
    case expired
    case notYetValid
    case wrongAudience
    case wrongIssuer
    /// The token names an issuer (`iss`) other than the one `serve --issuer` accepts, which it names.
    case issuerMismatch(expected: String)
    /// The token's header carries `crit`: extensions CareGate does not understand (RFC 7515 §4.1.11).
    case unsupportedHeader
    case noPatient
    /// The token names a key (`kid`) that its issuer does not publish.
    case unknownKey
    /// An issuer's token whose scopes do not grant what the request does.
    case insufficientScope
    /// The issuer's keys cannot be fetched now.
    case issuerUnavailable

    public var description: String {
        switch self {
        case .missing: return "an Authorization: Bearer token is required"
        case .malformed: return "the token is not a well-formed JWT"
        case .unsupportedAlgorithm: return "the token's algorithm is not accepted"
        case .badSignature: return "the token's signature does not verify"
        case .expired: return "the token has expired"
        case .notYetValid: return "the token is not valid yet"
        case .wrongAudience: return "the token is for another audience"
        case .wrongIssuer: return "the token is from another issuer"
        case .issuerMismatch(let expected):
            return "the token's issuer (iss) is not \(expected), the issuer this server accepts; issuers are compared exactly, so a trailing slash or another case makes another issuer"
        case .unsupportedHeader: return "the token's header names critical extensions (crit), which are not accepted"
        case .noPatient: return "the token names no patient"
        case .unknownKey: return "the token's signing key is not known"
        case .insufficientScope: return "the token's scopes do not grant this request"
        case .issuerUnavailable: return "the token's issuer cannot be reached; try again later"
        }
    }
}

/// Checks tokens signed by the server's key: ES256 only (`none`, HS256 and the rest are refused before
/// anything else is read; `SignedToken` says the order), a signature that verifies with that key, not
/// expired (60 s of clock skew allowed), the expected audience and issuer, and a patient.
public struct TokenVerifier: Sendable {
    public let key: P256.Signing.PublicKey
    public let audience: String
    /// Tokens longer than this are refused unread.
    public static let maximumLength = SignedToken.maximumLength
    static let clockSkew: TimeInterval = 60

    public init(key: P256.Signing.PublicKey, audience: String = PatientToken.defaultAudience) {
        self.key = key
        self.audience = audience
    }

    /// The verified token, from synchronous code; async code calls ``verifyAsync(_:now:)``.
    public func verify(_ token: String, now: Date = Date()) throws(TokenError) -> VerifiedToken {
        do {
            return try waitForTask { try await verifyAsync(token, now: now) }
        } catch let error as TokenError {
            throw error
        } catch {
            throw .badSignature
        }
    }

    public func verifyAsync(_ token: String, now: Date = Date()) async throws(TokenError) -> VerifiedToken {
        // One key: the collection holds it alone, so whatever `kid` says, no other key is tried.
        _ = try SignedToken.header(of: token, accepting: ["ES256"])
        let keys = JWTKeyCollection()
        guard let verifying = try? ES256PublicKey(backing: key) else { throw .badSignature }
        await keys.add(ecdsa: verifying)
        let claims = try await SignedToken.verify(token, as: PatientToken.Claims.self, with: keys)
        let time = now.timeIntervalSince1970
        guard let exp = claims.exp, exp.isFinite else { throw .expired }
        guard time < exp + Self.clockSkew else { throw .expired }
        if let nbf = claims.nbf, time + Self.clockSkew < nbf { throw .notYetValid }
        guard claims.aud?.contains(audience) == true else { throw .wrongAudience }
        guard claims.iss == PatientToken.issuer else { throw .wrongIssuer }
        // An operator's token opens the operator page only, never a patient's data.
        guard claims.role == nil else { throw .wrongAudience }
        guard let patient = claims.patient, !patient.isEmpty, patient.utf8.count <= 256 else { throw .noPatient }
        return VerifiedToken(subject: claims.sub ?? patient, patientID: patient, expires: Date(timeIntervalSince1970: exp))
    }
}
