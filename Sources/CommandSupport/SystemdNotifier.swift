import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// systemd's readiness protocol (`sd_notify(3)`), for services of `Type=notify`: the service tells the
/// service manager it is ready (`READY=1`), stopping (`STOPPING=1`), reloading its configuration
/// (`RELOADING=1`) and alive (`WATCHDOG=1`, when the unit sets `WatchdogSec=`), as datagrams to the
/// socket named by `NOTIFY_SOCKET`. Outside systemd (no `NOTIFY_SOCKET`) every call does nothing.
///
/// Written from the protocol's description rather than linking libsystemd: a datagram of
/// newline-separated assignments to an `AF_UNIX` socket, whose name starting with `@` is in the
/// abstract namespace.
public enum SystemdNotifier {
    /// Sends `assignments` (such as `READY=1`) to the service manager; false when there is none or the
    /// datagram could not be sent (which a service ignores: it must run the same outside systemd).
    @discardableResult
    public static func notify(_ assignments: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let name = environment["NOTIFY_SOCKET"], !name.isEmpty else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(name.utf8)
        // An abstract socket's name starts with a NUL where the environment has `@`.
        if path.first == UInt8(ascii: "@") { path[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.first == 0 || path.first == UInt8(ascii: "/"), path.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.enumerated() { bytes[index] = byte }
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count)
        let message = Array(assignments.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
            }
        }
        return sent == message.count
    }

    /// The service is ready: it serves, or its first run starts.
    public static func ready(status: String? = nil) { notify("READY=1" + (status.map { "\nSTATUS=\($0)" } ?? "")) }

    /// The service stops: what is under way finishes, then it exits.
    public static func stopping() { notify("STOPPING=1") }

    /// The service reloads its configuration; ``ready(status:)`` follows when it has. systemd 253 and
    /// later (`Type=notify-reload`) want the monotonic clock's time with it.
    public static func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
        notify("RELOADING=1\nMONOTONIC_USEC=\(microseconds)")
    }

    /// How often the service must say it is alive (half the unit's `WatchdogSec=`, as `sd_watchdog_enabled(3)`
    /// advises), or nil when no watchdog watches this process.
    public static func watchdogInterval(environment: [String: String] = ProcessInfo.processInfo.environment) -> TimeInterval? {
        guard let text = environment["WATCHDOG_USEC"], let microseconds = UInt64(text), microseconds > 0,
              microseconds < 86_400 * 1_000_000 * 365
        else { return nil }
        if let pid = environment["WATCHDOG_PID"], Int32(pid) != getpid() { return nil }
        return TimeInterval(microseconds) / 2_000_000
    }
}

/// Says `WATCHDOG=1` at most once per half watchdog period, from wherever the service shows it is making
/// progress (a run's phases, the wait between runs): a process stuck in one place stops saying it, and
/// systemd restarts it. Does nothing when no watchdog is set.
public final class SystemdWatchdog: @unchecked Sendable {
    private let interval: TimeInterval?
    private let lock = NSLock()
    private var last = Date.distantPast

    public init(interval: TimeInterval? = SystemdNotifier.watchdogInterval()) {
        self.interval = interval
    }

    /// Says the process is alive, when half a period has passed since it last did.
    public func alive(now: Date = Date()) {
        guard let interval else { return }
        let due = lock.withLock { () -> Bool in
            guard now.timeIntervalSince(last) >= interval else { return false }
            last = now
            return true
        }
        if due { SystemdNotifier.notify("WATCHDOG=1") }
    }
}
