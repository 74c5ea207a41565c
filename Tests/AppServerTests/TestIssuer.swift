import AppServer
@preconcurrency import Crypto
import Foundation
import Synchronization
@preconcurrency import _CryptoExtras

/// A SMART issuer of the test's own: an RSA key (`rsa-1`), a P-256 key (`ec-256`) and a P-384 key
/// (`ec-384`), their JWK Set and discovery document, and tokens signed with any of them.
struct TestIssuer: Sendable {
    static let audience = "https://caregate.test/carekit"
    static let readWrite = "launch/patient openid fhirUser patient/*.rs patient/Observation.cu"

    let issuer: String
    let rsa: _RSA.Signing.PrivateKey
    let p256 = P256.Signing.PrivateKey()
    let p384 = P384.Signing.PrivateKey()

    init(issuer: String = "https://issuer.test/smart") throws {
        self.issuer = issuer
        rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
    }

    /// The JWK Set of `kids` (default: all three keys).
    func jwks(_ kids: [String] = ["rsa-1", "ec-256", "ec-384"]) throws -> Data {
        var keys: [[String: String]] = []
        for kid in kids {
            switch kid {
            case "rsa-1":
                let primitives = try rsa.publicKey.getKeyPrimitives()
                keys.append(["kty": "RSA", "kid": kid, "use": "sig", "n": Base64URLText.encode(primitives.modulus), "e": Base64URLText.encode(primitives.publicExponent)])
            case "ec-256":
                let raw = p256.publicKey.rawRepresentation
                keys.append(["kty": "EC", "kid": kid, "crv": "P-256", "x": Base64URLText.encode(raw.prefix(32)), "y": Base64URLText.encode(raw.suffix(32))])
            case "ec-384":
                let raw = p384.publicKey.rawRepresentation
                keys.append(["kty": "EC", "kid": kid, "crv": "P-384", "x": Base64URLText.encode(raw.prefix(48)), "y": Base64URLText.encode(raw.suffix(48))])
            default: break
            }
        }
        return try JSONSerialization.data(withJSONObject: ["keys": keys])
    }

    /// `.well-known/smart-configuration` naming `jwksURI`.
    func smartConfiguration(jwksURI: String) throws -> Data {
        try JSONSerialization.data(withJSONObject: [
            "issuer": issuer, "jwks_uri": jwksURI, "authorization_endpoint": issuer + "/authorize", "token_endpoint": issuer + "/token",
            "capabilities": ["launch-standalone", "context-standalone-patient", "permission-v2"],
        ])
    }

    /// The claims of a good token for FHIR patient `patient`, valid for an hour from `now`.
    func claims(patient: String? = "pat-1", scope: String = readWrite, now: Date = Date()) -> [String: Any] {
        var claims: [String: Any] = [
            "iss": issuer, "sub": "user-of-\(patient ?? "none")", "aud": [Self.audience, "https://other.test"], "scope": scope,
            "iat": Int(now.timeIntervalSince1970), "exp": Int(now.timeIntervalSince1970) + 3600, "jti": UUID().uuidString,
        ]
        claims["patient"] = patient
        return claims
    }

