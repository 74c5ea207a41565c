@testable import AppServer
import FHIR
import Foundation
import Hummingbird
import HummingbirdTesting
import Mapping
import Pipeline
import Store
import StoreTestSupport
import XCTest

/// The operator page's look back (the last sync runs with their reports, the last import's coverage),
/// its logout, and the audit trail's entries of every view and action (with the client's address).
final class OperatorHistoryTests: XCTestCase {
    private func withPage(
        _ fixture: AppServerFixture, _ kind: TestingSetup = .router, _ body: @Sendable @escaping (any TestClientProtocol) async throws -> Void
    ) async throws {
        var server = fixture.server
        server.operatorMappings = try MappingSet.defaults()
        try await Application(router: server.router()).test(kind, body)
    }

    private func operatorToken(_ fixture: AppServerFixture) throws -> String {
        try OperatorToken.issue(name: "night-shift", key: fixture.key, lifetime: 3600)
    }

    private static func form(_ token: String, proof: String? = nil) -> (HTTPFields, ByteBuffer) {
        let headers: HTTPFields = [.authorization: "Bearer \(token)", .contentType: "application/x-www-form-urlencoded"]
        return (headers, ByteBuffer(string: "csrf=\(proof ?? OperatorAccess.formProof(for: token))"))
    }

