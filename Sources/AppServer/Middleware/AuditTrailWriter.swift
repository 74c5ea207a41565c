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
/// Requests refused without a valid token are counted, not written one entry each (``countRefusal(action:status:reason:)``):
/// in memory per minute, route, status and reason (at most ``maximumRefusalKeys`` keys), added to the
/// trail at most once every ``refusalFlushGap`` (a write the store refused is tried again a gap later)
/// and by ``finish()`` when the server stops. A flood of such requests costs a handful of rows a minute,
/// not a row per request (issue 41, item 8); a server killed loses at most the last second's counts. The same thread prunes the trail past its retention, at the first
/// commit and then hourly (``AppSyncStore/pruneAuditTrail(now:)``).
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
    /// The least time between two writes of refusal counts, in nanoseconds.
    static let refusalFlushGap: UInt64 = 1_000_000_000
    /// The most distinct (minute, route, status, reason) keys counted in memory; past it, a refusal is
    /// counted under the minute's `(other)` key.
    static let maximumRefusalKeys = 1_024
    /// How often the trail is pruned past its retention, in nanoseconds (hourly).
    static let pruneInterval: UInt64 = 3_600_000_000_000

    private let store: any AppSyncStore
    /// The thread that writes (it may wait on another process's write: never a request's thread).
    private let queue = DispatchQueue(label: "caregate.serve.audit", qos: .userInitiated)
    private let state = Mutex(State())

    private struct RefusalKey: Hashable {
        let minute: Date
        let action: String
        let status: Int
        let reason: String
    }

    private struct State {
        var pending: [(entry: AuditEntry, waiter: CheckedContinuation<Int64, any Error>)] = []
        /// Whether a writing pass is scheduled or running; it takes whatever is pending until nothing is.
        var writing = false
        /// When the last commit ended (`DispatchTime` nanoseconds).
        var lastCommit: UInt64 = 0
        /// Refusals counted and not yet written.
        var refusals: [RefusalKey: Int] = [:]
        /// Whether a write of the refusal counts is scheduled.
        var flushScheduled = false
        /// When the refusal counts were last written, and the trail last pruned (`DispatchTime` nanoseconds; 0: never).
        var lastFlush: UInt64 = 0
        var lastPrune: UInt64 = 0
    }

    init(store: any AppSyncStore) {
        self.store = store
    }

    deinit {
        // A writer that was never finished (a router dropped by an in-memory test): its last counts.
        let counts = state.withLock { state in
            let taken = state.refusals
            state.refusals = [:]
            return taken
        }
        if !counts.isEmpty { try? store.recordRefusals(Self.rows(counts)) }
    }

    /// Writes the refusal counts not yet written, after whatever the writing thread is doing, and returns
    /// once they are in the trail: the server calls it when it has stopped answering, before its store
    /// closes. Throws when the store refused them (they stay counted for a later write).
    func finish() throws {
        try queue.sync {
            let counts = takeRefusals()
            guard !counts.isEmpty else { return }
            do {
                try store.recordRefusals(Self.rows(counts))
            } catch {
                keep(counts)
                throw error
            }
        }
    }

    /// Appends `entry` to the trail (or, when it has an id, completes that entry); returns its id when it
    /// is committed, throws when its transaction failed.
    @discardableResult
    func record(_ entry: AuditEntry) async throws -> Int64 {
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Int64, any Error>) in
            let start = state.withLock { state in
                state.pending.append((entry, waiter))
                if state.writing { return false }
                state.writing = true
                return true
            }
            if start { queue.async { self.writePending() } }
        }
    }

    /// Counts one request refused without a valid token: `action` is the method and the route's pattern
    /// (never the raw path), `reason` one of a fixed set. Returns at once; the count is written within
    /// about ``refusalFlushGap``.
    func countRefusal(action: String, status: Int, reason: String, at date: Date = Date()) {
        let minute = AuditRefusalCount.minute(of: date)
        let schedule = state.withLock { state -> UInt64? in
            var key = RefusalKey(minute: minute, action: action, status: status, reason: reason)
            if state.refusals[key] == nil, state.refusals.count >= Self.maximumRefusalKeys {
                key = RefusalKey(minute: minute, action: "(other)", status: 0, reason: "(other)")
            }
            state.refusals[key, default: 0] += 1
            guard !state.flushScheduled else { return nil }
            state.flushScheduled = true
            // The first count is written at once; then at most one write per gap.
            let now = DispatchTime.now().uptimeNanoseconds
            let next = state.lastFlush == 0 ? now : state.lastFlush + Self.refusalFlushGap
            return next > now ? next - now : 0
        }
        guard let wait = schedule else { return }
        // Weakly: a server that stops writes what is left when the writer goes away (deinit).
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(wait))) { [weak self] in self?.flushRefusals() }
    }

    /// Writes the refusal counts taken so far (on the writing thread); when the store refuses them, they
    /// are kept and the write is tried again a gap later.
    private func flushRefusals() {
        let counts = takeRefusals()
        do {
            if !counts.isEmpty { try store.recordRefusals(Self.rows(counts)) }
        } catch {
            keep(counts)
            let retry = state.withLock { state -> Bool in
                guard !state.flushScheduled else { return false }
                state.flushScheduled = true
                return true
            }
            if retry {
                queue.asyncAfter(deadline: .now() + .nanoseconds(Int(Self.refusalFlushGap))) { [weak self] in self?.flushRefusals() }
            }
        }
        pruneWhenDue()
    }

    /// The counts not yet written, taken out of memory (on the writing thread).
    private func takeRefusals() -> [RefusalKey: Int] {
        state.withLock { state in
            let taken = state.refusals
            state.refusals = [:]
            state.flushScheduled = false
            state.lastFlush = DispatchTime.now().uptimeNanoseconds
            return taken
        }
    }

    /// Puts back counts the store refused (bounded as counting is): a busy trail loses no count.
    private func keep(_ counts: [RefusalKey: Int]) {
        state.withLock { state in
            for (key, count) in counts {
                let kept = state.refusals[key] != nil || state.refusals.count < Self.maximumRefusalKeys
                    ? key : RefusalKey(minute: key.minute, action: "(other)", status: 0, reason: "(other)")
                state.refusals[kept, default: 0] += count
            }
        }
    }

    private static func rows(_ counts: [RefusalKey: Int]) -> [AuditRefusalCount] {
        counts.map { AuditRefusalCount(minute: $0.key.minute, action: $0.key.action, status: $0.key.status, reason: $0.key.reason, count: $0.value) }
            .sorted { ($0.minute, $0.action, $0.status, $0.reason) < ($1.minute, $1.action, $1.status, $1.reason) }
    }

    /// Prunes the trail past its retention when it was not pruned within ``pruneInterval`` (on the
    /// writing thread; a failure is tried again at the next interval).
    private func pruneWhenDue() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { state -> Bool in
            guard state.lastPrune == 0 || now - state.lastPrune >= Self.pruneInterval else { return false }
            state.lastPrune = now
            return true
        }
        if due { _ = try? store.pruneAuditTrail(now: Date()) }
    }

    /// Writes batches until nothing is pending.
    private func writePending() {
        while true {
            let (lastCommit, waiting) = state.withLock { ($0.lastCommit, $0.pending.count) }
            let now = DispatchTime.now().uptimeNanoseconds
            if now < lastCommit + Self.minimumGap, waiting < Self.maximumBatch {
                usleep(useconds_t((lastCommit + Self.minimumGap - now) / 1_000))
            }
            let batch = state.withLock { state -> [(entry: AuditEntry, waiter: CheckedContinuation<Int64, any Error>)] in
                guard !state.pending.isEmpty else {
                    state.writing = false
                    return []
                }
                let taken = Array(state.pending.prefix(Self.maximumBatch))
                state.pending.removeFirst(taken.count)
                return taken
            }
            if batch.isEmpty { break }
            let outcome = Result { try store.recordAudit(batch.map(\.entry)) }
            let ended = DispatchTime.now().uptimeNanoseconds
            state.withLock { $0.lastCommit = ended }
            for (index, item) in batch.enumerated() {
                item.waiter.resume(with: outcome.map { $0.indices.contains(index) ? $0[index] : 0 })
            }
        }
        pruneWhenDue()
    }
}
