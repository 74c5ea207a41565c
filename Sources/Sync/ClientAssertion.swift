import Crypto
import FHIRCore
import Foundation
import JWTKit

/// The JWT client assertion of SMART Backend Services (RFC 7523; SMART App Launch 2.x, Backend Services
/// §"Authenticating to the Token endpoint"), signed by jwt-kit: CareGate writes no JWT of its own.
extension SMARTBackendServices {
    /// The claims: `iss` and `sub` the client, `aud` the token endpoint, a unique `jti`, and five
    /// minutes of life (`exp`).
    struct AssertionClaims: JWTPayload {
        var iss: String
        var sub: String
        var aud: String
        var jti: String
        var exp: Int

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// The signed assertion for the token endpoint `audience`, from synchronous code (the token exchange).
    func assertion(audience: String, now: Date = Date()) throws -> String {
        try waitForTask { try await self.signedAssertion(audience: audience, now: now) }
    }

    /// The signed assertion for the token endpoint `audience`: ES384 with a P-384 key, RS384 with an RSA
    /// key, the header naming `typ: JWT` and the key's `kid` when one is configured.
    func signedAssertion(audience: String, now: Date = Date()) async throws -> String {
        let keys = JWTKeyCollection()
        switch key {
        case .es384(let key): await keys.add(ecdsa: try ES384PrivateKey(backing: key))
        case .rs384(let key): await keys.add(rsa: try JWTKit.Insecure.RSA.PrivateKey(backing: key), digestAlgorithm: .sha384)
        }
        var header: JWTHeader = ["typ": .string("JWT")]
        if let keyID { header.fields["kid"] = .string(keyID) }
        let claims = AssertionClaims(
            iss: clientID, sub: clientID, aud: audience, jti: UUID().uuidString.lowercased(), exp: Int(now.timeIntervalSince1970) + 300)
        return try await keys.sign(claims, header: header)
    }
}
