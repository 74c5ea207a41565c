import AppClient
import AppServer
import Foundation
import StoreTestSupport
import TestSupport
import XCTest

/// `caregate serve` as its own process with its own store and port, reached over real HTTP by AppClient,
/// with tokens from `caregate patients token` and the trail read back by `caregate audit`.
final class LiveServerTests: XCTestCase {
    func testServeTokenAndAuditEndToEnd() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            let made = try generatedStore("live-serve", on: tested)
            let (store, key, token) = (made.store, made.key, made.token)
            XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int, 0o600)
            let unknown = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "patient-9"])
            XCTAssertEqual(unknown.status, 1)
            XCTAssertEqual(try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "patient-1", "--expires-in", "0"]).status, 2)

            let server = try AppServerProcess.start(store: store, key: key)
            defer { server.stop() }
            let client = AppClient(base: server.base, token: token)
            let healthy = try await client.health()
            XCTAssertTrue(healthy)
            let tasks = try await client.tasks()
            XCTAssertEqual(tasks.count, 2)
            let patient = try await client.patient()
            XCTAssertEqual(patient.id, "patient-1")

            var forged = client
            forged.token = String(token.dropLast(4)) + "AAAA"
            do {
                _ = try await forged.tasks()
                XCTFail("a forged token was accepted")
            } catch let AppClientError.refused(status, code, _) {
                XCTAssertEqual(status, 401)
                XCTAssertEqual(code, "unauthorized")
            }
            server.stop()

            let audit = try CLIRunner.run(["audit", "--store", store, "--format", "json"])
            XCTAssertEqual(audit.status, 0, audit.stderr)
            let entries = try JSONSerialization.jsonObject(with: Data(audit.stdout.utf8)) as? [[String: Any]]
            XCTAssertEqual(entries?.map { $0["status"] as? Int }, [200, 200])
            // The forged token's refusal is counted, not an entry of its own (written by the time the server stopped).
            let refusals = try CLIRunner.run(["audit", "--store", store, "--refusals", "--format", "json"])
            XCTAssertEqual(refusals.status, 0, refusals.stderr)
            let counted = try JSONSerialization.jsonObject(with: Data(refusals.stdout.utf8)) as? [[String: Any]]
            XCTAssertEqual(counted?.map { $0["status"] as? Int }, [401])
            XCTAssertEqual(counted?.first?["action"] as? String, "GET /carekit/v1/tasks")
            XCTAssertEqual(counted?.first?["count"] as? Int, 1)
            XCTAssertEqual(entries?.last?["action"] as? String, "GET /carekit/v1/tasks")
            XCTAssertEqual(entries?.last?["patientID"] as? String, "patient-1")
        }
    }

    /// Every route the client calls answers a typed value: the day's events with their task versions and
    /// outcomes, and the Insights series with one value per day.
    func testTheClientReadsTheDayAndTheInsightsAsTypedValues() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            let folder = try makeScratchFolder("live-typed")
            let store = try XCTUnwrap(tested.location)
            let key = folder.appendingPathComponent("server.key").path
            let generated = try CLIRunner.run(["store", "generate", "--store", store, "--patients", "1", "--tasks", "2", "--days", "3"])
            XCTAssertEqual(generated.status, 0, generated.stderr)
            let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "patient-1"])
            XCTAssertEqual(issued.status, 0, issued.stderr)
            let server = try AppServerProcess.start(store: store, key: key)
            defer { server.stop() }
            let client = AppClient(base: server.base, token: issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines))

            let tasks = try await client.tasks()
            let first = try XCTUnwrap(tasks.map(\.schedule.startDate).min())
            let day = first.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!).year().month().day())
            let events = try await client.events(date: day, timeZone: "UTC")
            XCTAssertFalse(events.isEmpty, "the generated tasks have events on their first day")
            for event in events {
                XCTAssertEqual(event.task.uuid, event.taskUUID)
                XCTAssertEqual(event.task.id, event.taskID)
                XCTAssertLessThanOrEqual(event.start, event.end)
                XCTAssertTrue(Set(tasks.map(\.id)).contains(event.taskID))
                if let outcome = event.outcome { XCTAssertEqual(outcome.taskOccurrenceIndex, event.occurrence) }
            }

            let insights = try await client.insights(from: day, to: day, timeZone: "Europe/Paris")
            XCTAssertEqual(insights.from, day)
            XCTAssertEqual(insights.timeZone, "Europe/Paris")
            XCTAssertEqual(insights.days.count, insights.markers.count)
            XCTAssertTrue(insights.series.contains { $0.id == "adherence" })
            for series in insights.series { XCTAssertEqual(series.values.count, insights.days.count, series.id) }

            do {
                _ = try await client.events(date: "2025-02-30")
                XCTFail("a date that does not exist was answered")
            } catch let AppClientError.refused(status, _, _) {
                XCTAssertEqual(status, 400)
            }
        }
    }
}
