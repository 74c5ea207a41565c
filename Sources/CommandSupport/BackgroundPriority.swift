#if canImport(Glibc)
import Glibc
#endif

/// Makes the command a background job: on Linux its threads get a CPU only when nothing else wants one
/// (the `SCHED_IDLE` policy, as `chrt --idle 0` gives), so that a server on the same machine
/// (`caregate serve`) answers as if the job were not there. The job itself runs as fast as before on an
/// idle machine, and longer on a busy one.
///
/// Threads inherit their creator's policy, so it is set before the command starts any (its thread pool
/// included); it cannot be undone by the process, which is the point.
public enum BackgroundPriority {
    /// `SCHED_IDLE` of Linux's `<linux/sched.h>` (part of its stable ABI), which Swift's Glibc module does
    /// not bring in.
    private static let idlePolicy: Int32 = 5

    /// Puts the calling thread, and every thread it starts from now on, in the background.
    /// - Throws: ``CommandFailure`` (exit status 2) where the system refuses or has no such policy.
    public static func enter() throws {
        #if os(Linux)
        var parameters = sched_param()
        parameters.sched_priority = 0
        guard sched_setscheduler(0, idlePolicy, &parameters) == 0 else {
            throw CommandFailure("a background job: the system refused the idle CPU policy (\(String(cString: strerror(errno))))", status: 2)
        }
        #else
        throw CommandFailure("a background job: only Linux has the idle CPU policy", status: 2)
        #endif
    }
}
