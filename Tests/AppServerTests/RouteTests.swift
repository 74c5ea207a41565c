import AppServer
import CareModel
import DeviceSimulation
import Foundation
import Hummingbird
import HummingbirdTesting
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// The routes in memory: open ones, the token guard on every patient route, the views, the audit trail.
final class RouteTests: XCTestCase {
    static let patientRoutes: [(HTTPRequest.Method, String)] = [
        (.get, "/carekit/v1/patient"), (.get, "/carekit/v1/careplans"), (.get, "/carekit/v1/tasks"),
        (.get, "/carekit/v1/contacts"), (.get, "/carekit/v1/events?date=2025-03-02"),
        (.get, #"/carekit/v1/revisions?knowledgeVector={"processes":[]}"#), (.post, "/carekit/v1/revisions"),
        (.get, "/carekit/v1/insights?from=2025-03-01&to=2025-03-07"),
        (.post, "/carekit/v1/observations"),
        (.get, "/carekit/v1/questionnaires?url=http://example.org/q"),
        (.post, "/carekit/v1/shares"),
        (.get, "/carekit/v1/consent-terms"), (.get, "/carekit/v1/consents"), (.post, "/carekit/v1/consents"),
    ]

    /// JSON with sorted keys and no spaces, to compare documents by content.
    static func canonical(_ data: Data) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: JSONSerialization.jsonObject(with: data), options: [.sortedKeys]), as: UTF8.self)
    }

    func testHealthAndTheOpenAPIDocumentNeedNoToken() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let document = try Self.canonical(Data(contentsOf: Corpus.projectRoot.appendingPathComponent("Docs/openapi.json")))
            try await fixture.test { client in
                try await client.execute(uri: "/health", method: .get) { response in
                    XCTAssertEqual(response.status, .ok)
                    XCTAssertEqual(response.text, #"{"status":"ok"}"#)
                }
                try await client.execute(uri: "/openapi.json", method: .get) { response in
                    XCTAssertEqual(response.status, .ok)
                    // The embedded document is Docs/openapi.json (a SwiftPM resource).
                    XCTAssertEqual(try Self.canonical(Data(response.text.utf8)), document)
                }
            }
        }
    }

    /// Every route of patient data, from the OpenAPI document: all of them are in ``patientRoutes``, so
    /// that the matrices below cover every endpoint but the /health routes and /openapi.json.
    func testThePatientRoutesAreEveryEndpointOfTheDocumentButTheOpenOnes() throws {
        let document = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: Corpus.projectRoot.appendingPathComponent("Docs/openapi.json"))) as? [String: Any])
        let paths = try XCTUnwrap(document["paths"] as? [String: [String: Any]])
        var documented = Set<String>()
        for (path, operations) in paths where !path.hasPrefix("/health") && path != "/openapi.json" {
            for method in operations.keys where ["get", "post", "put", "patch", "delete"].contains(method) { documented.insert("\(method.uppercased()) \(path)") }
        }
        let tested = Set(Self.patientRoutes.map { "\($0.0.rawValue) \($0.1.split(separator: "?")[0])" })
        XCTAssertEqual(tested, documented)
    }

    /// Every route x every bad token, CareGate's own and a SMART issuer's (no token, expired, forged, `alg:
    /// none`, HS256, another audience, unknown kid, no patient claim...): 401 with RFC 6750's challenge
    /// (403 `insufficient_scope` for an issuer's token whose scopes do not grant the request), and no
    /// patient data in the body.
    func testEveryPatientRouteRefusesEveryBadTokenAndRevealsNothing() async throws {
        try await forEachStore { tested in
            let issuer = try TestIssuer()
            let fixture = try AppServerFixture(tested, issuer: issuer)
            var bad: [(String, String?, HTTPResponse.Status)] = try BadTokens.all(fixture).map { ($0.0, $0.1, HTTPResponse.Status.unauthorized) }
            for (name, token, status) in try issuer.badTokens(other: TestIssuer()) { bad.append((name, token, HTTPResponse.Status(code: status))) }
            let tokens = bad
            try await fixture.test { client in
                for (method, uri) in Self.patientRoutes {
                    for (name, token, status) in tokens {
                        try await client.execute(uri: uri, method: method, headers: token.map(fixture.bearer) ?? [:]) { response in
                            XCTAssertEqual(response.status, status, "\(method) \(uri) with \(name)")
                            let challenge = status == .forbidden ? #"Bearer error="insufficient_scope""# : token == nil ? "Bearer" : #"Bearer error="invalid_token""#
                            XCTAssertEqual(response.headers[.wwwAuthenticate], challenge, "\(method) \(uri) with \(name)")
                            XCTAssertFalse(response.text.contains("pat-"), "\(method) \(uri) with \(name): \(response.text)")
                            XCTAssertFalse(response.text.contains("Given") || response.text.contains("Task of"), "\(method) \(uri) with \(name)")
                            XCTAssertEqual((response.json as? [String: String])?["error"], status == .forbidden ? "insufficient-scope" : "unauthorized")
                        }
                    }
                }
            }
            // Each refusal is counted in the audit trail (per minute, route and reason; issue 41, item 8), and
            // none is an entry of its own.
            let counted = try AuditFloodTests.refusalsCounted(Self.patientRoutes.count * bad.count, in: fixture.store)
            XCTAssertEqual(counted.reduce(0) { $0 + $1.count }, Self.patientRoutes.count * bad.count)
            XCTAssertTrue(counted.allSatisfy { $0.status == 401 || $0.status == 403 })
            XCTAssertEqual(try fixture.store.auditEntries(patientID: nil, limit: 1000).count, 0)
        }
    }

    /// Every route with the other patient's token, CareGate's own and an issuer's: nothing of the first
    /// patient in any answer (ids, names, uuids), and a push of an outcome of the first patient's task is
    /// 403 with nothing stored and nothing queued.
    func testAnotherPatientsTokenReachesNothingOfTheFirst() async throws {
        try await forEachStore { tested in
            let issuer = try TestIssuer()
            let fixture = try AppServerFixture(tested, issuer: issuer)
            let firstTask = try XCTUnwrap(fixture.tasks["Patient/pat-1"])
            var uuids: [String] = [firstTask.uuid.uuidString]
            for kind in [EntityKind.patient, .carePlan, .contact] {
                try fixture.store.forEachVersion(kind) { entity in
                    if entity.id.hasSuffix("pat-1") { uuids.append(entity.metadata.uuid.uuidString) }
                }
            }
            XCTAssertEqual(uuids.count, 4)
            let firstUUIDs = uuids
            let secondTokens = [("own", try fixture.token("Patient/pat-2")), ("issuer", try issuer.token(issuer.claims(patient: "pat-2")))]
            let store = fixture.store
            try await fixture.test { client in
                for (family, token) in secondTokens {
                    let headers = fixture.bearer(token)
                    for (method, uri) in Self.patientRoutes where method == .get {
                        try await client.execute(uri: uri, method: method, headers: headers) { response in
                            // No task of the fixture's asks a Questionnaire, and the fixture's server publishes no
                            // consent terms: those routes answer their 404.
                            let absent = uri.contains("/questionnaires") || uri.contains("/consent-terms")
                            XCTAssertEqual(response.status, absent ? .notFound : .ok, "\(family) \(uri)")
                            XCTAssertFalse(response.text.contains("pat-1"), "\(family) \(uri): \(response.text)")
                            for uuid in firstUUIDs { XCTAssertFalse(response.text.uppercased().contains(uuid), "\(family) \(uri)") }
                        }
                    }
                    // The push: caught up first (so that it is not refused for "pull first"), then an outcome
                    // of the first patient's task.
                    let transport = SyncTransport(client: client, headers: headers)
                    var knowledge = KnowledgeVector()
                    for record in try await transport.pull(knowledge) { knowledge.merge(with: record.knowledgeVector) }
                    let outcome = Outcome(taskUUID: firstTask.uuid, taskOccurrenceIndex: 1, values: [OutcomeValue(.double(1))],
                                          metadata: EntityMetadata(effectiveDate: AppServerFixture.day0, timezone: .gmt))
                    let body = try SyncTransport.pushBody([CareKitRevisionRecord(entities: [CareKitEntity(.outcome(outcome))], knowledgeVector: knowledge)], knowledge)
                    try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: headers, body: ByteBuffer(bytes: body)) { response in
                        XCTAssertEqual(response.status, .forbidden, "\(family): \(response.text)")
                        XCTAssertFalse(response.text.contains("pat-1"), family)
                        XCTAssertFalse(response.text.uppercased().contains(firstTask.uuid.uuidString), family)
                    }
                }
            }
            XCTAssertEqual(try store.outcomes(.current).count, 0)
            XCTAssertEqual(try store.outboxEntries(in: .pending, limit: 100).count, 0)
            // Nothing in the audit trail names the first patient.
            XCTAssertEqual(try store.auditEntries(patientID: "Patient/pat-1", limit: 100).count, 0)
        }
    }

    func testATokenForAPatientNotInTheStoreIsForbidden() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let token = try fixture.token("Patient/nobody")
            try await fixture.test { client in
                for (method, uri) in Self.patientRoutes {
                    try await client.execute(uri: uri, method: method, headers: fixture.bearer(token)) { response in
                        XCTAssertEqual(response.status, .forbidden, "\(method) \(uri)")
                    }
                }
            }
        }
    }

    func testViewsShowTheTokensPatientOnly() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            for (own, other) in [("pat-1", "pat-2"), ("pat-2", "pat-1")] {
                let headers = fixture.bearer(try fixture.token("Patient/\(own)"))
                try await fixture.test { client in
                    for (uri, expected) in [
                        ("/carekit/v1/careplans", "CarePlan/plan-\(own)"), ("/carekit/v1/tasks", "Task/task-\(own)"),
                        ("/carekit/v1/contacts", "Contact/doc-\(own)"),
                    ] {
                        try await client.execute(uri: uri, method: .get, headers: headers) { response in
                            XCTAssertEqual(response.status, .ok, uri)
                            let ids = (response.json as? [[String: Any]])?.compactMap { $0["id"] as? String }
                            XCTAssertEqual(ids, [expected], uri)
                            XCTAssertFalse(response.text.contains(other), uri)
                        }
                    }
                    try await client.execute(uri: "/carekit/v1/patient", method: .get, headers: headers) { response in
                        XCTAssertEqual((response.json as? [String: Any])?["id"] as? String, "Patient/\(own)")
                    }
                    try await client.execute(uri: "/carekit/v1/events?date=2025-03-02", method: .get, headers: headers) { response in
                        XCTAssertEqual(response.status, .ok)
                        let events = response.json as? [[String: Any]]
                        XCTAssertEqual(events?.count, 1)
                        XCTAssertEqual(events?.first?["taskID"] as? String, "Task/task-\(own)")
                        XCTAssertEqual(events?.first?["start"] as? String, "2025-03-02T08:00:00Z")
                    }
                }
            }
            let audited = try fixture.store.auditEntries(patientID: "Patient/pat-2", limit: 100)
            XCTAssertEqual(audited.count, 5)
            XCTAssertTrue(audited.allSatisfy { $0.status == 200 && $0.subject == "Patient/pat-2" })
            XCTAssertEqual(Set(audited.map(\.action)).count, 5)
            XCTAssertTrue(audited.contains { $0.action == "GET /carekit/v1/tasks" && $0.detail == "1 tasks" })
        }
    }

    /// Issue 31, item 5: the Insights series of the token's patient, one value per day per series.
    /// The views serve what a pull serves: CareKit 4.0's JSON, which CareKit's own shapes (the committed
    /// mirrors of its Codable structs) decode, linked by version UUID to the versions the views show; each
    /// event keeps its top-level fields and carries its task and outcome in that JSON.
    func testViewsServeCareKit4JSON() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            let task = try XCTUnwrap(fixture.tasks["Patient/pat-1"])
            let store = fixture.store
            try await fixture.test { client in
                let device = SimulatedDevice(name: "A", start: AppServerFixture.day0)
                try await device.synchronize(SyncTransport(client: client, headers: headers))
                let recorded = device.record(task, occurrence: 1, value: 7)
                try await device.synchronize(SyncTransport(client: client, headers: headers))
                let decoder = CareKitJSON.makeDecoder()
                func body(_ path: String) async throws -> Data {
                    let response = try await client.execute(uri: path, method: .get, headers: headers, body: nil)
                    XCTAssertEqual(response.status, .ok, path)
                    return Data(response.text.utf8)
                }
                let patient = try decoder.decode(CareKit4Decoded<CareKit4PatientMirror>.self, from: try await body("/carekit/v1/patient"))
                XCTAssertEqual(patient.own.id, "Patient/pat-1")
                let plans = try decoder.decode([CareKit4Decoded<CareKit4CarePlanMirror>].self, from: try await body("/carekit/v1/careplans"))
                XCTAssertEqual(plans.map(\.own.patientUUID), [patient.versioned.uuid])
                let tasks = try decoder.decode([CareKit4Decoded<CareKit4TaskMirror>].self, from: try await body("/carekit/v1/tasks"))
                XCTAssertEqual(tasks.map(\.own.carePlanUUID), plans.map(\.versioned.uuid))
                XCTAssertEqual(tasks.map(\.versioned.uuid), [task.uuid])
                let contacts = try decoder.decode([CareKit4Decoded<CareKit4ContactMirror>].self, from: try await body("/carekit/v1/contacts"))
                XCTAssertEqual(contacts.map(\.own.carePlanUUID), plans.map(\.versioned.uuid))

                struct EventMirror: Decodable {
                    let taskID: String
                    let taskUUID: UUID
                    let occurrence: Int
                    let start: String
                    let end: String
                    let task: CareKit4Decoded<CareKit4TaskMirror>
                    let outcome: CareKit4Decoded<CareKit4OutcomeMirror>?
                }
                let events = try decoder.decode([EventMirror].self, from: try await body("/carekit/v1/events?date=2025-03-02"))
                XCTAssertEqual(events.map(\.occurrence), [1])
                XCTAssertEqual(events.first?.start, "2025-03-02T08:00:00Z")
                XCTAssertEqual(events.first?.task.versioned.uuid, task.uuid)
                XCTAssertEqual(events.first?.task.own.carePlanUUID, plans.first?.versioned.uuid)
                XCTAssertEqual(events.first?.outcome?.versioned.uuid, recorded)
                XCTAssertEqual(events.first?.outcome?.own.values.map(\.value), ["7.0"])
                XCTAssertEqual(events.first?.outcome?.own.taskUUID, task.uuid)
                XCTAssertEqual(try store.outcomes(.current).map(\.uuid), [recorded])
            }
        }
    }

    func testInsightsAreTheTokensPatientsSeriesOneValuePerDay() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token("Patient/pat-2"))
            try await fixture.test { client in
                try await client.execute(uri: "/carekit/v1/insights?from=2025-03-01&to=2025-03-07&timeZone=UTC", method: .get, headers: headers) { response in
                    XCTAssertEqual(response.status, .ok, response.text)
                    let body = try XCTUnwrap(response.json as? [String: Any])
                    XCTAssertEqual((body["days"] as? [String])?.count, 7)
                    XCTAssertEqual((body["days"] as? [String])?.first, "2025-03-01")
                    let series = try XCTUnwrap(body["series"] as? [[String: Any]])
                    XCTAssertEqual(series.first?["id"] as? String, "adherence")
                    XCTAssertTrue(series.allSatisfy { ($0["values"] as? [Any])?.count == 7 }, "\(series)")
                    XCTAssertFalse(response.text.contains("pat-1"), "nothing of another patient")
                }
                for query in ["", "?from=2025-03-01", "?from=2025-03-07&to=2025-03-01", "?from=2025-01-01&to=2026-03-01", "?from=2025-02-30&to=2025-03-01"] {
                    try await client.execute(uri: "/carekit/v1/insights" + query, method: .get, headers: headers) { response in
                        XCTAssertEqual(response.status, .badRequest, query)
                    }
                }
            }
        }
    }

    func testBadDatesAndZonesAreBadRequests() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            try await fixture.test { client in
                for query in ["", "?date=2025-02-30", "?date=25-03-01", "?date=2025-3-1", "?date=2025-03-01T00:00", "?date=2025-03-02&timeZone=Mars/Base"] {
                    try await client.execute(uri: "/carekit/v1/events" + query, method: .get, headers: headers) { response in
                        XCTAssertEqual(response.status, .badRequest, query)
                        XCTAssertEqual((response.json as? [String: String])?["error"], "bad-request", query)
                    }
                }
                try await client.execute(uri: "/carekit/v1/events?date=2025-03-02&timeZone=America/Chicago", method: .get, headers: headers) { response in
                    XCTAssertEqual(response.status, .ok)
                }
            }
        }
    }

    func testUnknownRoutesAreJSON404s() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            try await fixture.test { client in
                try await client.execute(uri: "/nothing", method: .get) { response in
                    XCTAssertEqual(response.status, .notFound)
                }
            }
        }
    }
}
