import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How the workers of an ``OrderedParallelMap`` run share the cores with the process's other threads.
public enum WorkerPriority: Sendable {
    /// Like any other thread of the process: Dispatch's global pool.
    case normal
    /// Behind the process's other threads: threads of the run's own, joined when it ends, each at a
    /// nice value `YieldingWorkerThreads/niceness` above the caller's (Linux schedules threads, and
    /// nice values, one by one). For workers that run ahead of a slower stage on another thread, such as
    /// an import's one store writer: with as many busy threads as cores or more, a thread at the same
    /// priority gets its share of a core, and the slowest stage then runs at half speed while the
    /// workers it waits for fill their window and stop; behind it, the workers take what it leaves.
    ///
    /// A run with one worker runs on the calling thread, as with `.normal`; where no thread can be
    /// started, the run takes Dispatch's pool.
    case yielding
}

/// The threads of one ``WorkerPriority/yielding`` run: each takes jobs in the order given until
/// ``finish()``, which joins them. Threads of their own rather than Dispatch's pool, because a process
/// may raise a thread's nice value but, unprivileged (with the default `RLIMIT_NICE` of 0), never lower
/// it again: a pool thread would stay behind after the run, whatever it ran next.
// Unchecked: its queue and counters are touched only while `condition` is locked (workers sleep on it
// until a job or the end comes, which Mutex cannot do); the thread handles only by the owner.
final class YieldingWorkerThreads: @unchecked Sendable {
    /// How far behind the caller the workers run: at nice +5 a thread weighs about a third of one at +0
    /// when both want a core (Linux's fair scheduler), so that the stage they feed runs nearly
    /// unhindered while they still progress.
    static let niceness: Int32 = 5

    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var next = 0
    private var closed = false
    private var threads: [pthread_t] = []

    /// Starts up to `count` threads; nil when the system starts none (at its limit of threads), so
    /// that the caller runs the work elsewhere rather than waiting for threads that never come.
    init?(count: Int) {
        for _ in 0..<max(1, count) {
            let context = Unmanaged.passRetained(self).toOpaque()
            var thread = pthread_t()
            guard pthread_create(&thread, nil, { context in
                guard let context else { return nil }
                let workers = Unmanaged<YieldingWorkerThreads>.fromOpaque(context).takeRetainedValue()
                YieldingWorkerThreads.yield(by: YieldingWorkerThreads.niceness)
                workers.work()
                return nil
            }, context) == 0 else {
                Unmanaged<YieldingWorkerThreads>.fromOpaque(context).release()
                break
            }
            threads.append(thread)
        }
        guard !threads.isEmpty else { return nil }
    }

    /// Queues `job` for the next free thread.
    func submit(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the threads end once the queued jobs are done, and joins them.
    func finish() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
        for thread in threads { pthread_join(thread, nil) }
        threads = []
    }

    private func work() {
        while true {
            condition.lock()
            while next == jobs.count && !closed { condition.wait() }
            guard next < jobs.count else {
                condition.unlock()
                return
            }
            let job = jobs[next]
            next += 1
            // Done jobs leave the queue once they are half of it: the caller keeps a window of jobs
            // ahead, so the queue is rarely empty before the run ends.
            if next >= 64 && next * 2 >= jobs.count {
                jobs.removeFirst(next)
                next = 0
            }
            condition.unlock()
            job()
        }
    }

    /// Raises the calling thread's nice value by `amount` (up to 19). On Linux a nice value is a
    /// thread's own, and `who` 0 names the calling thread; elsewhere the thread runs as it is.
    static func yield(by amount: Int32) {
        #if os(Linux)
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        errno = 0
        let current = getpriority(which, 0)
        guard errno == 0 else { return }
        _ = setpriority(which, 0, min(19, current + amount))
        #endif
    }
}
