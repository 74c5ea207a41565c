import Foundation

/// A bounded number of threads for work that may block (a push waiting for the store's writer, a read
/// waiting for a reader connection), fed by a queue: work beyond the threads waits in the queue as a
/// closure, holding no thread.
///
/// Dispatch's concurrent queues start another thread whenever every running one is blocked, so a burst of
/// pushes each waiting for the store's lock grew the thread count without bound; Swift's cooperative pool
/// must never block at all. Threads start on demand, up to ``limit``, stay for the next work, and end
/// once idle for `idleSeconds` (a pool of a server made and dropped, as tests do, leaves no thread).
///
/// ```swift
/// let pool = BlockingWorkerPool(name: "caregate.store-write", limit: 4)
/// pool.submit { try? store.withAppendLease("push") { ... } }
/// ```
final class BlockingWorkerPool: @unchecked Sendable {
    private let name: String
    private let idleSeconds: TimeInterval
    /// Guards every variable below (`@unchecked Sendable`: they are touched only while it is locked).
    private let condition = NSCondition()
    /// Work not yet taken by a thread, oldest first.
    private var queue: [@Sendable () -> Void] = []
    private var head = 0
    private var threads = 0
    private var idle = 0
    private var maximum: Int

    init(name: String, limit: Int, idleSeconds: TimeInterval = 30) {
        self.name = name
        self.idleSeconds = idleSeconds
        maximum = max(1, limit)
    }

    /// The most threads the pool runs; lowering it stops no thread already started.
    var limit: Int {
        get { condition.withLock { maximum } }
        set { condition.withLock { maximum = max(1, newValue) } }
    }

    /// Threads started and not ended.
    var threadCount: Int { condition.withLock { threads } }

    /// Runs `work` on one of the pool's threads, after the work submitted before it has started.
    func submit(_ work: @escaping @Sendable () -> Void) {
        condition.lock()
        queue.append(work)
        let startThread = queue.count - head > idle && threads < maximum
        if startThread { threads += 1 }
        condition.signal()
        condition.unlock()
        if startThread {
            let thread = Thread { [self] in
                // The name `ps -L` and /proc show (at most 15 bytes; Foundation's `Thread.name` does not set
                // it on Linux): a thread count can then say whose threads it counts.
                try? Data(name.utf8.prefix(15)).write(to: URL(fileURLWithPath: "/proc/thread-self/comm"))
                serve()
            }
            thread.name = name
            thread.start()
        }
    }

    /// A thread's life: take the oldest work, run it, wait for more; end when none came for `idleSeconds`.
    private func serve() {
        condition.lock()
        while true {
            while head == queue.count {
                idle += 1
                let woken = condition.wait(until: Date(timeIntervalSinceNow: idleSeconds))
                idle -= 1
                if !woken, head == queue.count {
                    threads -= 1
                    condition.unlock()
                    return
                }
            }
            let work = queue[head]
            head += 1
            // Taken work leaves the array once it is half of it: a queue never empty stays bounded.
            if head * 2 >= queue.count {
                queue.removeFirst(head)
                head = 0
            }
            condition.unlock()
            work()
            condition.lock()
        }
    }
}
