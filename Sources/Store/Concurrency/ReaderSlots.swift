import Foundation

/// A count of the store's reader connections that nothing else in the process may be using: a read that
/// holds a slot finds a connection free, so it never waits for another thread's read.
///
/// ``tryAcquire()`` never blocks (a concurrency thread may call it); ``acquire()`` blocks until a slot
/// is free and is called only on threads of ``PooledAppStore``'s own pool. While a pool thread waits,
/// ``tryAcquire()`` refuses, so reads queued for the pool are served before newer ones take the slots.
///
/// ```swift
/// let slots = ReaderSlots(count: 4)
/// if slots.tryAcquire() { defer { slots.release() }; try read() }
/// ```
final class ReaderSlots: @unchecked Sendable {
    /// Guards `free` and `waiting` (`@unchecked Sendable`: both are touched only while it is locked).
    private let condition = NSCondition()
    private var free: Int
    private var waiting = 0

    init(count: Int) {
        free = max(1, count)
    }

    /// Whether a thread waits for a slot.
    var hasWaiter: Bool { condition.withLock { waiting > 0 } }

    /// Takes a slot when one is free and no thread waits for one; never blocks.
    func tryAcquire() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard free > 0, waiting == 0 else { return false }
        free -= 1
        return true
    }

    /// Takes a slot, waiting for one (on a pool thread only).
    func acquire() {
        condition.lock()
        waiting += 1
        while free == 0 { condition.wait() }
        waiting -= 1
        free -= 1
        condition.unlock()
    }

    /// Gives back a slot taken by ``tryAcquire()`` or ``acquire()``.
    func release() {
        condition.lock()
        free += 1
        condition.signal()
        condition.unlock()
    }
}
