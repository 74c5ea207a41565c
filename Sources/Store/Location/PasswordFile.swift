#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// libpq's password file (`PGPASSFILE`, else `~/.pgpass`), read as libpq reads it, so that one file serves
/// `psql` and CareGate alike.
///
/// Each line is `hostname:port:database:username:password`; a field that is exactly `*` matches anything;
/// `\:` and `\\` stand for `:` and `\`; lines starting with `#` are comments; the first matching line wins.
/// A file that group or others may read or write is ignored with a warning, as libpq ignores it
/// (permissions should be u=rw, 0600, or less), and so is one that is not a regular file or is
/// larger than ``maximumBytes``.
public enum PasswordFile {
    /// The largest password file read (libpq reads any size; one this large is not a password file).
    public static let maximumBytes = 1 << 20

    /// One line of the file: each of the first four fields nil where it is the wildcard `*`.
    public struct Entry: Equatable, Sendable {
        public var host: String?
        public var port: String?
        public var database: String?
        public var user: String?
        public var password: String

        /// Whether this line is for `host`, `port`, `database` and `user`.
        func matches(host: String, port: String, database: String, user: String) -> Bool {
            [(self.host, host), (self.port, port), (self.database, database), (self.user, user)].allSatisfy { field, value in field.map { $0 == value } ?? true }
        }
    }

    /// The entries of a password file's text, in order; comments, empty lines and lines with fewer than
    /// five fields are skipped.
    public static func entries(in text: String) -> [Entry] {
        text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).compactMap { line in
            let line = line.hasSuffix("\r") ? line.dropLast() : line
            guard !line.isEmpty, !line.hasPrefix("#") else { return nil }
            return entry(line)
        }
    }

    /// One line split at its unescaped colons; nil when it has fewer than five fields or ends in a lone
    /// backslash inside the first four (libpq matches no such line). The password ends at the next
    /// unescaped colon, as in libpq.
    static func entry(_ line: Substring) -> Entry? {
        var fields: [(text: String, wildcard: Bool)] = []
        var current = ""
        var escapedAny = false
        var characters = line.makeIterator()
        while let character = characters.next() {
            if character == "\\" {
                guard let next = characters.next() else {
                    if fields.count < 4 { return nil }
                    break
                }
                current.append(next)
                escapedAny = true
            } else if character == ":" {
                fields.append((current, current == "*" && !escapedAny))
                current = ""
                escapedAny = false
                if fields.count == 5 { break }
            } else {
                current.append(character)
            }
        }
        if fields.count == 4 { fields.append((current, false)) }
        guard fields.count == 5 else { return nil }
        func field(_ index: Int) -> String? { fields[index].wildcard ? nil : fields[index].text }
        return Entry(host: field(0), port: field(1), database: field(2), user: field(3), password: fields[4].text)
    }

    /// The password of the first line matching `location` (libpq's rules: a socket in the default folder is
    /// matched as `localhost`), or nil.
    public static func password(for location: PostgresLocation, in text: String) -> String? {
        let host: String
        switch location.host {
        case .tcp(let name): host = name
        case .socket(let folder): host = folder == PostgresLocation.defaultSocketFolder ? "localhost" : folder
        }
        let found = entries(in: text).first { $0.matches(host: host, port: String(location.port), database: location.database, user: location.user) }
        return found.flatMap { $0.password.isEmpty ? nil : $0.password }
    }

    /// The file's text, or nil and why not (nil and no warning when there is no file). Read through one
    /// descriptor, checked with `fstat`, so that the checked file is the read one.
    public static func contents(path: String) -> (text: String?, warning: String?) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            let code = errno
            return (nil, code == ENOENT ? nil : "password file \"\(path)\" cannot be read: \(String(cString: strerror(code)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return (nil, "password file \"\(path)\" cannot be read") }
        guard status.st_mode & S_IFMT == S_IFREG else { return (nil, "password file \"\(path)\" is not a plain file and is ignored") }
        guard status.st_mode & 0o077 == 0 else {
            return (nil, "password file \"\(path)\" has group or world access and is ignored; permissions should be u=rw (0600) or less")
        }
        guard status.st_size <= maximumBytes else { return (nil, "password file \"\(path)\" is larger than \(maximumBytes >> 20) MiB and is ignored") }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            filled += count
        }
        return (String(decoding: bytes[..<filled], as: UTF8.self), nil)
    }

    /// Where the password file is: `PGPASSFILE`, else `.pgpass` in `HOME` (or the user's home folder).
    public static func path(environment: [String: String]) -> String? {
        if let file = environment["PGPASSFILE"], !file.isEmpty { return file }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.pgpass" }
        guard let entry = getpwuid(geteuid()), let home = entry.pointee.pw_dir else { return nil }
        return String(cString: home) + "/.pgpass"
    }
}

extension PostgresLocation {
    /// This location with its password found as libpq finds it: the URL's, else `PGPASSWORD`, else the
    /// password file's matching line (``PasswordFile``); still nil when none has one (the server may not
    /// ask). A password file that cannot be used is reported through `warn`, never fatal.
    public func withPassword(environment: [String: String], warn: (String) -> Void) -> PostgresLocation {
        guard password == nil else { return self }
        var located = self
        if let fromEnvironment = environment["PGPASSWORD"], !fromEnvironment.isEmpty {
            located.password = fromEnvironment
            return located
        }
        guard let path = PasswordFile.path(environment: environment) else { return self }
        let (text, warning) = PasswordFile.contents(path: path)
        if let warning { warn(warning) }
        located.password = text.flatMap { PasswordFile.password(for: self, in: $0) }
        return located
    }
}
