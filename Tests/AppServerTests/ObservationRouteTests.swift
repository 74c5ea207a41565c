@testable import AppServer
import CareModel
@preconcurrency import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Mapping
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// `POST /carekit/v1/observations`: readings as HealthKitOnFHIR writes them, for the token's patient, in
/// one transaction; the other devices pull them.
final class ObservationRouteTests: XCTestCase {
    /// ``ReadingFixture``'s patients and tasks in the store under test, and a server on it.
    private struct Server {
        let store: AnyTestStore
        let tasks: [String: CareTask]
        let key = ServerKey(privateKey: P256.Signing.PrivateKey())
        let app: AppServer

        init(_ tested: TestStore) throws {
            store = tested.store
            tasks = try ReadingFixture.fill(store)
            app = AppServer(store: store, key: key, readingKinds: try ReadingFixture.kinds())
        }

        func headers(_ patient: String = "Patient/p1") throws -> HTTPFields {
            [.authorization: "Bearer \(try PatientToken.issue(patientID: patient, key: key, lifetime: 3600))", .contentType: "application/json"]
        }

        func test(_ body: @Sendable @escaping (any TestClientProtocol) async throws -> Void) async throws {
            try await Application(router: app.router()).test(.router, body)
        }
    }

    private let week = HealthKitReadings.week(from: ReadingFixture.day0, zone: ReadingFixture.zone)

    func testAWeekIsStoredOnceAndTheOtherDevicesPullIt() async throws {
        try await forEachStore { tested in
            let server = try Server(tested)
            let headers = try server.headers()
            let body = HealthKitReadings.body(week, bundle: true)
            let count = week.count
            let firstSample = week[0]["id"] as? String
            try await server.test { client in
                try await client.execute(uri: "/carekit/v1/observations", method: .post, headers: headers, body: ByteBuffer(bytes: body)) { response in
                    XCTAssertEqual(response.status, .ok, response.text)
                    let answer = try XCTUnwrap(response.json as? [String: Any])
                    XCTAssertEqual(answer["stored"] as? Int, count)
                    XCTAssertEqual(answer["known"] as? Int, 0)
                    let readings = try XCTUnwrap(answer["readings"] as? [[String: Any]])
                    XCTAssertEqual(readings.map { $0["index"] as? Int }, Array(0..<count))
                    XCTAssertEqual(readings.first?["sample"] as? String, firstSample)
                    let placed = try XCTUnwrap((readings.first?["outcomes"] as? [[String: Any]])?.first)
                    XCTAssertEqual(placed["task"] as? String, "Task/weight")
                    XCTAssertEqual(placed["occurrence"] as? Int, 30)
                    XCTAssertEqual((readings[1]["outcomes"] as? [Any])?.count, 2, "a correlation's two values")
                }
                // Again: all known, nothing stored.
                try await client.execute(uri: "/carekit/v1/observations", method: .post, headers: headers, body: ByteBuffer(bytes: body)) { response in
                    XCTAssertEqual(response.status, .ok, response.text)
                    XCTAssertEqual((response.json as? [String: Any])?["stored"] as? Int, 0)
                    XCTAssertEqual((response.json as? [String: Any])?["known"] as? Int, count)
                }
                // Another device of the patient pulls the readings' outcomes (and the logs' new versions).
                let records = try await SyncTransport(client: client, headers: headers).pull(KnowledgeVector())
                let outcomes = records.flatMap(\.entities).filter { $0.type == .outcome }
                XCTAssertEqual(Set(outcomes.map(\.entity.id)).count, 29)
                let values = outcomes.compactMap { entity -> [OutcomeValue]? in if case .outcome(let outcome) = entity.entity { return outcome.values } else { return nil } }
                XCTAssertEqual(values.joined().filter { $0.kind == "http://loinc.org|29463-7" }.count, 7)
            }
            XCTAssertEqual(try server.store.outboxEntries(in: .pending, limit: 100).count, 29)
        }
    }

    func testAnotherPatientsReadingRefusesTheBatchWith422AndStoresNothing() async throws {
        try await forEachStore { tested in
            let server = try Server(tested)
            var batch = week
            batch[4]["subject"] = ["reference": "Patient/p2"]
            batch[9]["valueQuantity"] = ["value": 80, "unit": "mmHg", "code": "mm[Hg]", "system": "http://unitsofmeasure.org"]
            let body = HealthKitReadings.body(batch)
            let headers = try server.headers()
            try await server.test { client in
                try await client.execute(uri: "/carekit/v1/observations", method: .post, headers: headers, body: ByteBuffer(bytes: body)) { response in
                    XCTAssertEqual(response.status, .unprocessableContent, response.text)
                    let answer = try XCTUnwrap(response.json as? [String: Any])
                    XCTAssertEqual(answer["error"] as? String, "refused")
                    let refused = try XCTUnwrap(answer["refused"] as? [[String: Any]])
                    XCTAssertEqual(refused.map { $0["index"] as? Int }, [4, 9])
                    XCTAssertEqual(refused.first?["path"] as? String, "Observation.subject")
                    XCTAssertFalse(response.text.contains("p2"), "nothing of the other patient echoed")
                }
            }
            XCTAssertEqual(try server.store.outcomes(.current), [])
            XCTAssertEqual(try server.store.outboxEntries(in: .pending, limit: 10).count, 0)
        }
    }

    func testBadJSONIs400AndABodyPastTheLimitIs413() async throws {
        try await forEachStore { tested in
            let server = try Server(tested)
            let headers = try server.headers()
            let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
            try await server.test { client in
                for text in ["{", "42", #"{"resourceType":"Patient"}"#, deep] {
                    try await client.execute(uri: "/carekit/v1/observations", method: .post, headers: headers, body: ByteBuffer(string: text)) { response in
                        XCTAssertEqual(response.status, .badRequest, String(text.prefix(40)))
                        XCTAssertEqual((response.json as? [String: Any])?["error"] as? String, "bad-request")
                    }
                }
                let large = ByteBuffer(repeating: UInt8(ascii: " "), count: AppServerLimits.maximumPushBytes + 1)
                try await client.execute(uri: "/carekit/v1/observations", method: .post, headers: headers, body: large) { response in
                    XCTAssertEqual(response.status, .contentTooLarge)
                }
            }
            XCTAssertEqual(try server.store.outcomes(.current), [])
        }
    }
}
