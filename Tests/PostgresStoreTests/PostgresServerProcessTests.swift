import Foundation
import TestSupport
import XCTest

/// The tests' PostgreSQL server: it starts in a private folder on a free port of 127.0.0.1, takes its
/// superuser's password over TCP (and refuses a wrong one), and is gone after ``PostgresServerProcess/stop()``.
final class PostgresServerProcessTests: XCTestCase {
    func testAServerStartsAnswersWithThePasswordAndStops() throws {
        let server = try PostgresServerProcess.start()
        XCTAssertEqual(try server.psql("SELECT current_database() || ' ' || current_user").trimmingCharacters(in: .whitespacesAndNewlines), "caregate_test caregate")
        XCTAssertEqual(try server.psql("SHOW fsync").trimmingCharacters(in: .whitespacesAndNewlines), "off")
        XCTAssertEqual(try server.psql("SHOW listen_addresses").trimmingCharacters(in: .whitespacesAndNewlines), "127.0.0.1")
        XCTAssertTrue(FileManager.default.fileExists(atPath: server.socketFolder + "/.s.PGSQL.\(server.port)"))
        try server.createDatabase("second")
        XCTAssertEqual(try server.psql("SELECT 1", database: "second").trimmingCharacters(in: .whitespacesAndNewlines), "1")

        let port = server.port
        server.stop()
        server.stop()
        XCTAssertFalse(FileManager.default.fileExists(atPath: server.socketFolder), "the folder is removed")
        XCTAssertFalse(Self.accepts(port: port), "nothing listens on \(port) after stop()")
    }

    func testTwoServersRunSideBySide() throws {
        let first = try PostgresServerProcess.start()
        let second = try PostgresServerProcess.start()
        XCTAssertNotEqual(first.port, second.port)
        _ = try first.psql("CREATE TABLE only_here (id int)")
        XCTAssertEqual(try second.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'only_here'").trimmingCharacters(in: .whitespacesAndNewlines), "0")
    }

    /// Whether something accepts a TCP connection on 127.0.0.1:`port`.
    private static func accepts(port: Int) -> Bool {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } } == 0
    }
}
