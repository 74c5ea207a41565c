import Foundation
import Logging
@testable import PostgresStore
import Store
import TestSupport
import XCTest

/// The sessions that hold the store's locks (``PostgresLockSession``) on a real server: what makes the
/// server free a vanished holder's locks within a bound. Keepalives on both ends of the socket (seen in
/// the kernel's table of TCP sockets), and no server timeout that would end an idle holder's session.
final class PostgresLockSessionTests: XCTestCase {
    func testALockSessionKeepsAliveOnBothEndsAndNeverTimesOut() throws {
        let server = try PostgresServerProcess.start()
        defer { server.stop() }
        guard case .postgres(let location) = try StoreLocation.parse(server.url) else { throw XCTSkip("not PostgreSQL") }
        // A server that ends idle sessions after 1 s must not end this one.
        _ = try server.psql("ALTER DATABASE \(server.database) SET idle_session_timeout = '1s'")
        let database = try PostgresStore.PostgresDatabase(location: location, environment: [:], timeout: .seconds(120))
        defer { database.close() }
        let session = PostgresLockSession(location: location)
        let logger = Logger(label: "test")
        let (settings, clientPort) = try database.run { _ -> ([String], Int) in
            let connection = try await session.open()
            let settings = try await connection.values(
                """
                SELECT name || '=' || setting FROM pg_settings
                WHERE name IN ('tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', 'tcp_user_timeout',
                               'client_connection_check_interval', 'idle_session_timeout', 'statement_timeout',
                               'idle_in_transaction_session_timeout')
                ORDER BY name
                """, as: String.self, logger: logger)
            let port = try await connection.values("SELECT inet_client_port()", as: Int32.self, logger: logger).first ?? 0
            return (settings, Int(port))
        }
        XCTAssertEqual(settings, [
            "client_connection_check_interval=1000", "idle_in_transaction_session_timeout=0", "idle_session_timeout=0", "statement_timeout=0",
            "tcp_keepalives_count=3", "tcp_keepalives_idle=10", "tcp_keepalives_interval=5", "tcp_user_timeout=25000",
        ])
        // Both ends of the idle connection run the kernel's keepalive timer (timer kind 2 in /proc/net/tcp).
        XCTAssertEqual(try Self.settledTimerKind(local: clientPort, remote: server.port), 2, "the client's end keeps alive")
        XCTAssertEqual(try Self.settledTimerKind(local: server.port, remote: clientPort), 2, "the server's end keeps alive")

        Thread.sleep(forTimeInterval: 2)
        let alive = try database.run { _ in try await session.open().values("SELECT 1", as: Int32.self, logger: logger) }
        XCTAssertEqual(alive, [1], "the session outlived the server's idle_session_timeout")
        XCTAssertEqual(try Self.settledTimerKind(local: clientPort, remote: server.port), 2, "the same connection: no reconnect")
        _ = try database.run { _ in
            await session.close()
            return true
        }
    }

    func testALockSessionOpensOverTheServersUnixSocket() throws {
        let server = try PostgresServerProcess.start()
        defer { server.stop() }
        let url = "postgres://\(server.user)@/\(server.database)?host=\(server.socketFolder)&port=\(server.port)"
        guard case .postgres(let location) = try StoreLocation.parse(url) else { throw XCTSkip("not PostgreSQL") }
        let database = try PostgresStore.PostgresDatabase(location: location, environment: [:], timeout: .seconds(120))
        defer { database.close() }
        let lease = PostgresWriterLease(location: location, database: database, environment: [:], busyTimeout: 5)
        defer { lease.close() }
        XCTAssertEqual(try lease.withWriterLease("caregate import") {
            try server.psql("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND l.granted AND a.client_port = -1")
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }, "2", "the lease and the gate, held by a session on the Unix socket (client_port -1)")
    }

    /// The socket's timer once it shows keepalive (2), else the last seen within 10 s: a moment after an
    /// answer an end waits for the ACK (1, retransmit), and a read of the table may miss a line.
    private static func settledTimerKind(local: Int, remote: Int) throws -> Int? {
        let end = Date().addingTimeInterval(10)
        var kind = try timerKind(local: local, remote: remote)
        while kind != 2, Date() < end {
            usleep(20_000)
            kind = try timerKind(local: local, remote: remote)
        }
        return kind
    }

    /// The `tr` column of the established 127.0.0.1 socket from `local` to `remote` in /proc/net/tcp
    /// (0 no timer, 1 retransmit, 2 keepalive).
    private static func timerKind(local: Int, remote: Int) throws -> Int? {
        // Read to its end by hand: procfs says its size is 0, and a one-read reader gets the first page only.
        let descriptor = open("/proc/net/tcp", O_RDONLY)
        guard descriptor >= 0 else { throw XCTSkip("no /proc/net/tcp") }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        let table = String(decoding: bytes, as: UTF8.self)
        let localAddress = String(format: "0100007F:%04X", local)
        let remoteAddress = String(format: "0100007F:%04X", remote)
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 5, fields[1] == localAddress, fields[2] == remoteAddress, fields[3] == "01" else { continue }
            return Int(fields[5].split(separator: ":")[0], radix: 16)
        }
        return nil
    }
}
