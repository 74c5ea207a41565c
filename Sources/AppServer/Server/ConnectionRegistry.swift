import Dispatch
import Foundation
import HummingbirdCore
import NIOCore

/// The app server's open connections: how many there are, and which are idle (no request under way), so
/// that at the connection cap the idle ones are closed to let in the connections waiting in the backlog.
///
/// Hummingbird's accept handler (on the listening channel) asks ``isAccepting()`` before each accept and
/// again whenever a connection closes; while it answers false the listening socket is not read, and new
/// connections wait in the kernel's backlog. Each connection's ``ConnectionGuard`` reports its requests.
/// Without shedding, thousands of connections that never send anything would hold every place until
/// their idle timeout, and one stranger could keep a fresh client out for as long as they liked.
///
/// ## Topics
///
/// - ``opened()``, ``closed()``, ``isAccepting()``: the accept side (``ConnectionCap``).
/// - ``register(_:)``, ``unregister(_:)``, ``requestStarted(_:)``, ``requestAnswered(_:)``: a connection's side.
final class ConnectionRegistry: @unchecked Sendable {
    private struct Entry {
        let channel: any Channel
        /// Requests read and not yet answered.
        var requests = 0
        var idleSince: NIODeadline
    }

    let maximum: Int
    private let grace: TimeAmount
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var open = 0
    private var entries: [ObjectIdentifier: Entry] = [:]
    private var sweepPending = false

    init(maximum: Int, graceAtCapacity: TimeAmount) {
        self.maximum = max(1, maximum)
        grace = graceAtCapacity
    }

    // MARK: Accepting

    func opened() { lock.withLock { open += 1 } }

    func closed() { lock.withLock { open -= 1 } }

    /// Whether another connection may be accepted; at the cap, starts shedding idle connections.
    func isAccepting() -> Bool {
        let (full, sweep) = lock.withLock { () -> (Bool, Bool) in
            let full = open >= maximum
            guard full, !sweepPending else { return (full, false) }
            sweepPending = true
            return (true, true)
        }
        if sweep { DispatchQueue.global().async { self.sweep() } }
        return !full
    }

    /// Closes every connection idle for at least the grace; while the cap is still reached and none was,
    /// looks again after the grace.
    private func sweep() {
        let cutoff = NIODeadline.now() - grace
        let idle = lock.withLock { entries.values.filter { $0.requests == 0 && $0.idleSince <= cutoff }.map(\.channel) }
        for channel in idle {
            // On the connection's own loop, where its requests are read: one whose request came in since is kept.
            channel.eventLoop.execute {
                if self.isIdle(ObjectIdentifier(channel), since: cutoff) { channel.close(promise: nil) }
            }
        }
        let again = lock.withLock { () -> Bool in
            sweepPending = idle.isEmpty && open >= maximum
            return sweepPending
        }
        if again {
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(grace.nanoseconds))) { self.sweep() }
        }
    }

    private func isIdle(_ id: ObjectIdentifier, since cutoff: NIODeadline) -> Bool {
        lock.withLock { entries[id].map { $0.requests == 0 && $0.idleSince <= cutoff } ?? false }
    }

    // MARK: A connection's requests

    func register(_ channel: any Channel) {
        lock.withLock { entries[ObjectIdentifier(channel)] = Entry(channel: channel, idleSince: .now()) }
    }

    func unregister(_ id: ObjectIdentifier) { _ = lock.withLock { entries.removeValue(forKey: id) } }

    func requestStarted(_ id: ObjectIdentifier) { lock.withLock { entries[id]?.requests += 1 } }

    func requestAnswered(_ id: ObjectIdentifier) {
        lock.withLock {
            guard var entry = entries[id] else { return }
            entry.requests = max(0, entry.requests - 1)
            if entry.requests == 0 { entry.idleSince = .now() }
            entries[id] = entry
        }
    }
}

/// Hummingbird's hook on the listening channel, answered by a ``ConnectionRegistry``.
struct ConnectionCap: AvailableConnectionsDelegate {
    let registry: ConnectionRegistry

    mutating func connectionOpened() { registry.opened() }
    mutating func connectionClosed() { registry.closed() }
    func isAcceptingNewConnections() -> Bool { registry.isAccepting() }
}
