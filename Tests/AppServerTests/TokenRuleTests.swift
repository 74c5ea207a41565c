@testable import AppServer
@preconcurrency import Crypto
import Foundation
import JWTKit
import XCTest
@preconcurrency import _CryptoExtras

/// The rules CareGate keeps around jwt-kit (`SignedToken`), each where jwt-kit alone would decide
/// otherwise: jwt-kit verifies a token naming an unknown `kid` with its default key, verifies with the
/// key's algorithm whatever the header's `alg` says, and ignores `crit`. Where it helps, each test also
/// shows jwt-kit alone accepting the token, so that the rule is seen to be CareGate's.
final class TokenRuleTests: XCTestCase {
    private let jwksURL = IssuerDocuments.jwksURL
    private let smartURL = IssuerDocuments.smartURL

    /// A compact JWS of `header` and `claims`, signed by hand (jwt-kit would not sign these bad tokens):
    /// RS256 with the issuer's RSA key, ES256 with its P-256 key or `p256`.
    private func signed(_ header: [String: Any], _ claims: [String: Any], issuer: TestIssuer, p256: P256.Signing.PrivateKey? = nil) throws -> String {
        let input = Base64URLText.encode(try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])) + "."
            + Base64URLText.encode(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        let data = Data(input.utf8)
        let signature: Data
        if let p256 {
            signature = try p256.signature(for: data).rawRepresentation
        } else {
            signature = try issuer.rsa.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation
        }
        return input + "." + Base64URLText.encode(signature)
    }

    /// Claims jwt-kit can decode (for the contrast checks).
    private struct AnyClaims: JWTPayload {
        var iss: String?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// An unknown `kid` refetches the issuer's keys (once) and is refused: never verified with another key,
    /// though the set's only key signed it and jwt-kit would use that key as its default.
    func testAnUnknownKidRefetchesAndIsRefusedWhereJWTKitWouldUseItsDefaultKey() async throws {
        let issuer = try TestIssuer()
        let documents = try IssuerDocuments(serving: issuer)
        documents.set(jwksURL, try issuer.jwks(["rsa-1"]))
        let verifier = try issuer.verifier(documents)
        let start = Date()
        let unknown = try issuer.token(issuer.claims(now: start), kid: "rsa-9", signingKid: "rsa-1")
        do {
            _ = try await verifier.verify(unknown, access: .read, now: start)
            XCTFail("a token naming an unknown kid was accepted")
        } catch {
            XCTAssertEqual(error, .unknownKey)
        }
        // First fetch, then one refetch for the kid it lacked: the keys were asked for again, not guessed.
        _ = try await verifier.verify(try issuer.token(issuer.claims(now: start)), access: .read, now: start)
        XCTAssertEqual(documents.count(jwksURL), 1)
        do {
            _ = try await verifier.verify(unknown, access: .read, now: start.addingTimeInterval(61))
            XCTFail("a token naming an unknown kid was accepted after a refetch")
        } catch {
            XCTAssertEqual(error, .unknownKey)
        }
        XCTAssertEqual(documents.count(jwksURL), 2)

        // jwt-kit alone, with the same JWK Set: the unknown kid falls back to the default key, accepted.
        let plain = JWTKeyCollection()
        try await plain.add(jwksJSON: String(decoding: try issuer.jwks(["rsa-1"]), as: UTF8.self))
        let accepted = try await plain.verify(unknown, as: AnyClaims.self)
        XCTAssertEqual(accepted.iss, issuer.issuer)
    }

    /// A `crit` header is refused, for an issuer's token and for CareGate's own, though the signature
    /// verifies (jwt-kit alone accepts it).
    func testACritHeaderIsRefused() async throws {
        let issuer = try TestIssuer()
        let verifier = try issuer.verifier(try IssuerDocuments(serving: issuer))
        let claims = issuer.claims()
        let critical = try signed(["alg": "RS256", "kid": "rsa-1", "typ": "JWT", "crit": ["b64"], "b64": false], claims, issuer: issuer)
        do {
            _ = try await verifier.verify(critical, access: .read)
            XCTFail("a crit header was accepted")
        } catch {
            XCTAssertEqual(error, .unsupportedHeader)
            XCTAssertTrue(error.description.contains("crit"), error.description)
        }
        // The same header without crit verifies: the refusal is for crit alone.
        let plainHeader = try signed(["alg": "RS256", "kid": "rsa-1", "typ": "JWT"], claims, issuer: issuer)
        _ = try await verifier.verify(plainHeader, access: .read)

        // CareGate's own ES256 token with crit.
        let fixture = try AppServerFixture()
        let own: [String: Any] = [
            "iss": PatientToken.issuer, "sub": "Patient/pat-1", "patient": "Patient/pat-1", "aud": PatientToken.defaultAudience,
            "exp": Int(Date().timeIntervalSince1970) + 3600,
        ]
        let ownCritical = try signed(["alg": "ES256", "typ": "JWT", "crit": ["x-caregate"], "x-caregate": 1], own, issuer: issuer, p256: fixture.key.privateKey)
        XCTAssertThrowsError(try TokenVerifier(key: fixture.key.publicKey).verify(ownCritical)) { error in
            XCTAssertEqual(error as? TokenError, .unsupportedHeader)
        }
        let ownPlain = try signed(["alg": "ES256", "typ": "JWT"], own, issuer: issuer, p256: fixture.key.privateKey)
        XCTAssertEqual(try TokenVerifier(key: fixture.key.publicKey).verify(ownPlain).patientID, "Patient/pat-1")

        // jwt-kit alone: the crit token verifies.
        let plain = JWTKeyCollection()
        await plain.add(rsa: try JWTKit.Insecure.RSA.PublicKey(backing: issuer.rsa.publicKey), digestAlgorithm: .sha256)
        _ = try await plain.verify(critical, as: AnyClaims.self)
    }

    /// The header's `alg` must be one accepted before any key is looked up (no fetch at all), and must be
    /// the algorithm of the key `kid` names: an ES256 signature under an `ES384` header is refused, where
    /// jwt-kit alone verifies with the key's own algorithm and accepts it.
    func testTheHeadersAlgorithmIsCheckedBeforeAnyKeyAndAgainstTheKey() async throws {
        let issuer = try TestIssuer()
        let documents = try IssuerDocuments(serving: issuer)
        let verifier = try issuer.verifier(documents)
        for alg in ["HS256", "PS256", "none", "EdDSA", "es256"] {
            let token = try signed(["alg": alg, "kid": "rsa-1", "typ": "JWT"], issuer.claims(), issuer: issuer)
            do {
                _ = try await verifier.verify(token, access: .read)
                XCTFail("\(alg) accepted")
            } catch {
                XCTAssertEqual(error, .unsupportedAlgorithm, alg)
            }
        }
        XCTAssertEqual(documents.count(smartURL) + documents.count(jwksURL), 0, "no key was looked up for a refused algorithm")

        let mislabelled = try signed(["alg": "ES384", "kid": "ec-256", "typ": "JWT"], issuer.claims(), issuer: issuer, p256: issuer.p256)
        do {
            _ = try await verifier.verify(mislabelled, access: .read)
            XCTFail("an ES256 signature under an ES384 header was accepted")
        } catch {
            XCTAssertEqual(error, .unknownKey)
        }
        // jwt-kit alone, the key under its kid: it verifies as ES256 whatever the header says.
        let plain = JWTKeyCollection()
        await plain.add(ecdsa: try ES256PublicKey(backing: issuer.p256.publicKey), kid: "ec-256")
        _ = try await plain.verify(mislabelled, as: AnyClaims.self)
    }

    /// RSA keys under 2048 bits in a JWK Set are not used: a token signed by one is refused though the
    /// set names it, while the set's good keys stay usable.
    func testAWeakRSAKeyInTheSetIsNotUsed() async throws {
        let issuer = try TestIssuer()
        let weak = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        let primitives = try weak.publicKey.getKeyPrimitives()
        var set = try JSONSerialization.jsonObject(with: try issuer.jwks(["rsa-1"])) as? [String: Any] ?? [:]
        var keys = set["keys"] as? [[String: String]] ?? []
        keys.append(["kty": "RSA", "kid": "rsa-weak", "use": "sig", "n": Base64URLText.encode(primitives.modulus), "e": Base64URLText.encode(primitives.publicExponent)])
        set["keys"] = keys
        let documents = try IssuerDocuments(serving: issuer)
        documents.set(jwksURL, try JSONSerialization.data(withJSONObject: set))
        let verifier = try issuer.verifier(documents)
        let kept = try await verifier.refreshKeys()
        XCTAssertEqual(kept, 1, "only the 2048-bit key is kept")

        let header = Base64URLText.encode(Data(#"{"alg":"RS256","kid":"rsa-weak","typ":"JWT"}"#.utf8))
        let input = header + "." + Base64URLText.encode(try JSONSerialization.data(withJSONObject: issuer.claims()))
        let signature = try weak.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5).rawRepresentation
        do {
            _ = try await verifier.verify(input + "." + Base64URLText.encode(signature), access: .read)
            XCTFail("a token signed by a 1024-bit key was accepted")
        } catch {
            XCTAssertEqual(error, .unknownKey)
        }
        _ = try await verifier.verify(try issuer.token(issuer.claims()), access: .read)

        // Each bound of the key itself.
        let entry = { (n: Data) throws -> JWKSetEntry in
            try JSONDecoder().decode(JWKSetEntry.self, from: try JSONSerialization.data(withJSONObject: [
                "kty": "RSA", "n": Base64URLText.encode(n), "e": Base64URLText.encode(primitives.publicExponent),
            ]))
        }
        XCTAssertNil(IssuerSigningKey(try entry(primitives.modulus)), "1024 bits")
        XCTAssertNotNil(IssuerSigningKey(try entry(try issuer.rsa.publicKey.getKeyPrimitives().modulus)), "2048 bits")
        XCTAssertEqual(IssuerSigningKey.bitLength(Data([0, 0x01, 0xff])), 9)
    }

    /// An `iss` that differs from the configured issuer only by a trailing slash is another issuer (exact
    /// comparison, OpenID Connect Core §3.1.3.7, RFC 8414 §3.3): refused with an error naming the issuer
    /// accepted, before anything is fetched, not sent to CareGate's own verifier to fail on its algorithm.
    func testAnIssWithATrailingSlashIsRefusedNamingTheIssuer() async throws {
        let issuer = try TestIssuer()
        let documents = try IssuerDocuments(serving: issuer)
        let fixture = try AppServerFixture()
        let composite = CompositeTokenVerifier(own: TokenVerifier(key: fixture.key.publicKey), issuer: try issuer.verifier(documents))
        var claims = issuer.claims()
        claims["iss"] = issuer.issuer + "/"
        let trailingSlash = try issuer.token(claims)
        do {
            _ = try await composite.verify(trailingSlash, access: .read)
            XCTFail("a trailing-slash issuer was accepted")
        } catch {
            XCTAssertEqual(error, .issuerMismatch(expected: issuer.issuer))
            XCTAssertTrue(error.description.contains(issuer.issuer), error.description)
            XCTAssertTrue(error.description.contains("trailing slash"), error.description)
            XCTAssertFalse(error.description.contains("algorithm"), error.description)
        }
        XCTAssertEqual(documents.count(smartURL) + documents.count(jwksURL), 0)
        // The issuer's own name and CareGate's tokens still go through.
        let issuers = try await composite.verify(try issuer.token(issuer.claims()), access: .read)
        XCTAssertEqual(issuers.patientID, "Patient/pat-1")
        let own = try await composite.verify(try fixture.token(), access: .write)
        XCTAssertEqual(own.patientID, "Patient/pat-1")
    }

    /// CareGate's own tokens, signed through jwt-kit, carry the header they always did.
    func testCareGatesTokensNameES256TheirTypeAndKey() throws {
        let fixture = try AppServerFixture()
        let token = try fixture.token()
        let header = try DefaultJWTParser().parse(Data(token.utf8), as: AnyClaims.self).header
        XCTAssertEqual(header.fields.mapValues(\.asString), ["alg": "ES256", "typ": "JWT", "kid": fixture.key.keyID])
    }
}
