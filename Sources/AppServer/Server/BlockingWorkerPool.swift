import Foundation

/// A fixed number of threads for work that may block (a push waiting for the store's writer), fed by a
/// queue: work beyond the threads waits in the queue as a closure, holding no thread.
///
/// Dispatch's concurrent queues start another thread whenever every running one is blocked, so a burst of
/// pushes each waiting for the store's lock grew the thread count without bound; Swift's cooperative pool
/// must never block at all. Threads start on demand, up to ``limit``, and stay for the next work.
///
/// ```swift
/// let pool = BlockingWorkerPool(name: "caregate.serve.store-write", limit: 4)
/// pool.submit { try? store.withAppendLease("push") { ... } }
/// ```
final class BlockingWorkerPool: @unchecked Sendable {
    private let name: String
    private let condition = NSCondition()
    /// Guarded by `condition`: work not yet taken by a thread, oldest first.
    private var queue: [@Sendable () -> Void] = []
    private var head = 0
    /// Guarded by `condition`.
    private var threads = 0
    private var idle = 0
    private var maximum: Int

    init(name: String, limit: Int) {
        self.name = name
        maximum = max(1, limit)
    }

    /// The most threads the pool runs; lowering it stops no thread already started.
    var limit: Int {
        get { condition.withLock { maximum } }
        set { condition.withLock { maximum = max(1, newValue) } }
    }

    /// Runs `work` on one of the pool's threads, after the work submitted before it has started.
    func submit(_ work: @escaping @Sendable () -> Void) {
        condition.lock()
        queue.append(work)
        let startThread = queue.count - head > idle && threads < maximum
        if startThread { threads += 1 }
        condition.signal()
        condition.unlock()
        if startThread {
            let thread = Thread { [self] in serve() }
            thread.name = name
            thread.start()
        }
    }

    /// A thread's life: take the oldest work, run it, wait for more.
    private func serve() {
        condition.lock()
        while true {
            while head == queue.count {
                idle += 1
                condition.wait()
                idle -= 1
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
