import Crypto
import Foundation
import JWTKit
@testable import Sync
import XCTest
import _CryptoExtras

/// The SMART Backend Services client assertion as jwt-kit signs it, read back by jwt-kit with the
/// client's public key (the live exchange with a token endpoint is `AuthorizationTests`), and the keys
/// a client may sign with.
final class ClientAssertionTests: XCTestCase {
    private struct Claims: JWTPayload {
        var iss: String
        var sub: String
        var aud: String
        var jti: String
        var exp: Int
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    private let endpoint = "https://ehr.test/token"

    func testAnES384AssertionNamesTheClientTheEndpointAndTheKey() async throws {
        let key = P384.Signing.PrivateKey()
        let client = SMARTBackendServices(base: URL(fileURLWithPath: "/"), clientID: "caregate-test", key: .es384(key), keyID: "key-1")
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        let assertion = try client.assertion(audience: endpoint, now: now)
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES384PublicKey(backing: key.publicKey))
        let claims = try await keys.verify(assertion, as: Claims.self)
        XCTAssertEqual([claims.iss, claims.sub, claims.aud], ["caregate-test", "caregate-test", endpoint])
        XCTAssertEqual(claims.exp, 1_750_000_300)
        XCTAssertFalse(claims.jti.isEmpty)
        let header = try DefaultJWTParser().parse(Data(assertion.utf8), as: Claims.self).header
        XCTAssertEqual(header.fields.mapValues(\.asString), ["alg": "ES384", "typ": "JWT", "kid": "key-1"])
        XCTAssertNotEqual(try client.assertion(audience: endpoint, now: now), assertion, "a new jti each time")
    }

    func testAnRS384AssertionVerifiesAndAWeakRSAKeyIsRefusedWhenRead() async throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let client = SMARTBackendServices(base: URL(fileURLWithPath: "/"), clientID: "caregate-test", key: try .pem(key.pemRepresentation, source: "key.pem"))
        let assertion = try await client.signedAssertion(audience: endpoint)
        let keys = JWTKeyCollection()
        await keys.add(rsa: try JWTKit.Insecure.RSA.PublicKey(backing: key.publicKey), digestAlgorithm: .sha384)
        _ = try await keys.verify(assertion, as: Claims.self)
        XCTAssertEqual(try DefaultJWTParser().parse(Data(assertion.utf8), as: Claims.self).header.fields["alg"]?.asString, "RS384")

        let weak = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        XCTAssertThrowsError(try SMARTBackendServices.Key.pem(weak.pemRepresentation, source: "weak.pem")) { error in
            XCTAssertEqual(error as? AuthorizationError, .unreadable(source: "weak.pem", reason: "the RSA key has 1024 bits; RS384 needs at least 2048"))
        }
    }
}
