import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The one-writer-at-a-time guarantee of a SQLite store, across threads and processes.
///
/// A write job (an import, a sync's import, an export, an app's outcomes) plans against what it reads and
/// then writes in several transactions; two of them interleaved would each plan against a store the other
/// is changing. Holding the lease from the first read that plans to the last write makes every end state
/// some serial order of the jobs. Readers never take it (WAL lets them read while a job writes).
///
/// Across processes the lease is an exclusive `flock` on a lock file beside the store (`<store>-lock`):
/// the kernel releases it when the holder exits, even when it is killed, so no stale lease outlives a
/// crash. Within a process a recursive lock serializes threads, and a thread that holds the lease may
/// take it again (a sync's import inside the sync). The holder writes who it is into the lock file, so
/// that a waiter that gives up can say who kept it waiting. SQLite's own locks are POSIX record locks,
/// which `flock` does not interact with on Linux; the lease uses a file of its own all the same.
final class WriterLease: @unchecked Sendable {
    /// The lock file, or nil for a store in memory (one process: the recursive lock is enough).
    private let lockPath: String?
    private let threads = NSRecursiveLock()
    /// Guarded by `threads`.
    private var depth = 0
    private var descriptor: Int32 = -1

    init(storePath: String) {
        lockPath = storePath == ":memory:" ? nil : storePath + "-lock"
    }

    /// Runs `body` holding the lease, waiting at most `timeout` seconds for another holder to finish.
    func hold<T>(as holder: String, timeout: TimeInterval, storePath: String, _ body: () throws -> T) throws -> T {
        let deadline = Date().addingTimeInterval(max(0, timeout))
        guard threads.lock(before: deadline) else {
            throw StoreError.writerBusy(path: storePath, holder: "another job of this process", waitedSeconds: timeout)
        }
        defer { threads.unlock() }
        if depth == 0, let lockPath {
            descriptor = try Self.acquire(lockPath, deadline: deadline, timeout: timeout, storePath: storePath)
            Self.describe(holder, in: descriptor)
        }
        depth += 1
        defer {
            depth -= 1
            if depth == 0, descriptor >= 0 {
                // Closing the descriptor releases the flock.
                close(descriptor)
                descriptor = -1
            }
        }
        return try body()
    }

    /// Opens the lock file and takes its exclusive lock, polling (with sleeps, not a busy loop) until
    /// `deadline`.
    private static func acquire(_ lockPath: String, deadline: Date, timeout: TimeInterval, storePath: String) throws -> Int32 {
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw StoreError.cannotWrite(path: storePath, reason: "cannot open its lock file \(lockPath): \(String(cString: strerror(errno)))")
        }
        var pause: TimeInterval = 0.005
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let failure = errno
            guard failure == EWOULDBLOCK || failure == EINTR else {
                close(descriptor)
                throw StoreError.cannotWrite(path: storePath, reason: "cannot lock \(lockPath): \(String(cString: strerror(failure)))")
            }
            guard Date() < deadline else {
                var holder = holderDescription(descriptor)
                if holder == nil {
                    // The holder has just taken the lease and not yet said who it is.
                    Thread.sleep(forTimeInterval: 0.05)
                    holder = holderDescription(descriptor)
                }
                close(descriptor)
                throw StoreError.writerBusy(path: storePath, holder: holder ?? "another process", waitedSeconds: timeout)
            }
            Thread.sleep(forTimeInterval: min(pause, max(0, deadline.timeIntervalSinceNow)))
            pause = min(pause * 2, 0.1)
        }
        return descriptor
    }

    /// Writes `holder`, this process's id and the time into the lock file (no patient data: a job name).
    private static func describe(_ holder: String, in descriptor: Int32) {
        let text = "\(holder) (pid \(getpid()), since \(Date().formatted(.iso8601)))"
        // Written over the last holder's text, then cut to length: a waiter never reads an empty file
        // in between (only before the first holder's write).
        let written = text.utf8CString.withUnsafeBufferPointer { pwrite(descriptor, $0.baseAddress, $0.count - 1, 0) }
        if written > 0 { _ = ftruncate(descriptor, off_t(written)) }
    }

    /// What the holder wrote into the lock file, bounded; nil when it wrote nothing.
    private static func holderDescription(_ descriptor: Int32) -> String? {
        var bytes = [UInt8](repeating: 0, count: 256)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: bytes[..<count], as: UTF8.self).filter { !$0.isNewline }
        return text.isEmpty ? nil : text
    }
}
