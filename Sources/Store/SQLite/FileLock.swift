import FileSafety
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The locks a store shares with the other processes on it, all in one file beside the store
/// (`<store>-lock`), one byte each: the writer lease, the append gate, the appends waiting for it, and
/// the servers serving it.
///
/// On Linux each lock is an open-file-description lock (`F_OFD_SETLK`) on its own byte: like `flock`, it
/// belongs to the descriptor that took it, conflicts with every other descriptor (in this process or
/// another), and the kernel drops it when that descriptor is closed or its process ends, however it ends.
/// Elsewhere (macOS, which has no such locks) each lock is a `flock` on a file of its own
/// (`<store>-lock`, `-lock-appends`, `-lock-appends-waiting`, `-serving`). SQLite's own locks are POSIX
/// record locks on the database file, which these never touch.
///
/// The writer lease's holder also writes who it is into the file's text, so a waiter that gives up can
/// say who kept it waiting; locks past the end of a file are allowed, so the text and the locked bytes
/// never interfere.
enum StoreLock: Int64, CaseIterable {
    case writerLease = 0
    case appendGate = 1
    case appendsWaiting = 2
    case serving = 3

    /// The file holding this lock of the store at `storePath`.
    func path(storePath: String) -> String {
        #if os(Linux)
        return storePath + "-lock"
        #else
        switch self {
        case .writerLease: return storePath + "-lock"
        case .appendGate: return storePath + "-lock-appends"
        case .appendsWaiting: return storePath + "-lock-appends-waiting"
        case .serving: return storePath + "-serving"
        }
        #endif
    }
}

/// Taking and probing a ``StoreLock`` (its file made 0600 when missing): exclusive by polling with growing sleeps (not a busy loop), shared
/// by waiting, and a probe that takes nothing it keeps. Each call opens its own descriptor, which holds
/// the lock it took until it is closed.
enum FileLock {
    /// Opens the lock's file and takes the lock exclusively by `deadline`; the descriptor holds it until
    /// closed. `busy` makes the error of a wait that ran out (given the descriptor, to read who holds it).
    static func acquire(
        _ lock: StoreLock, storePath: String, deadline: Date, longestPause: TimeInterval, busy: (Int32) -> StoreError
    ) throws -> Int32 {
        let path = lock.path(storePath: storePath)
        let descriptor: Int32
        do throws(PrivateFileError) {
            // Made 0600 when missing (it names the job holding the lease), whatever the umask.
            descriptor = try PrivateFiles.open(path)
        } catch {
            if error.code == EACCES || error.code == EROFS || error.code == EPERM {
                throw StoreError.cannotWrite(path: storePath, reason: "its folder or its lock file \(path) is read-only (commands that only read it, such as caregate store stats, work)")
            }
            throw StoreError.cannotWrite(path: storePath, reason: "cannot open its lock file \(path): \(error.reason)")
        }
        var pause = min(0.005, longestPause)
        while !take(lock, on: descriptor, exclusive: true, wait: false) {
            let failure = errno
            guard failure == EWOULDBLOCK || failure == EAGAIN || failure == EACCES || failure == EINTR else {
                close(descriptor)
                throw StoreError.cannotWrite(path: storePath, reason: "cannot lock \(path): \(String(cString: strerror(failure)))")
            }
            guard Date() < deadline else {
                let error = busy(descriptor)
                close(descriptor)
                throw error
            }
            Thread.sleep(forTimeInterval: min(pause, max(0, deadline.timeIntervalSinceNow)))
            pause = min(pause * 2, longestPause)
        }
        return descriptor
    }

    /// Opens the lock's file (made when missing) and takes the lock shared, waiting for an exclusive
    /// holder; the descriptor holds it until closed. Nil when either fails, `errno` saying why.
    static func shared(_ lock: StoreLock, storePath: String) -> Int32? {
        let descriptor: Int32
        do throws(PrivateFileError) {
            descriptor = try PrivateFiles.open(lock.path(storePath: storePath))
        } catch {
            errno = error.code
            return nil
        }
        while !take(lock, on: descriptor, exclusive: false, wait: true) {
            guard errno == EINTR else {
                let failure = errno
                close(descriptor)
                errno = failure
                return nil
            }
        }
        return descriptor
    }

    /// Whether another descriptor holds the lock, shared or exclusive (false when its file does not
    /// exist).
    static func isHeld(_ lock: StoreLock, storePath: String) -> Bool {
        let descriptor = open(lock.path(storePath: storePath), O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        #if os(Linux)
        var probe = Self.range(of: lock, type: F_WRLCK)
        guard fcntl(descriptor, Self.getOpenFileLock, &probe) == 0 else { return false }
        return probe.l_type != Int16(F_UNLCK)
        #else
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return false }
        return errno == EWOULDBLOCK
        #endif
    }

    /// Takes `lock` on `descriptor`: exclusive or shared, waiting for it or not. False with `errno` set
    /// when it is not taken.
    private static func take(_ lock: StoreLock, on descriptor: Int32, exclusive: Bool, wait: Bool) -> Bool {
        #if os(Linux)
        var range = Self.range(of: lock, type: exclusive ? F_WRLCK : F_RDLCK)
        return fcntl(descriptor, wait ? Self.setOpenFileLockWaiting : Self.setOpenFileLock, &range) == 0
        #else
        return flock(descriptor, (exclusive ? LOCK_EX : LOCK_SH) | (wait ? 0 : LOCK_NB)) == 0
        #endif
    }

    #if os(Linux)
    // Glibc declares these only under _GNU_SOURCE, which Swift's import does not define.
    private static let getOpenFileLock: Int32 = 36  // F_OFD_GETLK
    private static let setOpenFileLock: Int32 = 37  // F_OFD_SETLK
    private static let setOpenFileLockWaiting: Int32 = 38  // F_OFD_SETLKW

    /// The one byte of `lock`; `l_pid` must be 0 for open-file-description locks.
    private static func range(of lock: StoreLock, type: Int32) -> flock {
        var range = flock()
        range.l_type = Int16(type)
        range.l_whence = Int16(SEEK_SET)
        range.l_start = off_t(lock.rawValue)
        range.l_len = 1
        range.l_pid = 0
        return range
    }
    #endif
}
