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
    func testServeAnswersAppsFromAPostgreSQLStoreAsFromSQLite() throws {
        let folder = try makeScratchFolder("postgres-serve")
        let server = try PostgresServerProcess.start()
        defer { server.stop() }
        let store = "postgres://\(server.user)@\(server.host):\(server.port)/\(server.database)?sslmode=disable&connect_timeout=5"
        // The serving process gets the password in the URL (it inherits no PGPASSWORD from the test).
        let withPassword = "postgres://\(server.user):\(server.password)@\(server.host):\(server.port)/\(server.database)?sslmode=disable&connect_timeout=5"
        let postgres = try tasksServed(store: store, serving: withPassword, environment: ["PGPASSWORD": server.password], in: folder, hiding: server.password)
        let sqlitePath = folder.appendingPathComponent("care.sqlite").path
        let sqlite = try tasksServed(store: sqlitePath, serving: sqlitePath, environment: [:], in: folder, hiding: server.password)
        XCTAssertFalse(sqlite.isEmpty, "the patient has tasks")
        XCTAssertEqual(postgres, sqlite, "the same tasks, served from either store")

        // The trail is in the database: `caregate audit` reads it back.
        let audit = try CLIRunner.start(["audit", "--store", store, "--format", "json"], environment: ["PGPASSWORD": server.password]).wait()
        XCTAssertEqual(audit.status, 0, audit.stderr)
        let entries = try JSONSerialization.jsonObject(with: Data(audit.stdout.utf8)) as? [[String: Any]]
        XCTAssertEqual(entries?.last?["action"] as? String, "GET /carekit/v1/tasks")
        XCTAssertEqual(entries?.last?["patientID"] as? String, "Patient/pat-1")
    }

    /// An app's readings pushed through `caregate serve` are stored by its write threads on PostgreSQL as on
    /// SQLite: the same counts stored, then known when sent again, and the same outbox entries queued.
    func testReadingsPushedThroughServeAreStoredInPostgreSQLAsInSQLite() throws {
        let folder = try makeScratchFolder("postgres-serve-push")
        let server = try PostgresServerProcess.start()
        defer { server.stop() }
        let store = "postgres://\(server.user)@\(server.host):\(server.port)/\(server.database)?sslmode=disable&connect_timeout=5"
        let withPassword = "postgres://\(server.user):\(server.password)@\(server.host):\(server.port)/\(server.database)?sslmode=disable&connect_timeout=5"
        let week = try Data(contentsOf: Corpus.projectRoot.appendingPathComponent("Fixtures/readings/week.json"))
        func pushTwice(_ base: URL, _ token: String) throws -> [String] {
            try (0..<2).map { _ in
                let (status, body) = try Self.send(base.appendingPathComponent("carekit/v1/observations"), token: token, body: week)
                XCTAssertEqual(status, 200, String(decoding: body, as: UTF8.self))
                let answer = try JSONSerialization.jsonObject(with: body) as? [String: Any]
                return "stored \(answer?["stored"] ?? "-"), known \(answer?["known"] ?? "-")"
            }
        }
        let environment = ["PGPASSWORD": server.password]
        let postgres = try served(store: store, serving: withPassword, environment: environment, in: folder, hiding: server.password, pushTwice)
        let sqlitePath = folder.appendingPathComponent("care.sqlite").path
        let sqlite = try served(store: sqlitePath, serving: sqlitePath, environment: [:], in: folder, hiding: server.password, pushTwice)
        XCTAssertEqual(postgres, sqlite)
        // The outbox's lines, each uuid made `<uuid>` (each store made its own).
        let uuid = try NSRegularExpression(pattern: "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
        let queued = try [(store, environment), (sqlitePath, [:])].map { store, environment in
            let listed = try CLIRunner.start(["outbox", "--store", store], environment: environment).wait().stdout
            return uuid.stringByReplacingMatches(in: listed, range: NSRange(listed.startIndex..., in: listed), withTemplate: "<uuid>")
        }
        XCTAssertTrue(queued[1].contains("pending"), queued[1])
        XCTAssertEqual(queued[0], queued[1], "the same outbox entries queued")
    }

    /// Imports the provider fixtures into `store`, issues Patient/pat-1 a token, serves `serving` (the same
    /// store) and returns the ids of the tasks `GET /carekit/v1/tasks` answers, sorted; checks readiness and
    /// that neither the commands nor the server print `password`.
    private func tasksServed(store: String, serving: String, environment: [String: String], in folder: URL, hiding password: String) throws -> [String] {
        try served(store: store, serving: serving, environment: environment, in: folder, hiding: password) { base, token in
            let (status, body) = try Self.get(base.appendingPathComponent("carekit/v1/tasks"), token: token)
            XCTAssertEqual(status, 200, String(decoding: body, as: UTF8.self))
            let tasks = try JSONSerialization.jsonObject(with: body) as? [[String: Any]] ?? []
            return tasks.compactMap { $0["id"] as? String }.sorted()
        }
    }

    /// Imports the provider fixtures into `store`, issues Patient/pat-1 a token, serves `serving` (the same
    /// store), checks readiness and returns what `requests` (given the server's base URL and the token)
    /// returns; checks that neither the commands nor the server print `password`.
    private func served<T>(
        store: String, serving: String, environment: [String: String], in folder: URL, hiding password: String,
        _ requests: (URL, String) throws -> T
    ) throws -> T {
        let key = folder.appendingPathComponent("server.key").path
        let fixtures = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
        let imported = try CLIRunner.start(["import", fixtures, "--store", store, "--time-zone", "UTC"], environment: environment).wait()
        XCTAssertEqual(imported.status, 0, imported.stderr)
        let issued = try CLIRunner.start(["patients", "token", "--store", store, "--key", key, "--patient", "Patient/pat-1"], environment: environment).wait()
        XCTAssertEqual(issued.status, 0, issued.stderr)
        for result in [imported, issued] { XCTAssertFalse((result.stdout + result.stderr).contains(password)) }
        let token = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let app = try AppServerProcess.start(store: serving, key: key)
        let (ready, readiness) = try Self.get(app.base.appendingPathComponent("health/ready"), token: nil)
        XCTAssertEqual(ready, 200, "ready: the store answers a read: \(String(decoding: readiness, as: UTF8.self))")
        let result = try requests(app.base, token)
        let stopped = app.stop()
        XCTAssertFalse(((stopped?.stdout ?? "") + (stopped?.stderr ?? "")).contains(password), "the server printed the password")
        return result
    }

    /// One GET, waited for: its status and body.
    private static func get(_ url: URL, token: String?) throws -> (Int, Data) {
        try send(url, token: token, body: nil)
    }

    /// One request, waited for (a POST of `body` as JSON when given, else a GET): its status and body.
    private static func send(_ url: URL, token: String?, body: Data?) throws -> (Int, Data) {
        var request = URLRequest(url: url)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpMethod = "POST"
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
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
