import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A secret kept in a file (the app server's signing key): read only when no one but its owner could
/// have written it or could read it, as OpenSSH's StrictModes checks a private key.
///
/// The rules, checked on what is actually opened:
/// - the file is a regular file owned by the user running CareGate (or by root), and neither its group
///   nor others may read or write it (mode 0600 or 0400);
/// - every folder from the file's up to `/` is owned by that user or root, and no one else may write it,
///   unless it is sticky (as `/tmp`): there others may add names but not rename or remove this user's
///   files, and the owner rule above refuses a file someone else put there. Group write counts as no
///   one else's when the group is the user's private group (named as the user, with no other member);
///   the umask 002 of distributions with such groups leaves folders group-writable;
/// - a symbolic link is followed to its target, and both the link's folders and the target's must pass:
///   whoever can write either could otherwise change what is read.
///
/// The file is opened by its resolved path with `O_NOFOLLOW`, and its owner, mode and size are checked with
/// `fstat` on that descriptor before the bytes are read from it: nothing can be swapped in between.
///
/// ```swift
/// let pem = try SecretFile.read("/etc/caregate/server.key", largest: 16_384)
/// try SecretFile.checkFolder(forNew: "/etc/caregate/server.key")   // before making one there
/// ```
public enum SecretFile {
    /// Reads the secret at `path`, at most `largest` bytes, after the checks above.
    public static func read(_ path: String, largest: Int) throws(SecretFileError) -> Data {
        let target = try resolved(path)
        try checkFolders(of: path, target: target)
        let descriptor = Glibc.open(target, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notAFile(path: path) }
        let user = geteuid()
        guard status.st_uid == user || status.st_uid == 0 else {
            throw .ownedByOther(path: path, owner: Self.userName(status.st_uid), user: Self.userName(user))
        }
        guard status.st_mode & 0o077 == 0 else { throw .tooOpen(path: path, mode: String(status.st_mode & 0o777, radix: 8)) }
        guard status.st_size <= largest else { throw .tooLarge(path: path, largest: largest) }
        var bytes = [UInt8](repeating: 0, count: max(0, Int(status.st_size)))
        var count = 0
        while count < bytes.count {
            let read = bytes.withUnsafeMutableBytes { buffer in
                // Never nil here (the buffer is not empty); no address reads nothing, which ends the loop.
                buffer.baseAddress.map { Glibc.read(descriptor, $0 + count, buffer.count - count) } ?? 0
            }
            if read < 0, errno == EINTR { continue }
            guard read >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
            if read == 0 { break }
            count += read
        }
        return Data(bytes[..<count])
    }

    /// Checks that a secret may be made at `path`: its folder and every folder above it pass the rules
    /// above. The caller then makes it with ``PrivateFiles/create(_:flags:)`` (which refuses anything
    /// already there, a symbolic link included).
    public static func checkFolder(forNew path: String) throws(SecretFileError) {
        let folder = parent(of: path)
        guard let real = realpath(folder) else {
            throw .unreadable(path: path, reason: "its folder \(folder): \(String(cString: strerror(errno)))")
        }
        try checkChain(from: real, path: path)
    }

    /// The file `path` names once every symbolic link is followed.
    private static func resolved(_ path: String) throws(SecretFileError) -> String {
        guard let real = realpath(path) else {
            var status = stat()
            if errno == ENOENT, lstat(path, &status) == 0 {
                throw .unreadable(path: path, reason: "it is a symbolic link to a file that does not exist")
            }
            throw .unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        return real
    }

    /// The folders of the link (when `path` is one) and of its target, each up to `/`.
    private static func checkFolders(of path: String, target: String) throws(SecretFileError) {
        let folder = parent(of: path)
        guard let linkFolder = realpath(folder) else {
            throw .unreadable(path: path, reason: "its folder \(folder): \(String(cString: strerror(errno)))")
        }
        try checkChain(from: linkFolder, path: path)
        let targetFolder = parent(of: target)
        if targetFolder != linkFolder { try checkChain(from: targetFolder, path: path) }
    }

    /// `folder` (resolved, absolute) and each folder above it: owned by this user or root, and written by
    /// no one else unless sticky.
    private static func checkChain(from folder: String, path: String) throws(SecretFileError) {
        let user = geteuid()
        var current = folder
        while true {
            var status = stat()
            guard lstat(current, &status) == 0 else {
                throw .unreadable(path: path, reason: "its folder \(current): \(String(cString: strerror(errno)))")
            }
            guard status.st_mode & S_IFMT == S_IFDIR else {
                throw .unsafeFolder(path: path, folder: current, reason: "it is not a folder")
            }
            if status.st_uid != user && status.st_uid != 0 {
                throw .unsafeFolder(
                    path: path, folder: current,
                    reason: "it belongs to \(userName(status.st_uid)), not to \(SecretFileError.owners(userName(user))), and its owner could replace what it holds")
            }
            let mode = status.st_mode & 0o7777
            // Group write is nobody else's in a user private group (as Debian's OpenSSH allows).
            let othersWrite = mode & 0o002 != 0 || (mode & 0o020 != 0 && !isPrivateGroup(status.st_gid, of: user))
            if othersWrite && mode & S_ISVTX == 0 {
                throw .unsafeFolder(
                    path: path, folder: current,
                    reason: "others may write it (mode \(String(mode & 0o777, radix: 8)), not sticky) and so replace the file; chmod go-w \(current), or move the file")
            }
            if current == "/" { return }
            current = parent(of: current)
        }
    }

    /// Whether `group` is `user`'s private group: their primary group, named as they are, listing no
    /// other member and no other user's primary group. Such a group lets no one else write (the
    /// umask 002 of distributions with private groups makes folders group-writable by it).
    private static func isPrivateGroup(_ group: gid_t, of user: uid_t) -> Bool {
        guard let account = getpwuid(user), account.pointee.pw_gid == group, let userNameText = account.pointee.pw_name else { return false }
        let name = String(cString: userNameText)
        guard let entry = getgrgid(group), let groupName = entry.pointee.gr_name, String(cString: groupName) == name else { return false }
        if var member = entry.pointee.gr_mem {
            while let text = member.pointee {
                if String(cString: text) != name { return false }
                member += 1
            }
        }
        setpwent()
        defer { endpwent() }
        while let other = getpwent() {
            if other.pointee.pw_gid == group && other.pointee.pw_uid != user { return false }
        }
        return true
    }

    private static func parent(of path: String) -> String {
        let parent = (path as NSString).deletingLastPathComponent
        if parent.isEmpty { return "." }
        return parent
    }

    private static func realpath(_ path: String) -> String? {
        guard let resolved = Glibc.realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `name (uid N)`, or `uid N` for a user without a name.
    private static func userName(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return "\(String(cString: name)) (uid \(uid))"
    }
}

/// Why a secret file cannot be used; each case names the path as the user gave it and what to do.
public enum SecretFileError: Error, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case notAFile(path: String)
    /// Someone else owns it: they could have written it (a key they know) or change it later.
    case ownedByOther(path: String, owner: String, user: String)
    /// Group or others may read or write it.
    case tooOpen(path: String, mode: String)
    /// A folder on its way from `/` lets someone else replace it.
    case unsafeFolder(path: String, folder: String, reason: String)
    case tooLarge(path: String, largest: Int)

    public var path: String {
        switch self {
        case .unreadable(let path, _), .notAFile(let path), .ownedByOther(let path, _, _), .tooOpen(let path, _),
             .unsafeFolder(let path, _, _), .tooLarge(let path, _):
            return path
        }
    }

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): return "cannot read \(path): \(reason)"
        case .notAFile(let path): return "\(path) is not a regular file"
        case .ownedByOther(let path, let owner, let user):
            return "\(path) belongs to \(owner), not to \(SecretFileError.owners(user)): another user could know or change it; make a new one as \(user) (remove it first), or chown it if it is yours"
        case .tooOpen(let path, let mode):
            return "\(path) may be read by others (mode \(mode)); make it readable by its owner only (chmod 600)"
        case .unsafeFolder(let path, let folder, let reason):
            return "\(path) is in a folder others control: \(folder): \(reason)"
        case .tooLarge(let path, let largest): return "\(path) is larger than \(largest) bytes"
        }
    }

    /// Who may own a secret file, said of `user` (as ``SecretFile`` names users): that user or root.
    public static func owners(_ user: String) -> String {
        user.hasPrefix("root (uid 0)") || user == "uid 0" ? user : "\(user) or root"
    }
}
