import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TestSupport
import XCTest

/// `caregate serve` on a PostgreSQL store (a real server the test starts): the app API answers from the
/// database, the audit trail goes into it and `caregate audit` reads it back, and the URL's password
/// shows nowhere in what the server prints.
final class PostgresServeCLITests: XCTestCase {
    func testServeAnswersAppsFromAPostgreSQLStore() throws {
        let folder = try makeScratchFolder("postgres-serve")
        let server = try PostgresServerProcess.start()
        defer { server.stop() }
        let store = "postgres://\(server.user)@\(server.host):\(server.port)/\(server.database)?sslmode=disable&connect_timeout=5"
        let environment = ["PGPASSWORD": server.password]
        let key = folder.appendingPathComponent("server.key").path
        let generated = try CLIRunner.start(["store", "generate", "--store", store, "--patients", "2", "--tasks", "2", "--days", "2"], environment: environment).wait()
        XCTAssertEqual(generated.status, 0, generated.stderr)
        let issued = try CLIRunner.start(["patients", "token", "--store", store, "--key", key, "--patient", "patient-1"], environment: environment).wait()
        XCTAssertEqual(issued.status, 0, issued.stderr)
        let token = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        // The serving process gets the password in the URL (it inherits no PGPASSWORD from the test).
        let withPassword = "postgres://\(server.user):\(server.password)@\(server.host):\(server.port)/\(server.database)?sslmode=disable&connect_timeout=5"
        let app = try AppServerProcess.start(store: withPassword, key: key)
        let (ready, _) = try Self.get(app.base.appendingPathComponent("health/ready"), token: nil)
        XCTAssertEqual(ready, 200, "ready: the store answers a read (no file to watch)")
        let (status, body) = try Self.get(app.base.appendingPathComponent("carekit/v1/tasks"), token: token)
        XCTAssertEqual(status, 200, String(decoding: body, as: UTF8.self))
        let tasks = try JSONSerialization.jsonObject(with: body) as? [Any]
        XCTAssertEqual(tasks?.count, 2, "patient-1's two tasks")
        let stopped = app.stop()
        XCTAssertFalse(((stopped?.stdout ?? "") + (stopped?.stderr ?? "")).contains(server.password), "the server printed the password")

        // The trail is in the database: `caregate audit` reads it back.
        let audit = try CLIRunner.start(["audit", "--store", store, "--format", "json"], environment: environment).wait()
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let entries = try JSONSerialization.jsonObject(with: Data(audit.stdout.utf8)) as? [[String: Any]]
        XCTAssertEqual(entries?.last?["action"] as? String, "GET /carekit/v1/tasks")
        XCTAssertEqual(entries?.last?["patientID"] as? String, "patient-1")
    }

    /// One GET, waited for: its status and body.
    private static func get(_ url: URL, token: String?) throws -> (Int, Data) {
        var request = URLRequest(url: url)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var answer: (Int, Data)?
        nonisolated(unsafe) var failure: (any Error)?
        URLSession.shared.dataTask(with: request) { data, response, error in
            answer = ((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data())
            failure = error
            done.signal()
        }.resume()
        done.wait()
        if let failure { throw failure }
        return answer ?? (0, Data())
    }
}
