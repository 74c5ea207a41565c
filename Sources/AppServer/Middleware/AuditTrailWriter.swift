import Dispatch
import Foundation
import Store
import Synchronization

/// Writes the app API's audit trail by group commit: the entries of requests answered at about the same
/// time go into the store in one transaction, and each request's answer waits for its entry's commit.
///
/// An answer that cannot be audited is not given: ``record(_:)`` returns once its entry is durable and
/// throws when the transaction that held it failed (the middleware then answers 503 instead). What group
/// commit saves is the transaction per request: SQLite has one writer per file, so a transaction per
/// request would queue every request behind every other. The trail has a file of its own beside the store
/// (``AppSyncStore/recordAudit(_:)``), so these commits never wait for `caregate sync`'s writes.
///
/// While one transaction is being written, the entries that arrive wait, and the next transaction takes
/// all of them (up to ``maximumBatch``); it starts no sooner than ``minimumGap`` after the last commit
/// ended. Alone, a request waits for its own commit only; under load, batches grow with the load. The gap
/// leaves the trail's write lock free most of the time for another server on the same store.
///
/// ```swift
/// let trail = AuditTrailWriter(store: store)
/// try await trail.record(AuditEntry(date: Date(), subject: "patient-1", patientID: "patient-1", action: "GET /carekit/v1/tasks", status: 200, detail: "2 tasks"))
/// ```
final class AuditTrailWriter: Sendable {
    /// The most entries one transaction takes.
    static let maximumBatch = 512
    /// The least time between the end of one commit and the start of the next, in nanoseconds.
    static let minimumGap: UInt64 = 2_000_000

    private let store: any AppSyncStore
    /// The thread that writes (it may wait on another process's write: never a request's thread).
    private let queue = DispatchQueue(label: "caregate.serve.audit", qos: .userInitiated)
    private let state = Mutex(State())

    private struct State {
        var pending: [(entry: AuditEntry, waiter: CheckedContinuation<Void, any Error>)] = []
        /// Whether a writing pass is scheduled or running; it takes whatever is pending until nothing is.
        var writing = false
        /// When the last commit ended (`DispatchTime` nanoseconds).
        var lastCommit: UInt64 = 0
    }

    init(store: any AppSyncStore) {
        self.store = store
    }

    /// Appends `entry` to the trail; returns when it is committed, throws when its transaction failed.
    func record(_ entry: AuditEntry) async throws {
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
            let start = state.withLock { state in
                state.pending.append((entry, waiter))
                if state.writing { return false }
                state.writing = true
                return true
            }
            if start { queue.async { self.writePending() } }
        }
    }

    /// Writes batches until nothing is pending.
    private func writePending() {
        while true {
            let (lastCommit, waiting) = state.withLock { ($0.lastCommit, $0.pending.count) }
            let now = DispatchTime.now().uptimeNanoseconds
            if now < lastCommit + Self.minimumGap, waiting < Self.maximumBatch {
                usleep(useconds_t((lastCommit + Self.minimumGap - now) / 1_000))
            }
            let batch = state.withLock { state -> [(entry: AuditEntry, waiter: CheckedContinuation<Void, any Error>)] in
                guard !state.pending.isEmpty else {
                    state.writing = false
                    return []
                }
                let taken = Array(state.pending.prefix(Self.maximumBatch))
                state.pending.removeFirst(taken.count)
                return taken
            }
            if batch.isEmpty { return }
            let outcome = Result { try store.recordAudit(batch.map(\.entry)) }
            let ended = DispatchTime.now().uptimeNanoseconds
            state.withLock { $0.lastCommit = ended }
            for item in batch { item.waiter.resume(with: outcome) }
        }
    }
}
