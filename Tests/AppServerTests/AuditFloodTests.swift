import AppServer
import CareModel
import Foundation
import Hummingbird
import HummingbirdTesting
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// Issue 41, item 8: the audit trail stays bounded under attack. Requests refused without a valid token
/// are counted per minute, route pattern, status and reason instead of written one row each; the rest is
/// pruned past a retention; `caregate audit --stats` shows the size. Item 9: a client hanging up mid-upload
/// is audited as 499 `client closed`, not 500, and logs no error line.
final class AuditFloodTests: XCTestCase {
    /// The refusal counts of `store` once they add up to `expected` (the server writes them within about a
    /// second of the requests; waits at most a minute).
    static func refusalsCounted(_ expected: Int, in store: any AppSyncStore) throws -> [AuditRefusalCount] {
        let deadline = Date().addingTimeInterval(60)
        var counts = try store.auditRefusals(limit: 100_000)
        while counts.reduce(0, { $0 + $1.count }) < expected, Date() < deadline {
            usleep(50_000)
            counts = try store.auditRefusals(limit: 100_000)
        }
        return counts
    }

    /// 10,000 requests without a valid token (none, forged, garbage; on every route, with query strings
    /// and paths a client chose): a bounded number of rows, each a route's pattern, and the count exact.
    /// Before issue 41 each was a row of its own: 10,000 rows.
    func testTenThousandRequestsWithoutAValidTokenAddABoundedNumberOfRows() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            // On SQLite, a file as before: its trail is a file beside the store.
            let fixture = try AppServerFixture(tested)
            try fixture.store.prepareAuditTrail()
            let before = try fixture.store.auditStatistics()
            let good = try fixture.token()
            let headers: [HTTPFields] = [[:], fixture.bearer(String(good.dropLast(4)) + "AAAA"), fixture.bearer("not-a-jwt"), [.authorization: "Basic eDp5"]]
            let routes = RouteTests.patientRoutes
            let total = 10_000
            try await fixture.test { client in
                for index in 0..<total {
                    let (method, uri) = routes[index % routes.count]
                    // A path of the attacker's choosing in the query: never what the trail records.
                    let asked = uri + (uri.contains("?") ? "&" : "?") + "junk=\(index)"
                    try await client.execute(uri: asked, method: method, headers: headers[index % headers.count]) { response in
                        XCTAssertEqual(response.status, .unauthorized)
                    }
                }
            }
            let counts = try Self.refusalsCounted(total, in: fixture.store)
            let after = try fixture.store.auditStatistics()
            XCTAssertEqual(counts.reduce(0) { $0 + $1.count }, total, "every refusal counted")
            XCTAssertEqual(after.entries, before.entries, "no entry of its own per refusal")
            let patterns = Set(routes.map { "\($0.0.rawValue) \($0.1.split(separator: "?")[0])" })
            XCTAssertTrue(counts.allSatisfy { patterns.contains($0.action) }, "\(Set(counts.map(\.action)))")
            // Routes x reasons x the minutes the run spanned: a bound that does not grow with the requests.
            let minutes = Set(counts.map(\.minute)).count
            XCTAssertLessThanOrEqual(after.refusalRows - before.refusalRows, routes.count * headers.count * minutes)
            XCTAssertLessThanOrEqual(minutes, 10)
            print("audit flood: \(total) refused requests -> \(after.entries - before.entries) entries, \(after.refusalRows - before.refusalRows) refusal rows over \(minutes) minute(s); trail \(after.bytes) bytes (before \(before.bytes))")
        }
    }

    /// The counts in memory are bounded too: past the cap of distinct keys, a minute's refusals go under
    /// one `(other)` key.
    func testRefusalCountsAreAddedUpPerMinuteRouteAndReason() throws {
        try forEachStore { tested in
            let store = tested.store
            let minute = AuditRefusalCount.minute(of: Date(timeIntervalSince1970: 1_800_000_030))
            XCTAssertEqual(minute.timeIntervalSince1970, 1_800_000_000 - 1_800_000_000.truncatingRemainder(dividingBy: 60))
            let row = AuditRefusalCount(minute: minute, action: "GET /carekit/v1/tasks", status: 401, reason: "the token has expired", count: 3)
            try store.recordRefusals([row])
            try store.recordRefusals([row, AuditRefusalCount(minute: minute, action: "POST /carekit/v1/revisions", status: 401, reason: "unauthorized", count: 1)])
            let counts = try store.auditRefusals(limit: 10)
            XCTAssertEqual(counts.count, 2)
            XCTAssertEqual(counts.first { $0.action == "GET /carekit/v1/tasks" }?.count, 6)
        }
    }

    /// `prepareAuditTrail(retentionDays:)` (what `serve --audit-retention-days` calls at start) deletes
    /// entries and refusal counts past the retention and keeps the rest; `serve` does the same at start.
    func testRetentionPrunesOldRows() throws {
        try forEachStore(sqliteFile: true) { tested in
            let folder = try makeScratchFolder("audit-retention")
            let path = try XCTUnwrap(tested.location)
            let store = tested.store
            let now = Date()
            let old = now.addingTimeInterval(-40 * 86_400)
            let recent = now.addingTimeInterval(-10 * 86_400)
            var entries: [AuditEntry] = []
            for day in [old, recent] {
                for n in 0..<6_000 {
                    entries.append(AuditEntry(date: day.addingTimeInterval(Double(n)), subject: "p", patientID: "p", action: "GET /carekit/v1/tasks", status: 200, detail: nil))
                }
            }
            try store.recordAudit(entries)
            try store.recordRefusals([
                AuditRefusalCount(minute: AuditRefusalCount.minute(of: old), action: "GET /carekit/v1/tasks", status: 401, reason: "x", count: 9),
                AuditRefusalCount(minute: AuditRefusalCount.minute(of: recent), action: "GET /carekit/v1/tasks", status: 401, reason: "x", count: 2),
            ])
            try store.prepareAuditTrail(retentionDays: 30)
            let statistics = try store.auditStatistics()
            XCTAssertEqual(statistics.entries, 6_000, "the old day's 6,000 entries pruned (in batches), the recent kept")
            XCTAssertEqual(statistics.refusedRequests, 2)
            XCTAssertGreaterThanOrEqual(try XCTUnwrap(statistics.oldest), recent.addingTimeInterval(-1))

            // `caregate serve --audit-retention-days 5` prunes at start.
            let key = folder.appendingPathComponent("server.key").path
            let server = try AppServerProcess.start(store: path, key: key, extra: ["--audit-retention-days", "5"])
            server.stop()
            XCTAssertEqual(try tested.reopen().auditStatistics().entries, 0, "\(tested.kind)")
            XCTAssertEqual(try CLIRunner.run(["serve", "--store", path, "--key", key, "--audit-retention-days", "0"]).status, 2)
        }
    }

    /// A client that sends the head of a push and part of its body, then closes the connection: the trail
    /// says 499 `client closed` (not 500 `internal`), and the server logs no error line for it.
    func testAClientHangingUpMidUploadIsAuditedAsClientClosed() throws {
        try forEachStore(sqliteFile: true) { tested in
            let folder = try makeScratchFolder("audit-hangup")
            let store = try XCTUnwrap(tested.location)
            let key = folder.appendingPathComponent("server.key").path
            _ = try AppServerFixture(tested)
            let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "Patient/pat-1"])
            XCTAssertEqual(issued.status, 0, issued.stderr)
            let token = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try AppServerProcess.start(store: store, key: key, extra: ["--log-level", "debug"])
            let port = try XCTUnwrap(server.base.port)
            for _ in 0..<5 {
                let socket = try RawSocket(port: port)
                try socket.send("POST /carekit/v1/revisions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
                try socket.send(#"{"deviceRevisions": [{"entities": [], "knowledgeVector": {"processes": []}}"# + String(repeating: " ", count: 4_000))
                usleep(200_000)
                socket.close()
            }
            // The server's answer to each waits for its audit commit: a later request's answer follows them.
            let deadline = Date().addingTimeInterval(30)
            var entries: [AuditEntry] = []
            while Date() < deadline {
                entries = try tested.reopen().auditEntries(patientID: "Patient/pat-1", limit: 100)
                    .filter { $0.action == "POST /carekit/v1/revisions" && !$0.isUnanswered }
                if entries.count >= 5 { break }
                usleep(100_000)
            }
            let output = server.stop()
            XCTAssertEqual(entries.count, 5, "\(entries)")
            XCTAssertTrue(entries.allSatisfy { $0.status == 499 && $0.detail?.hasPrefix("client closed") == true }, "\(entries.map { "\($0.status) \($0.detail ?? "")" })")
            let log = (output?.stdout ?? "") + (output?.stderr ?? "")
            // At debug level (the server runs with --log-level debug): one debug line each, no error line.
            XCTAssertFalse(log.contains("request failed"), log)
            XCTAssertFalse(log.contains(" error caregate"), log)
            XCTAssertEqual(log.components(separatedBy: " debug caregate.serve: ").count - 1 >= 5, true, log)
            XCTAssertTrue(log.contains("client closed the connection mid-request"), log)
        }
    }
}

/// A TCP connection to 127.0.0.1 that sends what it is given, for requests no HTTP client would make.
final class RawSocket {
    struct Failure: Error {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private var descriptor: Int32

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RawSocket.Failure( "no socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Foundation.close(descriptor)
            throw RawSocket.Failure( "cannot connect to port \(port)")
        }
    }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes { Foundation.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw RawSocket.Failure( "send failed") }
            sent += written
        }
    }

    func close() {
        guard descriptor >= 0 else { return }
        Foundation.close(descriptor)
        descriptor = -1
    }

    deinit { close() }
}
