import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Files and folders that only their owner may read: every file CareGate makes that holds patients'
/// data or guards it (the store, its lock files, the audit trail, exports, reports, keys) is made here.
///
/// A mode given to `open(2)` or `mkdir(2)` only loses bits to the umask, so 0600 and 0700 never come out
/// wider; but a umask such as 0277 narrows them, which would leave a lock file its own maker cannot open
/// again. So a file or folder made here gets its exact mode with `fchmod`/`chmod` right after it is made,
/// before anything is written to it. A file that already exists keeps its mode (see ``widerThanOwner(_:)``
/// for reporting one that others may read). The last component of a path is never followed when it is a
/// symbolic link (`O_NOFOLLOW`): someone who can write the folder could otherwise point it at another file.
///
/// ```swift
/// let descriptor = try PrivateFiles.open("caregate.sqlite-lock")      // made 0600 when missing
/// try PrivateFiles.write(Data(report.utf8), to: "report.json")      // 0600, replaced atomically
/// try PrivateFiles.makeFolder("exports")                            // 0700 when made
/// ```
public enum PrivateFiles {
    /// The mode of every file CareGate makes: read and write for its owner only.
    public static let fileMode: mode_t = 0o600
    /// The mode of every folder CareGate makes.
    public static let folderMode: mode_t = 0o700

    /// Opens `path` with `flags` (`O_RDWR` by default), making it with mode 0600 when it is missing.
    /// Returns the descriptor, close-on-exec; the caller closes it.
    /// - Throws: ``PrivateFileError`` naming the path and the system's reason (a symbolic link is refused).
    public static func open(_ path: String, flags: Int32 = O_RDWR) throws(PrivateFileError) -> Int32 {
        let base = flags | O_CLOEXEC | O_NOFOLLOW
        while true {
            let made = Glibc.open(path, base | O_CREAT | O_EXCL, fileMode)
            if made >= 0 {
                try exactMode(made, path: path)
                return made
            }
            guard errno == EEXIST else { throw PrivateFileError(path: path, errno: errno) }
            let existing = Glibc.open(path, base)
            if existing >= 0 { return existing }
            // Removed between the two calls: make it again.
            guard errno == ENOENT else { throw PrivateFileError(path: path, errno: errno) }
        }
    }

    /// Makes a new file at `path` (mode 0600) and returns its descriptor, open with `flags` (`O_WRONLY`
    /// by default). Fails with `EEXIST` when anything, a symbolic link included, is already there.
    public static func create(_ path: String, flags: Int32 = O_WRONLY) throws(PrivateFileError) -> Int32 {
        let descriptor = Glibc.open(path, flags | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, fileMode)
        guard descriptor >= 0 else { throw PrivateFileError(path: path, errno: errno) }
        try exactMode(descriptor, path: path)
        return descriptor
    }

    /// Makes an empty file at `path` (mode 0600) unless something is there already, for a program that
    /// opens it afterwards by name (SQLite keeps the mode of a file it finds, and gives its `-wal`,
    /// `-shm` and `-journal` files the same mode). Returns whether it made one.
    @discardableResult
    public static func makeEmpty(_ path: String) throws(PrivateFileError) -> Bool {
        do throws(PrivateFileError) {
            close(try create(path))
            return true
        } catch {
            guard error.code == EEXIST else { throw error }
            return false
        }
    }

    /// Writes `data` to `path` whole or not at all: into a new hidden file (mode 0600) beside it, synced,
    /// then renamed over `path`. A file that was there is replaced (with its mode: the new one is 0600).
    /// A device or pipe there (`/dev/stdout`, a FIFO) is written in place: nothing can be renamed over it.
    public static func write(_ data: Data, to path: String) throws(PrivateFileError) {
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            let descriptor = Glibc.open(path, O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw PrivateFileError(path: path, errno: errno) }
            var failure = writeAll(data, to: descriptor)
            if close(descriptor) != 0, failure == 0 { failure = errno }
            if failure != 0 { throw PrivateFileError(path: path, errno: failure) }
            return
        }
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp").path
        let descriptor = try create(temporary)
        var failure = writeAll(data, to: descriptor)
        if failure == 0, fsync(descriptor) != 0 { failure = errno }
        if close(descriptor) != 0, failure == 0 { failure = errno }
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw PrivateFileError(path: path, errno: failure)
        }
    }

    /// Writes all of `data` to `descriptor`; the `errno` of a failed write, or 0.
    private static func writeAll(_ data: Data, to descriptor: Int32) -> Int32 {
        data.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return 0
        }
    }

    /// Makes the folder `path` (mode 0700) when it is missing; its parent must exist. Returns whether it
    /// made it. A folder already there keeps its mode; anything else there is an error (`EEXIST`).
    @discardableResult
    public static func makeFolder(_ path: String) throws(PrivateFileError) -> Bool {
        if mkdir(path, folderMode) == 0 {
            guard chmod(path, folderMode) == 0 else { throw PrivateFileError(path: path, errno: errno) }
            return true
        }
        let failure = errno
        var status = stat()
        if failure == EEXIST, lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR { return false }
        throw PrivateFileError(path: path, errno: failure)
    }

    /// The mode bits (0o777) of the file at `path` when group or others may use it, nil when only its
    /// owner may, or when there is no such file.
    public static func widerThanOwner(_ path: String) -> mode_t? {
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        let mode = status.st_mode & 0o777
        return mode & 0o077 == 0 ? nil : mode
    }

    /// Gives a file just made its exact mode, whatever the umask took from it.
    private static func exactMode(_ descriptor: Int32, path: String) throws(PrivateFileError) {
        guard fchmod(descriptor, fileMode) == 0 else {
            let failure = errno
            close(descriptor)
            unlink(path)
            throw PrivateFileError(path: path, errno: failure)
        }
    }
}

/// A file or folder that could not be made or opened privately: its path and the system's reason.
public struct PrivateFileError: Error, Equatable, CustomStringConvertible {
    public let path: String
    /// The `errno` of the failing call.
    public let code: Int32

    public init(path: String, errno code: Int32) {
        self.path = path
        self.code = code
    }

    /// The system's reason, said plainly for a symbolic link found where a file was to be made or opened.
    public var reason: String {
        code == ELOOP ? "it is a symbolic link (refused: whoever can write its folder could point it elsewhere)" : String(cString: strerror(code))
    }

    public var description: String { "\(path): \(reason)" }
}
