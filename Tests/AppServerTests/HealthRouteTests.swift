import AppServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hummingbird
import HummingbirdTesting
import StoreTestSupport
import TestSupport
import XCTest

/// `GET /health/live`, `/health/ready` and `/health`: each check's result, 200 or 503, and nothing of a
/// patient or a file path in any answer.
final class HealthRouteTests: XCTestCase {
    /// One GET: status and body as JSON.
    private func get(_ url: URL) async throws -> (Int, [String: Any]) {
        try await withCheckedThrowingContinuation { continuation in
            URLSession.shared.dataTask(with: URLRequest(url: url)) { data, response, error in
                guard let http = response as? HTTPURLResponse else {
                    return continuation.resume(throwing: error ?? URLError(.badServerResponse))
                }
                let json = (try? JSONSerialization.jsonObject(with: data ?? Data())) as? [String: Any] ?? [:]
                continuation.resume(returning: (http.statusCode, json))
            }.resume()
        }
    }

    /// The status of each check of an answer, by name.
    private func checks(_ answer: [String: Any]) -> [String: String] {
        ((answer["checks"] as? [String: [String: Any]]) ?? [:]).compactMapValues { $0["status"] as? String }
    }

    func testLiveAndReadyNameEachCheckInMemory() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            try await fixture.test { client in
                try await client.execute(uri: "/health/live", method: .get) { response in
                    XCTAssertEqual(response.status, .ok)
                    XCTAssertEqual(response.text, #"{"checks":{"process":{"status":"ok"}},"status":"ok"}"#)
                }
                try await client.execute(uri: "/health/ready", method: .get) { response in
                    XCTAssertEqual(response.status, .ok)
                    XCTAssertEqual(
                        response.text,
                        #"{"checks":{"mappings":{"status":"ok"},"signing-key":{"status":"ok"},"store.readable":{"status":"ok"},"store.writable":{"status":"ok"}},"status":"ok"}"#)
                }
                try await client.execute(uri: "/health", method: .get) { response in
                    XCTAssertEqual(response.status, .ok)
                    XCTAssertEqual(response.text, #"{"status":"ok"}"#, "/health answers as it always did")
                }
            }
        }
    }

    func testAServedStoreMadeReadOnlyOrRemovedTurnsReadyTo503NamingTheCheckWhileLiveStays200() async throws {
        let folder = try makeScratchFolder("health-live")
        let store = folder.appendingPathComponent("store.sqlite").path
        let key = folder.appendingPathComponent("server.key").path
        XCTAssertEqual(try CLIRunner.run(["store", "generate", "--store", store, "--patients", "1", "--tasks", "1", "--days", "1"]).status, 0)
        let server = try AppServerProcess.start(store: store, key: key)
        defer { server.stop() }
        let (live, ready, health) = (server.base.appendingPathComponent("health/live"), server.base.appendingPathComponent("health/ready"),
                                     server.base.appendingPathComponent("health"))
        var (status, answer) = try await get(ready)
        XCTAssertEqual(status, 200, "\(answer)")
        XCTAssertEqual(checks(answer), ["store.readable": "ok", "store.writable": "ok", "mappings": "ok", "signing-key": "ok"])

        // Read-only: ready fails on store.writable alone, /health with it, live answers.
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: store)
        (status, answer) = try await get(ready)
        XCTAssertEqual(status, 503, "\(answer)")
        XCTAssertEqual(answer["status"] as? String, "fail")
        XCTAssertEqual(checks(answer), ["store.readable": "ok", "store.writable": "fail", "mappings": "ok", "signing-key": "ok"])
        let reason = try XCTUnwrap((answer["checks"] as? [String: [String: Any]])?["store.writable"]?["reason"] as? String)
        XCTAssertTrue(reason.contains("read-only") || reason.contains("not writable"), reason)
        XCTAssertFalse(reason.contains(folder.path), "no path in an open answer: \(reason)")
        (status, answer) = try await get(health)
        XCTAssertEqual(status, 503)
        XCTAssertEqual(answer as? [String: String], ["status": "fail", "failing": "store.writable"])
        (status, answer) = try await get(live)
        XCTAssertEqual(status, 200)
        XCTAssertEqual(checks(answer), ["process": "ok"])

        // Writable again: ready again.
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: store)
        (status, _) = try await get(ready)
        XCTAssertEqual(status, 200)

        // Removed (its open connections still read the old file): ready fails, live answers.
        try FileManager.default.removeItem(atPath: store)
        (status, answer) = try await get(ready)
        XCTAssertEqual(status, 503, "\(answer)")
        XCTAssertEqual(checks(answer)["store.writable"], "fail")
        XCTAssertEqual((answer["checks"] as? [String: [String: Any]])?["store.writable"]?["reason"] as? String, "the store file is missing")
        (status, _) = try await get(live)
        XCTAssertEqual(status, 200)
    }
}
