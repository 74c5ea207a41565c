import Foundation
import XCTest

/// `caregate serve` as its own process on 127.0.0.1, on a free port, with the given store and key; stopped
/// by ``stop()`` (SIGTERM, a graceful shutdown) or when the object goes away.
public final class AppServerProcess: @unchecked Sendable {
    public let base: URL
    private let running: CLIRunner.Running

    /// Starts the server and waits until `GET /health` answers.
    public static func start(store: String, key: String, extra: [String] = []) throws -> AppServerProcess {
        let port = try FreePort.next()
        let running = try CLIRunner.start(["serve", "--store", store, "--key", key, "--host", "127.0.0.1", "--port", "\(port)"] + extra)
        guard let base = URL(string: "http://127.0.0.1:\(port)") else { throw FreePort.Failure(description: "bad port") }
        let server = AppServerProcess(base: base, running: running)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            guard running.isRunning else {
                throw FreePort.Failure(description: "caregate serve exited: \(running.standardErrorSoFar)")
            }
            if let data = try? Data(contentsOf: base.appendingPathComponent("health")), String(decoding: data, as: UTF8.self).contains("ok") {
                return server
            }
            usleep(100_000)
        }
        server.stop()
        throw FreePort.Failure(description: "caregate serve did not answer within 60 s: \(running.standardErrorSoFar)")
    }

    private init(base: URL, running: CLIRunner.Running) {
        self.base = base
        self.running = running
    }

    deinit { stop() }

    /// Ends the server with SIGKILL (no shutdown: what a crash or the OOM killer does) and waits for it.
    public func kill() {
        guard running.isRunning else { return }
        running.kill()
        _ = try? running.wait()
    }

    /// The server's process id (to read its /proc entry: threads, descriptors).
    public var processIdentifier: Int32 { running.processIdentifier }

    /// Stops the server and returns what it printed.
    @discardableResult
    public func stop() -> CLIRunner.Result? {
        guard running.isRunning else { return nil }
        running.terminate()
        return try? running.wait()
    }
}

/// A TCP port free on 127.0.0.1 (bound, read, released: the server binds it right after).
public enum FreePort {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static func next() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "no socket") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        guard bound == 0 else { throw Failure(description: "cannot bind a port") }
        let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        guard named == 0 else { throw Failure(description: "cannot read the port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
