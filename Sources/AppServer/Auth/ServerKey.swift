@preconcurrency import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The app server's signing key: an ES256 (P-256) private key in a PEM file that only its owner may read.
///
/// `caregate serve --key FILE` and `caregate patients token --key FILE` are given the same file; the first
/// of them to run makes it (mode 0600) when it is missing. A file that others may read is refused: a key
/// anyone on the machine can read lets anyone mint tokens for every patient.
public struct ServerKey: Sendable {
    public let privateKey: P256.Signing.PrivateKey

    public init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
    }

    public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }

    /// A short, stable name of the key (`kid`): the start of the SHA-256 of its public point.
    public var keyID: String {
        Base64URL.encode(Array(SHA256.hash(data: publicKey.x963Representation)).prefix(12))
    }

    /// Reads the key at `path`, or makes one there (0600) when no file exists.
    public static func loadOrCreate(path: String) throws -> ServerKey {
        if FileManager.default.fileExists(atPath: path) { return try load(path: path) }
        let key = ServerKey(privateKey: P256.Signing.PrivateKey())
        let pem = Data((key.privateKey.pemRepresentation + "\n").utf8)
        // O_EXCL: never write over a file another process made meanwhile; 0600 from the start.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        if descriptor < 0 {
            if errno == EEXIST { return try load(path: path) }
            throw ServerKeyError.cannotWrite(path: path, reason: String(cString: strerror(errno)))
        }
        let written = pem.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let closed = close(descriptor)
        guard written == pem.count, closed == 0 else {
            unlink(path)
            throw ServerKeyError.cannotWrite(path: path, reason: "short write")
        }
        return key
    }

    /// Reads the key at `path`; refuses a file that group or others may read or write.
    public static func load(path: String) throws -> ServerKey {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw ServerKeyError.unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        guard status.st_mode & 0o077 == 0 else {
            throw ServerKeyError.tooOpen(path: path, mode: String(status.st_mode & 0o777, radix: 8))
        }
        guard status.st_size <= 16_384, let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ServerKeyError.unreadable(path: path, reason: "not a PEM text file")
        }
        do {
            return ServerKey(privateKey: try P256.Signing.PrivateKey(pemRepresentation: text))
        } catch {
            throw ServerKeyError.unreadable(path: path, reason: "not a P-256 private key in PEM")
        }
    }
}

/// Why the server's key file cannot be used.
public enum ServerKeyError: Error, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case cannotWrite(path: String, reason: String)
    case tooOpen(path: String, mode: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): return "cannot read the key file \(path): \(reason)"
        case .cannotWrite(let path, let reason): return "cannot make the key file \(path): \(reason)"
        case .tooOpen(let path, let mode):
            return "the key file \(path) may be read by others (mode \(mode)); make it readable by its owner only (chmod 600)"
        }
    }
}
