@preconcurrency import Crypto
import Foundation
@preconcurrency import _CryptoExtras

/// The JWS algorithms accepted in an issuer's tokens (RFC 7518 §3): RSA PKCS#1 v1.5 and ECDSA with
/// SHA-2. `none`, the HMAC family (HS256...: a public key used as a shared secret would verify anything
/// its holder signs) and every other name are refused before a key is looked up.
public enum JWSAlgorithm: String, Sendable, CaseIterable {
    case rs256 = "RS256", rs384 = "RS384", rs512 = "RS512"
    case es256 = "ES256", es384 = "ES384", es512 = "ES512"
}

/// One public signing key of an issuer's JWK Set (RFC 7517), usable with the algorithms its type and
/// curve allow (and only the one it names in `alg`, when it names one).
struct JSONWebKey: Sendable {
    enum Material: Sendable {
        case rsa(_RSA.Signing.PublicKey)
        case p256(P256.Signing.PublicKey)
        case p384(P384.Signing.PublicKey)
        case p521(P521.Signing.PublicKey)
    }

    let keyID: String?
    let algorithm: String?
    let material: Material

    /// RSA moduli from 2048 to 8192 bits; smaller ones are breakable, larger ones a cost anyone could impose.
    static let rsaBits = 2048...8192

    /// Whether this key may verify a signature made with `algorithm`.
    func fits(_ algorithm: JWSAlgorithm) -> Bool {
        if let named = self.algorithm, named != algorithm.rawValue { return false }
        switch (material, algorithm) {
        case (.rsa, .rs256), (.rsa, .rs384), (.rsa, .rs512), (.p256, .es256), (.p384, .es384), (.p521, .es512): return true
        default: return false
        }
    }

    /// Whether `signature` (the JWS's third part, decoded) signs `input` under `algorithm` with this key.
    func isValidSignature(_ signature: Data, for input: Data, algorithm: JWSAlgorithm) -> Bool {
        guard fits(algorithm) else { return false }
        switch material {
        case .rsa(let key):
            // RFC 7518 §3.3: the signature is exactly as long as the modulus.
            guard signature.count * 8 == key.keySizeInBits else { return false }
            let rsaSignature = _RSA.Signing.RSASignature(rawRepresentation: signature)
            switch algorithm {
            case .rs256: return key.isValidSignature(rsaSignature, for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5)
            case .rs384: return key.isValidSignature(rsaSignature, for: SHA384.hash(data: input), padding: .insecurePKCS1v1_5)
            case .rs512: return key.isValidSignature(rsaSignature, for: SHA512.hash(data: input), padding: .insecurePKCS1v1_5)
            default: return false
            }
        case .p256(let key):
            guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(ecdsa, for: input)
        case .p384(let key):
            guard let ecdsa = try? P384.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(ecdsa, for: input)
        case .p521(let key):
            guard let ecdsa = try? P521.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(ecdsa, for: input)
        }
    }

    /// A JWK as JSON carries it; every member optional, so that one odd key does not spoil the set.
    struct Document: Decodable {
        var kty: String?
        var use: String?
        var alg: String?
        var kid: String?
        var crv: String?
        var n: String?
        var e: String?
        var x: String?
        var y: String?
        var d: String?
    }

    /// The key `document` describes, or nil when it is not a public signing key CareGate can use (an
    /// encryption key, a symmetric or private key, an unknown type or curve, a weak RSA key).
    init?(_ document: Document) {
        guard document.use == nil || document.use == "sig", document.d == nil else { return nil }
        if let alg = document.alg, JWSAlgorithm(rawValue: alg) == nil { return nil }
        keyID = document.kid
        algorithm = document.alg
        switch document.kty {
        case "RSA":
            guard let n = document.n.flatMap({ Base64URL.decode(Substring($0)) }), let e = document.e.flatMap({ Base64URL.decode(Substring($0)) }),
                  n.count <= Self.rsaBits.upperBound / 8 + 1, !e.isEmpty, e.count <= 8,
                  let key = try? _RSA.Signing.PublicKey(n: n, e: e), Self.rsaBits.contains(key.keySizeInBits)
            else { return nil }
            material = .rsa(key)
        case "EC":
            guard let x = document.x.flatMap({ Base64URL.decode(Substring($0)) }), let y = document.y.flatMap({ Base64URL.decode(Substring($0)) }),
                  x.count == y.count
            else { return nil }
            // RFC 7518 §6.2.1.2: the coordinates are the full length of the curve's field, no shorter.
            switch (document.crv, x.count) {
            case ("P-256", 32): guard let key = try? P256.Signing.PublicKey(rawRepresentation: x + y) else { return nil }; material = .p256(key)
            case ("P-384", 48): guard let key = try? P384.Signing.PublicKey(rawRepresentation: x + y) else { return nil }; material = .p384(key)
            case ("P-521", 66): guard let key = try? P521.Signing.PublicKey(rawRepresentation: x + y) else { return nil }; material = .p521(key)
            default: return nil
            }
        default:
            return nil
        }
    }
}

/// A JWK Set as JSON carries it (RFC 7517 §5).
struct JSONWebKeySet: Decodable {
    var keys: [JSONWebKey.Document]
}
