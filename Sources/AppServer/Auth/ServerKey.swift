@preconcurrency import Crypto
import FileSafety
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The app server's signing key: an ES256 (P-256) private key in a PEM file that only its owner may read.
///
/// `caregate serve --key FILE` and `caregate patients token --key FILE` are given the same file; the first
/// of them to run makes it (mode 0600) when it is missing. A key file that others may read, that another
/// user owns, or that sits in a folder others may write is refused (``SecretFile`` has the rules): a key
/// anyone else on the machine can read or replace lets them mint tokens for every patient.
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

    /// The largest key file read: a P-256 key in PEM is about 250 bytes.
    static let largestFile = 16_384

    /// Reads the key at `path`, or makes one there (0600) when no file exists, in a folder that passes
    /// the same checks as a key read (``SecretFile``).
    public static func loadOrCreate(path: String) throws -> ServerKey {
        var status = stat()
        // lstat: a symbolic link, even one to nowhere, is read (and checked) rather than written through.
        if lstat(path, &status) == 0 { return try load(path: path) }
        do throws(SecretFileError) {
            try SecretFile.checkFolder(forNew: path)
        } catch {
            throw ServerKeyError(error)
        }
        let key = ServerKey(privateKey: P256.Signing.PrivateKey())
        let pem = Data((key.privateKey.pemRepresentation + "\n").utf8)
        // O_EXCL: never write over a file another process made meanwhile; 0600 from the start.
        let descriptor: Int32
        do throws(PrivateFileError) {
            descriptor = try PrivateFiles.create(path)
        } catch {
            if error.code == EEXIST { return try load(path: path) }
            throw ServerKeyError.cannotWrite(path: path, reason: error.reason)
        }
        let written = pem.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor)
        let closed = close(descriptor)
        guard written == pem.count, synced == 0, closed == 0 else {
            unlink(path)
            throw ServerKeyError.cannotWrite(path: path, reason: "short write")
        }
        return key
    }

    /// Reads the key at `path`. Refuses a file that group or others may read or write, one owned by
    /// another user than the one running CareGate (or root), and one in a folder, or under one, that
    /// others may write (sticky folders such as /tmp aside): see ``SecretFile``. Any of those would let
    /// another user of the machine read or replace the key, and so mint tokens for every patient.
    public static func load(path: String) throws -> ServerKey {
        let bytes: Data
        do throws(SecretFileError) {
            bytes = try SecretFile.read(path, largest: largestFile)
        } catch {
            throw ServerKeyError(error)
        }
        guard let text = String(data: bytes, encoding: .utf8) else {
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
    /// The file belongs to `owner`, not to the user running CareGate (`user`) or root.
    case notOwned(path: String, owner: String, user: String)
    /// `folder`, the key's or one above it, lets others replace the key.
    case unsafeFolder(path: String, folder: String, reason: String)

    /// The key file's check failing, as this key's error.
    init(_ error: SecretFileError) {
        switch error {
        case .unreadable(let path, let reason): self = .unreadable(path: path, reason: reason)
        case .notAFile(let path): self = .unreadable(path: path, reason: "not a regular file")
        case .tooLarge(let path, _): self = .unreadable(path: path, reason: "not a PEM text file")
        case .ownedByOther(let path, let owner, let user): self = .notOwned(path: path, owner: owner, user: user)
        case .tooOpen(let path, let mode): self = .tooOpen(path: path, mode: mode)
        case .unsafeFolder(let path, let folder, let reason): self = .unsafeFolder(path: path, folder: folder, reason: reason)
        }
    }

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): return "cannot read the key file \(path): \(reason)"
        case .cannotWrite(let path, let reason): return "cannot make the key file \(path): \(reason)"
        case .tooOpen(let path, let mode):
            return "the key file \(path) may be read by others (mode \(mode)); make it readable by its owner only (chmod 600)"
        case .notOwned(let path, let owner, let user):
            return "the key file \(path) belongs to \(owner), not to \(SecretFileError.owners(user)): whoever owns it can know the key and mint tokens for every patient; make a new key as \(user) (remove the file first), or chown it if it is yours"
        case .unsafeFolder(let path, let folder, let reason):
            return "the key file \(path) is in a folder others control, \(folder): \(reason)"
        }
    }
}
