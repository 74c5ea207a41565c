import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The second lock of a store's writer lease: what lets an app's push in while an import holds the lease.
///
/// An import holds the writer lease for all of its run (a sync's import for seconds to minutes). A push
/// from a patient's app only appends outcome versions to tasks that exist, and an import plans no outcome
/// from what it read before its last safe point (``Store/yieldToAppends()``). So
/// a write job holds the gate with the lease, and an import opens it at its safe points while an append
/// waits: the append runs whole between two of the import's transactions, as if it had run before the
/// import's rest, and the import goes on from what the store then holds.
///
/// Across processes the gate is an exclusive lock (``StoreLock/appendGate``); an append says it waits by
/// a shared lock (``StoreLock/appendsWaiting``) while it waits, which the holder probes without blocking.
/// Within a process a condition does both. The kernel drops every such lock with its holder.
// Unchecked: `held` and `waiting` are touched only while `condition` is locked (threads sleep on it until
// the gate is free, which Mutex cannot do); `gateDescriptor` only by the gate's holder.
final class AppendGate: @unchecked Sendable {
    /// The most time one opening of the gate waits for appends to come in, one after another, before the
    /// holder asks for it back (it then waits for the append under way, and competes with later ones).
    static let longestOpening: TimeInterval = 2
    /// The least time the holder waits to take the gate back, whatever the store's busy timeout (which
    /// may be 0): the append under way is one transaction of a bounded push, and giving up would stop
    /// the import part-way.
    static let shortestRetake: TimeInterval = 120

    /// The store's path, or nil for a store in memory (one process: the condition is enough).
    private let lockedStore: String?
    private let condition = NSCondition()
    /// Guarded by `condition`: whether a thread of this process holds the gate, and how many wait to append.
    private var held = false
    private var waiting = 0
    /// The descriptor of the holder's lock, while it holds the gate (only the holder touches it).
    private var gateDescriptor: Int32 = -1

    init(storePath: String) {
        lockedStore = storePath == ":memory:" ? nil : storePath
    }

    /// Takes the gate, waiting until `deadline`; `busy` makes the error that says who kept it.
    func take(deadline: Date, storePath: String, busy: () -> StoreError) throws {
        condition.lock()
        while held {
            guard condition.wait(until: deadline) else {
                condition.unlock()
                throw busy()
            }
        }
        held = true
        condition.unlock()
        guard let lockedStore else { return }
        do {
            gateDescriptor = try FileLock.acquire(.appendGate, storePath: lockedStore, deadline: deadline, longestPause: 0.002, busy: { _ in busy() })
        } catch {
            condition.lock()
            held = false
            condition.broadcast()
            condition.unlock()
            throw error
        }
    }

    /// Releases the gate taken by ``take(deadline:storePath:busy:)``: only its holder calls it.
    func release() {
        if gateDescriptor >= 0 {
            close(gateDescriptor)
            gateDescriptor = -1
        }
        condition.lock()
        held = false
        condition.broadcast()
        condition.unlock()
    }

    /// Takes the gate for an append: while it waits, holders see it waiting (``appendsAreWaiting()``).
    func takeForAppend(deadline: Date, storePath: String, busy: () -> StoreError) throws {
        condition.lock()
        waiting += 1
        condition.unlock()
        // The shared lock on the queue file tells holders in other processes; closed once this one is in.
        // It waits only while a holder probes; an append holders cannot see (the lock failed) waits for
        // the job's end instead, as before the gate existed.
        let queueDescriptor = lockedStore.flatMap { FileLock.shared(.appendsWaiting, storePath: $0) }
        defer {
            if let queueDescriptor { close(queueDescriptor) }
            condition.lock()
            waiting -= 1
            condition.unlock()
        }
        try take(deadline: deadline, storePath: storePath, busy: busy)
    }

    /// Whether an append, in this process or another, waits for the gate. Three system calls at most.
    func appendsAreWaiting() -> Bool {
        condition.lock()
        let here = waiting > 0
        condition.unlock()
        if here { return true }
        return lockedStore.map { FileLock.isHeld(.appendsWaiting, storePath: $0) } ?? false
    }

    /// Opens the gate held by the caller while appends wait (for at most ``longestOpening``), then takes
    /// it back, waiting for the append running then for `timeout` (at least ``shortestRetake``). Returns
    /// whether any append waited. When it throws, the caller no longer holds the gate.
    func letAppendsIn(timeout: TimeInterval, storePath: String, busy: () -> StoreError) throws -> Bool {
        guard appendsAreWaiting() else { return false }
        release()
        let end = Date().addingTimeInterval(Self.longestOpening)
        repeat {
            usleep(1_000)
        } while appendsAreWaiting() && Date() < end
        try take(deadline: Date().addingTimeInterval(max(timeout, Self.shortestRetake)), storePath: storePath, busy: busy)
        return true
    }
}
