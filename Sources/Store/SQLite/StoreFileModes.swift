import FileSafety
import Foundation

/// The files of a SQLite store that other users of the machine may read: a store made by an older
/// CareGate (or copied with a wide umask) holds names, birth dates and values any local user could read.
/// Commands that open a store for writing report them at start, with the `chmod` that fixes them; they
/// change no mode themselves (the owner may share the files on purpose, through a group).
///
/// ```swift
/// if let warning = StoreFileModes.warning(storePath: "caregate.sqlite") { print(warning) }
/// ```
public enum StoreFileModes {
    /// The suffixes of the files beside the store at `path` that are its own: SQLite's journal files,
    /// the audit trail (and its journal files), and the lock files of its writer lease and server marker.
    static let companions = [
        "", "-wal", "-shm", "-journal",
        "-audit.sqlite", "-audit.sqlite-wal", "-audit.sqlite-shm", "-audit.sqlite-journal",
        "-lock", "-lock-appends", "-lock-appends-waiting", "-serving",
    ]

    /// The store's files that group or others may use, with their modes (octal text), in the order above.
    public static func openToOthers(storePath: String) -> [(path: String, mode: String)] {
        guard storePath != ":memory:" else { return [] }
        return companions.compactMap { suffix in
            let path = storePath + suffix
            return PrivateFiles.widerThanOwner(path).map { (path, String($0, radix: 8)) }
        }
    }

    /// One warning naming those files and the command that makes them owner-only; nil when there are none.
    public static func warning(storePath: String) -> String? {
        let open = openToOthers(storePath: storePath)
        guard !open.isEmpty else { return nil }
        let listed = open.map { "\($0.path) (mode \($0.mode))" }.joined(separator: ", ")
        let quoted = open.map { "'" + $0.path.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        return "warning: other users of this machine may read the store's files: \(listed); make them owner-only with: chmod 600 \(quoted)"
    }
}
