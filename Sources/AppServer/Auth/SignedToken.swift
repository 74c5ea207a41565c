import Foundation
import JWTKit

/// CareGate's rules around jwt-kit, for every token the app server reads or signs: jwt-kit parses,
/// encodes, signs and checks signatures; these rules decide which key may check which token.
///
/// What jwt-kit alone would get wrong, and these rules do not: a ``JWTKeyCollection`` verifies with its
/// default key when the header's `kid` is unknown, verifies with the key's own algorithm whatever the
/// header's `alg` says, and ignores `crit`. So a token is read in this order, and refused at the first
/// rule it breaks:
///
/// 1. at most ``maximumLength`` bytes, three parts that jwt-kit can parse (``TokenError/malformed``);
/// 2. its `alg` one the caller accepts (``TokenError/unsupportedAlgorithm``: `none`, `HS256` and the
///    rest are refused before any key is looked up);
/// 3. no `crit` header (RFC 7515 §4.1.11: extensions a verifier does not understand must not be
///    ignored; ``TokenError/unsupportedHeader``);
/// 4. a `kid`, when present, that is 1 to 256 bytes (``TokenError/malformed``);
/// 5. the caller then picks the one key that `kid` and `alg` name (``IssuerSigningKey/fits(_:)``) and
///    ``verify(_:as:with:)`` checks the signature with that key alone, as `alg` (a collection of one key
///    and one algorithm, so that jwt-kit has nothing to fall back to).
enum SignedToken {
    /// Tokens longer than this are refused unread.
    static let maximumLength = 8_192

    /// The header fields the rules read, nothing verified.
    struct Header: Sendable, Equatable {
        /// `alg`, already checked to be one the caller accepts.
        var algorithm: String
        var keyID: String?
    }

    /// A payload that reads nothing: parsing the header through jwt-kit without decoding claims.
    private struct Unread: JWTPayload {
        init(from decoder: any Decoder) throws {}
        func encode(to encoder: any Encoder) throws {}
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// The header of `token` when rules 1 to 4 hold for it, with `alg` among `accepted`.
    static func header(of token: String, accepting accepted: Set<String>) throws(TokenError) -> Header {
        guard token.utf8.count <= maximumLength else { throw .malformed }
        let parsed: JWTHeader
        do {
            parsed = try DefaultJWTParser().parse(Data(token.utf8), as: Unread.self).header
        } catch {
            throw .malformed
        }
        guard let algorithm = parsed.fields["alg"]?.asString, accepted.contains(algorithm) else { throw .unsupportedAlgorithm }
        guard parsed.fields["crit"] == nil else { throw .unsupportedHeader }
        var keyID: String?
        if let field = parsed.fields["kid"] {
            guard let kid = field.asString, (1...256).contains(kid.utf8.count) else { throw .malformed }
            keyID = kid
        }
        return Header(algorithm: algorithm, keyID: keyID)
    }

    /// The claims of `token`, unverified: only to choose which verifier checks it.
    static func unverifiedClaims<Claims: JWTPayload>(of token: String, as type: Claims.Type) -> Claims? {
        guard token.utf8.count <= maximumLength else { return nil }
        return try? DefaultJWTParser().parse(Data(token.utf8), as: Claims.self).payload
    }

    /// The claims of `token` once its signature verifies with `keys` (a collection of the one key, under
    /// the one algorithm, that ``header(of:accepting:)`` and the caller chose). The claims' own
    /// `verify(using:)` runs too; CareGate's claim types check nothing there and leave it to their caller,
    /// which says which claim is wrong.
    static func verify<Claims: JWTPayload>(_ token: String, as type: Claims.Type, with keys: JWTKeyCollection) async throws(TokenError) -> Claims {
        do {
            return try await keys.verify(token, as: Claims.self)
        } catch let error as JWTError where error.errorType == .malformedToken {
            throw .malformed
        } catch {
            // A signature that does not verify, or cannot be one for this key (the wrong length).
            throw .badSignature
        }
    }

    /// `claims` signed by the one key of `keys`, with `typ: JWT` and `kid` in the header.
    static func sign(_ claims: some JWTPayload, with keys: JWTKeyCollection, keyID: String?) async throws -> String {
        var header: JWTHeader = ["typ": .string("JWT")]
        if let keyID { header.fields["kid"] = .string(keyID) }
        return try await keys.sign(claims, header: header)
    }
}
