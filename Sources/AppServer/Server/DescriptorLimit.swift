#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open files, which every connection counts against: a cap on connections above
/// it would let strangers take the descriptors the store and the audit trail need.
enum DescriptorLimit {
    /// Descriptors kept for what is not a connection: the store's connections, its lock and audit files,
    /// the listening socket, the log.
    static let reserve = 256

    /// Raises the soft limit toward `needed` (never above the hard limit); answers the soft limit then.
    static func raise(toward needed: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return needed }
        let wanted = rlim_t(max(0, needed))
        if limit.rlim_cur < wanted {
            var raised = limit
            raised.rlim_cur = min(wanted, limit.rlim_max)
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }

    /// `limits` with its connection cap lowered, if need be, to what the descriptors allow; and a warning
    /// saying so.
    static func fitted(_ limits: ServerLimits) -> (ServerLimits, warning: String?) {
        let available = raise(toward: limits.maxConnections + reserve) - reserve
        guard available < limits.maxConnections else { return (limits, nil) }
        var fitted = limits
        fitted.maxConnections = max(1, available)
        return (fitted, "the open-file limit allows \(fitted.maxConnections) connections, not \(limits.maxConnections): the cap is lowered")
    }
}
