import AppServer
import CareModel
import Foundation
import Hummingbird
import HummingbirdTesting
import Insights
import Store
import StoreTestSupport
import XCTest

/// Issue 41, item 7: numbers that overflow are refused at push, with their JSON path; a patient's
/// Insights are never blanked (`200 {}`): a valid series, or a 500 that reveals nothing.
final class OverflowTests: XCTestCase {
    private static let kind = "http://loinc.org|8480-6"

    /// A push of one outcome of pat-1's task (occurrence 1) with `values`, after a pull (so that it is
    /// not refused for "pull first"); the status and the body of the answer.
    private static func push(_ values: [OutcomeValue], fixture: AppServerFixture, client: any TestClientProtocol, edit: (String) -> String = { $0 }) async throws -> (Int, String) {
        let headers = fixture.bearer(try fixture.token())
        let task = try XCTUnwrap(fixture.tasks["Patient/pat-1"])
        let transport = SyncTransport(client: client, headers: headers)
        var knowledge = KnowledgeVector()
        for record in try await transport.pull(knowledge) { knowledge.merge(with: record.knowledgeVector) }
        var device = knowledge
        device.processes[UUID()] = 1
        let outcome = Outcome(taskUUID: task.uuid, taskOccurrenceIndex: 1, values: values,
                              metadata: EntityMetadata(effectiveDate: AppServerFixture.day0, timezone: .gmt))
        let body = try SyncTransport.pushBody([CareKitRevisionRecord(entities: [CareKitEntity(.outcome(outcome))], knowledgeVector: device)], device)
        let text = edit(String(decoding: body, as: UTF8.self))
        let response = try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: headers, body: ByteBuffer(string: text))
        return (Int(response.status.code), response.text)
    }

    func testAPushOfValuesWhoseSumOverflowsIsRefusedWithItsPath() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            try await fixture.test { client in
                let values = [OutcomeValue(.double(1e308), kind: Self.kind), OutcomeValue(.double(1e308), kind: Self.kind)]
                let (status, text) = try await Self.push(values, fixture: fixture, client: client)
                XCTAssertEqual(status, 422, text)
                XCTAssertTrue(text.contains("deviceRevisions[0].entities[0].object.values[0].value"), text)
                XCTAssertFalse(text.contains("1e+308") || text.contains("1e308"), "the value itself is not echoed: \(text)")
                // The bound itself is accepted: 2^960, twice, sums to a finite double.
                let bound = [OutcomeValue(.double(0x1p960), kind: Self.kind), OutcomeValue(.double(-0x1p960), kind: Self.kind)]
                let (accepted, answer) = try await Self.push(bound, fixture: fixture, client: client)
                XCTAssertEqual(accepted, 200, answer)
            }
            XCTAssertEqual(try fixture.store.outcomes(.current).count, 1, "only the push within the bound is stored")
        }
    }

    func testAPushOfANumberBeyondADoubleIsRefused() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            try await fixture.test { client in
                // JSON has no infinity: a number beyond a double's range is what a client can send instead.
                for written in ["1e400", "-1e400", "1e309"] {
                    let (status, text) = try await Self.push(
                        [OutcomeValue(.double(12345.5), kind: Self.kind)], fixture: fixture, client: client,
                        edit: { $0.replacingOccurrences(of: "12345.5", with: written) })
                    // The decoder reads a number beyond a double's range as JSON it cannot read: 400.
                    XCTAssertEqual(status, 400, "\(written): \(text)")
                    XCTAssertFalse(text.contains(written), "the value itself is not echoed: \(text)")
                }
            }
            XCTAssertEqual(try fixture.store.outcomes(.current).count, 0)
        }
    }

    /// Values already in the store (an import from the provider, an older CareGate) near the largest
    /// double: the daily mean stays finite and the answer is the documented shape, never `{}`; `to` is
    /// the request's last day.
    func testInsightsOfValuesNearTheLargestDoubleAreAValidSeries() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let task = try XCTUnwrap(fixture.tasks["Patient/pat-1"])
            var batch = StoreBatch()
            batch.add(Outcome(
                taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 1,
                values: [OutcomeValue(.double(1e308), kind: Self.kind, index: 0), OutcomeValue(.double(1e308), kind: Self.kind, index: 1)],
                metadata: EntityMetadata(effectiveDate: AppServerFixture.day0.addingTimeInterval(86_400), timezone: .gmt)))
            try fixture.store.apply(batch)
            let headers = fixture.bearer(try fixture.token())
            try await fixture.test { client in
                try await client.execute(uri: "/carekit/v1/insights?from=2025-03-01&to=2025-03-07&timeZone=UTC", method: .get, headers: headers) { response in
                    XCTAssertEqual(response.status, .ok, response.text)
                    let body = try XCTUnwrap(response.json as? [String: Any], response.text)
                    XCTAssertEqual(body["from"] as? String, "2025-03-01")
                    XCTAssertEqual(body["to"] as? String, "2025-03-07", "the request's last day")
                    XCTAssertEqual((body["days"] as? [String])?.last, "2025-03-07")
                    let series = try XCTUnwrap(body["series"] as? [[String: Any]])
                    let measured = try XCTUnwrap(series.first { $0["id"] as? String == Self.kind }, "\(series)")
                    let values = try XCTUnwrap(measured["values"] as? [Any])
                    XCTAssertEqual(values.count, 7)
                    XCTAssertEqual(values[1] as? Double, 1e308, "the mean of 1e308 and 1e308")
                }
            }
        }
    }

    /// A series that cannot be written (here a rules file's target band that is not finite, which the
    /// rules parser refuses but code can build): 500 `internal` with nothing more, never `200 {}`.
    func testASeriesThatCannotBeWrittenIsA500ThatRevealsNothing() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let task = try XCTUnwrap(fixture.tasks["Patient/pat-1"])
            var batch = StoreBatch()
            batch.add(Outcome(
                taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 1, values: [OutcomeValue(.double(120), kind: Self.kind)],
                metadata: EntityMetadata(effectiveDate: AppServerFixture.day0.addingTimeInterval(86_400), timezone: .gmt)))
            try fixture.store.apply(batch)
            let rules = InsightsRules(
                file: "test", measurements: [MeasurementDefinition(kind: Self.kind, title: "Systolic", unit: nil, target: TargetBand(low: nil, high: .infinity))],
                chart: nil, rules: [])
            let server = AppServer(store: fixture.store, key: fixture.key, insightsRules: rules)
            let headers = fixture.bearer(try fixture.token())
            try await Application(router: server.router()).test(.router) { client in
                try await client.execute(uri: "/carekit/v1/insights?from=2025-03-01&to=2025-03-07&timeZone=UTC", method: .get, headers: headers) { response in
                    XCTAssertEqual(response.status, .internalServerError, response.text)
                    XCTAssertEqual((response.json as? [String: String])?["error"], "internal")
                    XCTAssertFalse(response.text.contains("pat-") || response.text.contains("Systolic") || response.text.contains("inf"), response.text)
                }
            }
            XCTAssertEqual(try fixture.store.auditEntries(patientID: "Patient/pat-1", limit: 10).map(\.status), [500])
        }
    }
}
