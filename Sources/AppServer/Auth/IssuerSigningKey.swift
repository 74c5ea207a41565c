import Foundation
import JWTKit

/// The JWS algorithms accepted in an issuer's tokens (RFC 7518 §3): RSA PKCS#1 v1.5 and ECDSA with
/// SHA-2. `none`, the HMAC family (HS256...: a public key used as a shared secret would verify anything
/// its holder signs) and every other name are refused before a key is looked up.
public enum JWSAlgorithm: String, Sendable, CaseIterable {
    case rs256 = "RS256", rs384 = "RS384", rs512 = "RS512"
    case es256 = "ES256", es384 = "ES384", es512 = "ES512"

    static let names = Set(allCases.map(\.rawValue))
}

/// One public signing key of an issuer's JWK Set (RFC 7517), as jwt-kit reads it, usable with the
/// algorithms its type and curve allow (and only the one it names in `alg`, when it names one).
struct IssuerSigningKey: Sendable {
    enum Material: Sendable {
        case rsa(JWTKit.Insecure.RSA.PublicKey)
        case p256(ES256PublicKey)
        case p384(ES384PublicKey)
        case p521(ES512PublicKey)
    }

    let keyID: String?
    let algorithm: String?
    let material: Material

    /// RSA moduli from 2048 to 8192 bits: smaller ones are breakable (jwt-kit refuses them too), larger
    /// ones a cost anyone could impose.
    static let rsaBits = 2048...8192

    /// Whether this key may verify a signature made with `algorithm`.
    func fits(_ algorithm: JWSAlgorithm) -> Bool {
        if let named = self.algorithm, named != algorithm.rawValue { return false }
        switch (material, algorithm) {
        case (.rsa, .rs256), (.rsa, .rs384), (.rsa, .rs512), (.p256, .es256), (.p384, .es384), (.p521, .es512): return true
        default: return false
        }
    }

    /// A jwt-kit key collection holding only this key, verifying only as `algorithm` (which it fits).
    func collection(for algorithm: JWSAlgorithm) async -> JWTKeyCollection {
        let keys = JWTKeyCollection()
        switch (material, algorithm) {
        case (.rsa(let key), .rs384): await keys.add(rsa: key, digestAlgorithm: .sha384)
        case (.rsa(let key), .rs512): await keys.add(rsa: key, digestAlgorithm: .sha512)
        case (.rsa(let key), _): await keys.add(rsa: key, digestAlgorithm: .sha256)
        case (.p256(let key), _): await keys.add(ecdsa: key)
        case (.p384(let key), _): await keys.add(ecdsa: key)
        case (.p521(let key), _): await keys.add(ecdsa: key)
        }
        return keys
    }

    /// The key `entry` describes, or nil when it is not a public signing key CareGate can use (an
    /// encryption key, a symmetric or private key, an unknown type, algorithm or curve, a weak RSA key).
    init?(_ entry: JWKSetEntry) {
        guard entry.use == nil || entry.use == "sig", let jwk = entry.key, jwk.privateExponent == nil else { return nil }
        if let alg = jwk.algorithm?.rawValue, !JWSAlgorithm.names.contains(alg) { return nil }
        keyID = jwk.keyIdentifier?.string
        algorithm = jwk.algorithm?.rawValue
        switch jwk.keyType {
        case .rsa:
            // Bounded before jwt-kit reads them: base64url of 8192 bits (and a sign byte), of 8 bytes.
            guard let n = jwk.modulus, let e = jwk.exponent, n.utf8.count <= 1_368, (1...11).contains(e.utf8.count),
                  let key = try? JWTKit.Insecure.RSA.PublicKey(modulus: n, exponent: e),
                  let modulus = try? key.getKeyPrimitives().modulus, Self.rsaBits.contains(Self.bitLength(modulus))
            else { return nil }
            material = .rsa(key)
        case .ecdsa:
            // RFC 7518 §6.2.1.2: each coordinate is the full length of the curve's field (32, 48 or 66
            // bytes: 43, 64 or 88 base64url characters), no shorter.
            guard let x = jwk.x, let y = jwk.y, x.utf8.count == y.utf8.count else { return nil }
            switch (jwk.curve?.rawValue, x.utf8.count) {
            case ("P-256", 43): guard let key = try? ES256PublicKey(parameters: (x, y)) else { return nil }; material = .p256(key)
            case ("P-384", 64): guard let key = try? ES384PublicKey(parameters: (x, y)) else { return nil }; material = .p384(key)
            case ("P-521", 88): guard let key = try? ES512PublicKey(parameters: (x, y)) else { return nil }; material = .p521(key)
            default: return nil
            }
        default:
            return nil
        }
    }

    /// The bit length of a big-endian unsigned integer.
    static func bitLength(_ bytes: Data) -> Int {
        guard let first = bytes.firstIndex(where: { $0 != 0 }) else { return 0 }
        return (bytes.endIndex - first) * 8 - bytes[first].leadingZeroBitCount
    }
}

/// One entry of a JWK Set: jwt-kit's ``JWK`` when it can read it, and `use`, which it does not. An entry
/// it cannot read (an unknown `kty`, `alg` or curve) is nil rather than an error, so that one odd key
/// does not spoil the set.
struct JWKSetEntry: Decodable, Sendable {
    var use: String?
    var key: JWK?

    private enum CodingKeys: String, CodingKey { case use }

    init(from decoder: any Decoder) throws {
        do {
            use = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .use)
        } catch {
            use = ""  // not a string: neither absent nor "sig", so the key is not used
        }
        key = try? JWK(from: decoder)
    }
}

/// A JWK Set as JSON carries it (RFC 7517 §5).
struct JWKSetDocument: Decodable, Sendable {
    var keys: [JWKSetEntry]
}
