import FileSafety
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
/// Across processes the lease is an exclusive lock on the store's lock file (``StoreLock/writerLease``):
/// the kernel releases it when the holder exits, even when it is killed, so no stale lease outlives a
/// crash. Within a process a recursive lock serializes threads, and a thread that holds the lease may
/// take it again (a sync's import inside the sync). The holder writes who it is into the lock file, so
/// that a waiter that gives up can say who kept it waiting.
// Unchecked: `depth`, `descriptor` and `holdsGate` are touched only by the thread holding `threads`, a
// recursive lock held for the whole job (a thread that holds the lease takes it again, and waiters give
// up at a deadline): neither of which Mutex does.
final class WriterLease: @unchecked Sendable {
    /// The store's path, or nil for a store in memory (one process: the recursive lock is enough).
    private let lockedStore: String?
    private let threads = NSRecursiveLock()
    /// Guarded by `threads`.
    private var depth = 0
    private var descriptor: Int32 = -1
    /// Guarded by `threads`: whether the lease's holder holds the append gate (not between a failed
    /// retake and the end of its job).
    private var holdsGate = false
    private let gate: AppendGate

    init(storePath: String) {
        lockedStore = storePath == ":memory:" ? nil : storePath
        gate = AppendGate(storePath: storePath)
    }

    /// Runs `body` holding the lease, waiting at most `timeout` seconds for another holder to finish.
    /// The lease's holder holds the append gate too (``AppendGate``), but for where it lets appends in.
    func hold<T>(as holder: String, timeout: TimeInterval, storePath: String, _ body: () throws -> T) throws -> T {
        let deadline = Date().addingTimeInterval(max(0, timeout))
        guard threads.lock(before: deadline) else {
            throw StoreError.writerBusy(path: storePath, holder: "another job of this process", waitedSeconds: timeout)
        }
        defer { threads.unlock() }
        if depth == 0 {
            if let lockedStore {
                descriptor = try FileLock.acquire(.writerLease, storePath: lockedStore, deadline: deadline, longestPause: 0.1) { descriptor in
                    StoreError.writerBusy(path: storePath, holder: Self.waitedHolder(descriptor) ?? "another process", waitedSeconds: timeout)
                }
                Self.describe(holder, in: descriptor)
            }
            do {
                try gate.take(deadline: deadline, storePath: storePath) {
                    StoreError.writerBusy(path: storePath, holder: "an app's push", waitedSeconds: timeout)
                }
            } catch {
                closeLease()
                throw error
            }
            holdsGate = true
        }
        depth += 1
        defer {
            depth -= 1
            if depth == 0 {
                if holdsGate { gate.release() }
                holdsGate = false
                closeLease()
            }
        }
        return try body()
    }

    /// Runs `body`, a job that only appends outcome versions to existing tasks (an app's push), holding
    /// the append gate: after the write job holding the lease (if any) ends or lets appends in at a safe
    /// point, and before any other write job starts. A thread holding the lease runs `body` at once.
    func holdForAppend<T>(as holder: String, timeout: TimeInterval, storePath: String, _ body: () throws -> T) throws -> T {
        if threads.try() {
            defer { threads.unlock() }
            if depth > 0 { return try body() }
        }
        let deadline = Date().addingTimeInterval(max(0, timeout))
        try gate.takeForAppend(deadline: deadline, storePath: storePath) {
            StoreError.writerBusy(path: storePath, holder: leaseHolder() ?? "another app's push", waitedSeconds: timeout)
        }
        defer { gate.release() }
        return try body()
    }

    /// Whether an append waits for the gate (cheap: for a job to ask at each of its safe points).
    func appendsAreWaiting() -> Bool {
        gate.appendsAreWaiting()
    }

    /// Called by the lease's holder at a safe point: lets the waiting appends run, then takes the gate
    /// back (waiting at most `timeout` for the one running). Only the outermost job of the lease lets
    /// appends in: a nested job cannot know its caller's plans.
    @discardableResult
    func yieldToAppends(timeout: TimeInterval, storePath: String) throws -> Bool {
        threads.lock()
        defer { threads.unlock() }
        guard depth == 1, holdsGate else { return false }
        do {
            return try gate.letAppendsIn(timeout: timeout, storePath: storePath) {
                StoreError.writerBusy(path: storePath, holder: "an app's push", waitedSeconds: max(timeout, AppendGate.shortestRetake))
            }
        } catch {
            holdsGate = false
            throw error
        }
    }

    private func closeLease() {
        if descriptor >= 0 {
            // Closing the descriptor releases the flock.
            close(descriptor)
            descriptor = -1
        }
    }

    /// What the lease's holder wrote into the lock file, for an append that waited too long; nil when
    /// no job holds the lease (another append kept it waiting), whose file still names the last holder.
    private func leaseHolder() -> String? {
        guard let lockedStore, FileLock.isHeld(.writerLease, storePath: lockedStore) else { return nil }
        let descriptor = open(StoreLock.writerLease.path(storePath: lockedStore), O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return Self.holderDescription(descriptor)
    }

    /// The holder's description for a waiter that gives up, read again once when it is not written yet.
    private static func waitedHolder(_ descriptor: Int32) -> String? {
        if let holder = holderDescription(descriptor) { return holder }
        // The holder has just taken the lease and not yet said who it is.
        Thread.sleep(forTimeInterval: 0.05)
        return holderDescription(descriptor)
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
