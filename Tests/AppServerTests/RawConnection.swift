import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP connection to 127.0.0.1 driven byte by byte, for what HTTP clients will not do: stay silent,
/// trickle a head or a body, or never finish a request.
final class RawConnection {
    private(set) var descriptor: Int32

    /// Connects to `port`; with `waiting` false, returns at once (the connection may still be in the
    /// server's backlog).
    init(port: Int, waiting: Bool = true) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure("socket: errno \(errno)") }
        if !waiting { _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK) }
        // A send the server stops reading gives up (``send(_:)`` answers false) rather than block the test.
        var patience = timeval(tv_sec: 20, tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &patience, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 || (!waiting && errno == EINPROGRESS) else {
            close(descriptor)
            throw Failure("connect: errno \(errno)")
        }
    }

    deinit { close(descriptor) }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Sends `text`; false when the server has closed the connection, or read nothing for 20 s.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// Whether the server has closed the connection (end of stream or reset) within `seconds`; bytes it
    /// answers first are read and skipped.
    func isClosedByServer(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            guard readable(within: min(1, deadline.timeIntervalSinceNow)) else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) { return true }
        }
        return false
    }

    /// Whether bytes (or the end) are waiting to be read within `seconds`.
    func readable(within seconds: Double) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, Int32(max(0, seconds * 1000))) > 0
    }

    /// Everything the server sends until it closes the connection or `seconds` pass.
    func readToEnd(within seconds: Double) -> String {
        let deadline = Date().addingTimeInterval(seconds)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            guard readable(within: min(1, deadline.timeIntervalSinceNow)) else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}
