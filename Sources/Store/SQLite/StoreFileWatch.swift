import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether a store's file can still take writes, found without writing to it: what a server's readiness
/// check asks (`GET /health/ready`), every time, in a few system calls.
///
/// It remembers which file it was made for (device and inode): a store file removed, or replaced by
/// another (a restore copied over a live store), is a problem even though the open connections still
/// read the old one. A store file or WAL file that may not be written (its permissions; a read-only
/// mount) is one too; for root, whom permissions do not stop, a file with no write permission at all
/// counts as read-only, since that is what whoever removed it meant. The messages name no path: a
/// health answer is open to all.
public struct StoreFileWatch: Sendable {
    /// The store file.
    public let path: String
    private let identity: FileIdentity?

    private struct FileIdentity: Equatable, Sendable {
        let device: UInt64
        let inode: UInt64
    }

    /// Watches the store file at `path` as it is now.
    public init(path: String) {
        self.path = path
        identity = Self.identity(of: path)
    }

    /// Why the store file could not take a write now; nil when it could.
    public func problem() -> String? {
        guard let now = Self.identity(of: path) else { return "the store file is missing" }
        if let identity, identity != now { return "the store file was replaced since the server opened it" }
        for file in [path, path + "-wal"] where FileManager.default.fileExists(atPath: file) {
            if access(file, W_OK) != 0 { return errno == EROFS ? "the store is on a read-only file system" : "the store file is not writable" }
            if geteuid() == 0, let mode = Self.mode(of: file), mode & 0o222 == 0 { return "the store file is read-only (no write permission)" }
        }
        return nil
    }

    private static func identity(of path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    private static func mode(of path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode
    }
}