    func testThePageListsTheLastSyncRunsAndTheLastCoverageAndEachRunHasItsEscapedReport() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let started = Date(timeIntervalSince1970: 1_800_000_000)
            let ok = try fixture.store.recordSyncRun(SyncRun(
                runID: "a1b2c3d4", server: "https://ehr.example/fhir", started: started, ended: started.addingTimeInterval(12.5), result: .ok,
                counts: SyncRun.Counts(pulled: 40, imported: 7, failed: 0, pushed: 3, acknowledged: 3), report: #"{"problems":["<script>x</script>"],"pushed":3}"#))
            let failed = try fixture.store.recordSyncRun(SyncRun(
                runID: "e5f6a7b8", server: "https://ehr.example/fhir", started: started.addingTimeInterval(300), ended: started.addingTimeInterval(301),
                result: .failed, error: "server <b>down</b>"))
            try fixture.store.recordImportCoverage(ImportCoverageRecord(
                resourcesRead: 12, counts: ["created": 12], seconds: 0.4, coverage: ["Patient": ["Patient.photo": 3, "Patient.<odd>": 1]]))
            let token = try operatorToken(fixture)
            let patient = try fixture.token()
            try await withPage(fixture) { client in
                try await client.execute(uri: "/operator", method: .get, headers: fixture.bearer(token)) { response in
                    XCTAssertEqual(response.status, .ok)
                    let text = response.text
                    for expected in [
                        "id=\"sync-runs\"", "Last sync runs", "a1b2c3d4", "12.5 s", "40 (7 imported, 0 failed)", "href=\"/operator/sync-runs/\(ok)\"",
                        "href=\"/operator/sync-runs/\(failed)\"", "server &lt;b&gt;down&lt;/b&gt;",
                        "id=\"coverage\"", "Last import coverage", "12 resources read", "Patient.photo", "Patient.&lt;odd&gt;",
                        "action=\"/operator/logout\"",
                    ] {
                        XCTAssertTrue(text.contains(expected), expected)
                    }
                    XCTAssertFalse(text.contains("<b>down</b>"))
                    let runs = try XCTUnwrap(text.range(of: "a1b2c3d4")), newer = try XCTUnwrap(text.range(of: "e5f6a7b8"))
                    XCTAssertLessThan(newer.lowerBound, runs.lowerBound, "newest first")
                }
                try await client.execute(uri: "/operator/sync-runs/\(ok)", method: .get, headers: fixture.bearer(token)) { response in
                    XCTAssertEqual(response.status, .ok)
                    XCTAssertTrue(response.text.contains("&lt;script&gt;x&lt;/script&gt;"), response.text)
                    XCTAssertFalse(response.text.contains("<script>"))
                    XCTAssertTrue(response.text.contains("&quot;pushed&quot; : 3"), "the report, indented")
                    XCTAssertEqual(response.headers[.contentSecurityPolicy], "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
                }
                try await client.execute(uri: "/operator/sync-runs/\(failed)", method: .get, headers: fixture.bearer(token)) { response in
                    XCTAssertEqual(response.status, .ok)
                    XCTAssertTrue(response.text.contains("No report: the run stopped before it."))
                }
                try await client.execute(uri: "/operator/sync-runs/999", method: .get, headers: fixture.bearer(token)) { response in
                    XCTAssertEqual(response.status, .notFound)
                }
                try await client.execute(uri: "/operator/sync-runs/x", method: .get, headers: fixture.bearer(token)) { response in
                    XCTAssertEqual(response.status, .badRequest)
                }
                try await client.execute(uri: "/operator/sync-runs/\(ok)", method: .get) { response in
                    XCTAssertEqual(response.status, .unauthorized)
                }
                try await client.execute(uri: "/operator/sync-runs/\(ok)", method: .get, headers: fixture.bearer(patient)) { response in
                    XCTAssertEqual(response.status, .forbidden)
                    XCTAssertFalse(response.text.contains("a1b2c3d4"))
                }
            }
        }
    }

    func testAnEmptyStoreSaysItHasNoRunsAndNoCoverage() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let token = try operatorToken(fixture)
            try await withPage(fixture) { client in
                try await client.execute(uri: "/operator", method: .get, headers: fixture.bearer(token)) { response in
                    XCTAssertTrue(response.text.contains("No import with coverage recorded"))
                    XCTAssertTrue(response.text.contains("<p class=\"empty\">None.</p>"))
                }
            }
        }
    }

    func testEveryViewAndActionIsAuditedAndRefusalsAreCounted() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let id = try fixture.addFailedOutboxEntry()
            let run = try fixture.store.recordSyncRun(SyncRun(runID: "r", server: "s", started: Date(), ended: Date(), result: .ok, report: "{}"))
            let token = try operatorToken(fixture)
            try await withPage(fixture) { client in
                try await client.execute(uri: "/operator", method: .get, headers: fixture.bearer(token)) { XCTAssertEqual($0.status, .ok) }
                try await client.execute(uri: "/operator/sync-runs/\(run)", method: .get, headers: fixture.bearer(token)) { XCTAssertEqual($0.status, .ok) }
                let (headers, body) = Self.form(token)
                try await client.execute(uri: "/operator/outbox/\(id)/retry", method: .post, headers: headers, body: body) { XCTAssertEqual($0.status, .ok) }
                try await client.execute(uri: "/operator/dead-letters/77/retry", method: .post, headers: headers, body: body) { XCTAssertEqual($0.status, .notFound) }
                let (_, noProof) = Self.form(token, proof: "wrong")
                try await client.execute(uri: "/operator/outbox/\(id)/retry", method: .post, headers: headers, body: noProof) { XCTAssertEqual($0.status, .forbidden) }
                try await client.execute(uri: "/operator", method: .get) { XCTAssertEqual($0.status, .unauthorized) }
            }
            let entries = try fixture.store.auditEntries(patientID: nil, limit: 20)
            let seen = entries.reversed().map { "\($0.subject ?? "-") \($0.action) \($0.status) \($0.detail ?? "")" }
            XCTAssertEqual(seen, [
                "operator:night-shift GET /operator 200 page",
                "operator:night-shift GET /operator/sync-runs/\(run) 200 sync run #\(run)",
                "operator:night-shift POST /operator/outbox/\(id)/retry 200 outbox entry #\(id) requeued",
                "operator:night-shift POST /operator/dead-letters/77/retry 404 no dead letter #77",
                "operator:night-shift POST /operator/outbox/\(id)/retry 403 the form's proof is missing or wrong: reload the operator page and try again",
            ], "each view and action once, an action's entry completed in place")
            XCTAssertTrue(entries.allSatisfy { $0.patientID == nil })
            // Counts are written about a second after the first (``AuditTrailWriter/refusalFlushGap``): waited for.
            XCTAssertTrue(
                try AuditFloodTests.refusalsCounted(1, in: fixture.store).contains { $0.action == "GET /operator" && $0.status == 401 },
                "a request without a token is counted")
        }
    }

    func testLogoutNeedsTheProofClearsTheCookieAndSaysSo() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let token = try operatorToken(fixture)
            try await withPage(fixture) { client in
                try await client.execute(uri: "/operator/logout", method: .post, headers: [.cookie: "caregate_operator=\(token)"], body: ByteBuffer(string: "")) { response in
                    XCTAssertEqual(response.status, .forbidden, "no proof: a forged cross-site logout")
                    XCTAssertNil(response.headers[.setCookie])
                }
                try await client.execute(uri: "/operator/logout", method: .post, body: ByteBuffer(string: "")) { response in
                    XCTAssertEqual(response.status, .unauthorized)
                }
                let (headers, body) = Self.form(token)
                try await client.execute(uri: "/operator/logout", method: .post, headers: headers, body: body) { response in
                    XCTAssertEqual(response.status, .seeOther)
                    XCTAssertEqual(response.headers[.location], "/operator/logged-out")
                    let cookie = try XCTUnwrap(response.headers[.setCookie])
                    XCTAssertTrue(cookie.hasPrefix("caregate_operator=;"), cookie)
                    for attribute in ["Max-Age=0", "Path=/operator", "HttpOnly", "SameSite=Strict"] { XCTAssertTrue(cookie.contains(attribute), attribute) }
                }
                try await client.execute(uri: "/operator/logged-out", method: .get) { response in
                    XCTAssertEqual(response.status, .ok)
                    XCTAssertTrue(response.text.contains("You are logged out."))
                }
                try await client.execute(uri: "/operator/login?token=\(token)", method: .get) { XCTAssertEqual($0.status, .seeOther) }
            }
            let actions = try fixture.store.auditEntries(patientID: nil, limit: 10).map { "\($0.action) \($0.status) \($0.detail ?? "")" }
            XCTAssertEqual(actions, [
                "GET /operator/login 303 logged in", "POST /operator/logout 303 logged out",
                "POST /operator/logout 403 the form's proof is missing or wrong: reload the operator page and try again",
            ], "the token never appears: the path only")
        }
    }

    func testTheClientsAddressIsInTheTrailAndInTheAuditEventsNetwork() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let patient = try fixture.token()
            let token = try operatorToken(fixture)
            try await withPage(fixture, .live) { client in
                try await client.execute(uri: "/carekit/v1/patient", method: .get, headers: fixture.bearer(patient)) { XCTAssertEqual($0.status, .ok) }
                try await client.execute(uri: "/operator", method: .get, headers: fixture.bearer(token)) { XCTAssertEqual($0.status, .ok) }
            }
            let entries = try fixture.store.auditEntries(patientID: nil, limit: 10)
            XCTAssertEqual(entries.count, 2)
            for entry in entries {
                let address = try XCTUnwrap(entry.clientAddress, entry.action)
                XCTAssertTrue(["127.0.0.1", "::1"].contains(address), address)
                let event = try XCTUnwrap(BALPAuditEvent.resource(entry, host: "gateway.example"))
                let client = try XCTUnwrap(event.children(named: "agent").first { Self.code(of: $0) == "110153" })
                let network = try XCTUnwrap(client.children(named: "network").first)
                XCTAssertEqual(network.childValue("address"), address)
                XCTAssertEqual(network.childValue("type"), "2", "an IP address")
            }
            let app = try XCTUnwrap(entries.first { $0.patientID != nil })
            let event = try XCTUnwrap(BALPAuditEvent.resource(app, host: "gateway.example"))
            XCTAssertTrue(Self.json(event).contains("CareKit app"))
            let page = try XCTUnwrap(entries.first { $0.patientID == nil })
            XCTAssertTrue(Self.json(try XCTUnwrap(BALPAuditEvent.resource(page, host: "h"))).contains("CareGate operator page (browser)"))
        }
    }

    private static func code(of agent: Element) -> String? {
        agent.children(named: "type").first?.children(named: "coding").first?.childValue("code")
    }

    private static func json(_ element: Element) -> String {
        String(decoding: FHIRJSON.write(element, pretty: false), as: UTF8.self)
    }
}
