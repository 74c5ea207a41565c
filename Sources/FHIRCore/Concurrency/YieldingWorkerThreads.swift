import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How the workers of an ``OrderedParallelMap`` run share the cores with the process's other threads.
public enum WorkerPriority: Sendable {
    /// Like any other thread of the process: Dispatch's global pool.
    case normal
    /// Behind the process's other threads: threads of the run's own, which end with it, each at a nice
    /// value ``YieldingWorkerThreads/niceness`` above the process's (Linux schedules threads, and nice
    /// values, one by one). For workers that run ahead of a slower stage on another thread, such as an
    /// import's one store writer: with as many busy threads as cores or more, a thread at the same
    /// priority gets its share of a core, and the slowest stage then runs at half speed while the
    /// workers it waits for fill their window and stop; behind it, the workers take what it leaves.
    case yielding
}

/// The threads of one ``WorkerPriority/yielding`` run: each takes jobs in the order given until
/// ``finish()``. Threads of their own rather than Dispatch's pool, because a process may raise a
/// thread's nice value but, unprivileged, never lower it again: a pool thread would stay behind after
/// the run, whatever it ran next.
final class YieldingWorkerThreads: @unchecked Sendable {
    /// How far below the process's other threads the workers run: at nice +5 a thread weighs about a
    /// third of one at +0 when both want a core (Linux's fair scheduler), so that the stage they feed
    /// runs nearly unhindered while they still progress.
    static let niceness: Int32 = 5

    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var next = 0
    private var closed = false
    private let ended = DispatchGroup()

    init(count: Int) {
        for _ in 0..<max(1, count) {
            ended.enter()
            let thread = Thread { [self] in
                Self.yield(by: Self.niceness)
                work()
                ended.leave()
            }
            thread.start()
        }
    }

    /// Queues `job` for the next free thread.
    func submit(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the threads end once the queued jobs are done, and waits for them.
    func finish() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
        ended.wait()
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
            if next == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                next = 0
            }
            condition.unlock()
            job()
        }
    }

    /// Raises the calling thread's nice value by `amount` (up to 19). Only on Linux, where a nice value
    /// is a thread's own; elsewhere, and when the thread cannot be named, it runs as it is.
    static func yield(by amount: Int32) {
        #if os(Linux)
        guard let thread = currentThreadID() else { return }
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        errno = 0
        let current = getpriority(which, id_t(thread))
        guard errno == 0 else { return }
        _ = setpriority(which, id_t(thread), min(19, current + amount))
        #endif
    }

    /// The kernel's id of the calling thread (what `gettid` returns, which Swift does not import):
    /// the last component of `/proc/thread-self`.
    static func currentThreadID() -> Int32? {
        #if os(Linux)
        var buffer = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let target = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return target.split(separator: "/").last.flatMap { Int32($0) }
        #else
        return nil
        #endif
    }
}
