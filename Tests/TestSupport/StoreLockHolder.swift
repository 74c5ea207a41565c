import Foundation
import XCTest

/// Another process holding locks of a store, as a write job of `caregate` holds them: a Python process
/// that runs its lock-taking code, prints `locked`, and lets go once the release file exists.
public enum StoreLockHolder {
    /// SQLite's own write lock, as another program (not CareGate, outside the writer lease) takes it.
    public static let sqliteWriteLock = """
        connection = sqlite3.connect(store, isolation_level=None)
        connection.execute('BEGIN IMMEDIATE')
        """

    /// The writer lease and the append gate (bytes 0 and 1 of `<store>-lock`, FileLock's StoreLock), as a
    /// write job holds them between two safe points; POSIX record locks conflict with the server's
    /// open-file-description locks.
    public static let leaseAndGate = """
        lock = os.open(store + '-lock', os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.lockf(lock, fcntl.LOCK_EX, 2, 0)
        """

    /// Starts a Python process that takes `locks` on the store (Python code given the store's path as
    /// `store`), prints `locked`, and lets go once `release` exists; returns once it holds them.
    public static func start(store: String, release: String, locks: String) throws -> Process {
        let holder = try ScriptRunner.startPython("""
            import fcntl, os, sqlite3, sys, time
            store, release = \(pythonString(store)), \(pythonString(release))
            \(locks)
            print('locked', flush=True)
            while not os.path.exists(release): time.sleep(0.02)
            """)
        let output = try XCTUnwrap(holder.standardOutput as? Pipe).fileHandleForReading
        var seen = ""
        while !seen.contains("locked") {
            let chunk = output.availableData
            guard !chunk.isEmpty else { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        XCTAssertTrue(seen.contains("locked"), "the holder took no lock: \(seen)")
        return holder
    }

    private static func pythonString(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