    /// A compact JWS of `claims` signed as `alg` with the key `kid` names (ES256 with `ec-256`, ES384 with
    /// `ec-384`, RS256/RS384 with `rsa-1`); `kid: nil` leaves it out of the header.
    func token(_ claims: [String: Any], alg: String = "RS256", kid: String? = "rsa-1", signingKid: String? = nil) throws -> String {
        var header: [String: Any] = ["alg": alg, "typ": "JWT"]
        header["kid"] = kid
        let input = Base64URLText.encode(try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])) + "."
            + Base64URLText.encode(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        let data = Data(input.utf8)
        let signature: Data
        switch (alg, signingKid ?? kid ?? "rsa-1") {
        case ("RS256", _): signature = try rsa.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation
        case ("RS384", _): signature = try rsa.signature(for: SHA384.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation
        case ("ES256", _): signature = try p256.signature(for: data).rawRepresentation
        case ("ES384", _): signature = try p384.signature(for: data).rawRepresentation
        default: signature = Data()
        }
        return input + "." + Base64URLText.encode(signature)
    }

    /// `alg: none` over good claims, with an empty signature.
    func unsigned(_ claims: [String: Any]) throws -> String {
        Base64URLText.encode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8)) + "."
            + Base64URLText.encode(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])) + "."
    }

    /// HS256 with the RSA public key's PEM as the HMAC secret: the classic algorithm confusion.
    func hmacWithPublicKey(_ claims: [String: Any], kid: String = "rsa-1") throws -> String {
        let input = Base64URLText.encode(Data(#"{"alg":"HS256","kid":"\#(kid)","typ":"JWT"}"#.utf8)) + "."
            + Base64URLText.encode(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data(rsa.publicKey.pemRepresentation.utf8)))
        return input + "." + Base64URLText.encode(Data(mac))
    }

    /// The tokens an issuer-accepting server must refuse, by name, each for Patient/pat-1 (in a store
    /// that has it), with the status expected. `other` is an issuer of the same name with other keys.
    func badTokens(other: TestIssuer) throws -> [(name: String, token: String, status: Int)] {
        let good = claims()
        var expired = good
        expired["exp"] = Int(Date().timeIntervalSince1970) - 3600
        var otherAudience = good
        otherAudience["aud"] = "https://another-server.test"
        var noPatient = good
        noPatient["patient"] = nil
        var readOnly = good
        readOnly["scope"] = "patient/Observation.rs patient/Patient.read user/*.* launch/patient"
        var wrongIssuer = good
        wrongIssuer["iss"] = issuer + "/other"
        var notYet = good
        notYet["nbf"] = Int(Date().timeIntervalSince1970) + 3600
        return [
            ("issuer: expired", try token(expired), 401),
            ("issuer: not yet valid", try token(notYet), 401),
            ("issuer: other audience", try token(otherAudience), 401),
            ("issuer: wrong issuer", try token(wrongIssuer), 401),
            ("issuer: forged (other key, same kid)", try other.token(good), 401),
            ("issuer: forged ES256 (other key, same kid)", try other.token(good, alg: "ES256", kid: "ec-256"), 401),
            ("issuer: unknown kid", try token(good, kid: "rsa-9", signingKid: "rsa-1"), 401),
            ("issuer: alg none", try unsigned(good), 401),
            ("issuer: HS256 with the public key as secret", try hmacWithPublicKey(good), 401),
            ("issuer: RS256 header on an ES256 key", try token(good, alg: "RS256", kid: "ec-256"), 401),
            ("issuer: no patient claim", try token(noPatient), 401),
            ("issuer: patient claim not a FHIR id", try token(claims(patient: "Patient/pat-1")), 401),
            ("issuer: no patient-level read scope", try token(readOnly), 403),
        ]
    }
}

extension TestIssuer {
    /// A verifier of this issuer's tokens for ``audience``, reading its documents from `documents`.
    func verifier(_ documents: IssuerDocuments) throws -> IssuerTokenVerifier {
        IssuerTokenVerifier(try IssuerConfiguration(issuer: issuer, audience: Self.audience), fetch: documents.fetch)
    }
}

/// An issuer's documents served from memory (URL -> body), counting the fetches of each.
final class IssuerDocuments: Sendable {
    static let jwksURL = "https://issuer.test/smart/keys.json"
    static let smartURL = "https://issuer.test/smart/.well-known/smart-configuration"

    let documents: Mutex<[String: Data]>
    let fetches = Mutex<[String: Int]>([:])

    init(_ documents: [String: Data]) {
        self.documents = Mutex(documents)
    }

    /// `issuer`'s SMART configuration and JWK Set (all three keys), at ``smartURL`` and ``jwksURL``.
    convenience init(serving issuer: TestIssuer) throws {
        self.init([Self.smartURL: try issuer.smartConfiguration(jwksURI: Self.jwksURL), Self.jwksURL: try issuer.jwks()])
    }

    func count(_ url: String) -> Int { fetches.withLock { $0[url] ?? 0 } }

    func set(_ url: String, _ data: Data?) { documents.withLock { $0[url] = data } }

    var fetch: @Sendable (URL, Int, TimeInterval) async throws(IssuerError) -> Data {
        { url, limit, _ throws(IssuerError) in
            self.fetches.withLock { $0[url.absoluteString, default: 0] += 1 }
            guard let data = self.documents.withLock({ $0[url.absoluteString] }) else {
                throw IssuerError.unreachable(url: url.absoluteString, reason: "HTTP 404")
            }
            guard data.count <= limit else { throw IssuerError.tooLarge(url: url.absoluteString, limit: limit) }
            return data
        }
    }
}
