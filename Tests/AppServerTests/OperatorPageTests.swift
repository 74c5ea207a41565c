@testable import AppServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Mapping
import Store
import StoreTestSupport
import XCTest

/// The operator page (`/operator`): who may open it, what it shows, and each of its actions.
final class OperatorPageTests: XCTestCase {
    /// The fixture's server with the default mappings loaded, as `serve` loads them.
    private func withPage(
        _ fixture: AppServerFixture, mappings: MappingSet? = nil, _ body: @Sendable @escaping (any TestClientProtocol) async throws -> Void
    ) async throws {
        var server = fixture.server
        server.operatorMappings = try mappings ?? MappingSet.defaults()
        try await Application(router: server.router()).test(.router, body)
    }

    private func operatorToken(_ fixture: AppServerFixture, name: String = "night-shift") throws -> String {
        try OperatorToken.issue(name: name, key: fixture.key, lifetime: 3600)
    }

    private static func form(_ token: String, proof: String? = nil) -> (HTTPFields, ByteBuffer) {
        let headers: HTTPFields = [.authorization: "Bearer \(token)", .contentType: "application/x-www-form-urlencoded"]
        return (headers, ByteBuffer(string: "csrf=\(proof ?? OperatorAccess.formProof(for: token))"))
    }

    func testThePageRefusesNoTokenAndAPatientTokenAndShowsItsSectionsToAnOperator() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let patient = try fixture.token()
            let operatorToken = try operatorToken(fixture)
            try await withPage(fixture) { client in
                try await client.execute(uri: "/operator", method: .get) { response in
                    XCTAssertEqual(response.status, .unauthorized)
                    XCTAssertEqual(response.headers[.wwwAuthenticate], "Bearer")
                }
                try await client.execute(uri: "/operator", method: .get, headers: fixture.bearer(patient)) { response in
                    XCTAssertEqual(response.status, .forbidden)
                    XCTAssertFalse(response.text.contains("Outbox"))
                }
                try await client.execute(uri: "/operator", method: .get, headers: [.cookie: "caregate_operator=\(patient)"]) { response in
                    XCTAssertEqual(response.status, .forbidden, "a patient's token as the cookie")
                }
                try await client.execute(uri: "/operator", method: .get, headers: fixture.bearer("not.a.token")) { response in
                    XCTAssertEqual(response.status, .unauthorized)
                }
                try await client.execute(uri: "/operator", method: .get, headers: fixture.bearer(operatorToken)) { response in
                    XCTAssertEqual(response.status, .ok)
                    XCTAssertEqual(response.headers[.contentType], "text/html; charset=utf-8")
                    for section in ["id=\"outbox\"", "id=\"dead-letters\"", "id=\"mappings\"", "id=\"audit\"", "operator:night-shift"] {
                        XCTAssertTrue(response.text.contains(section), section)
                    }
                    XCTAssertFalse(response.text.lowercased().contains("<script"), "no script on the page")
                }
            }
        }
    }

    func testAnOperatorTokenOpensNoPatientRoute() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let token = try operatorToken(fixture)
            XCTAssertThrowsError(try fixture.server.verifier.verify(token))
            try await withPage(fixture) { client in
                for path in ["/carekit/v1/patient", "/carekit/v1/revisions", "/carekit/v1/tasks"] {
                    try await client.execute(uri: path, method: .get, headers: fixture.bearer(token)) { response in
                        XCTAssertEqual(response.status, .unauthorized, path)
                    }
                }
            }
        }
    }

    func testLoginSetsAStrictHttpOnlyCookieThatOpensThePageAndRefusesAPatientToken() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let token = try operatorToken(fixture)
            let patient = try fixture.token()
            try await withPage(fixture) { client in
                try await client.execute(uri: "/operator/login?token=\(patient)", method: .get) { response in
                    XCTAssertEqual(response.status, .forbidden)
                    XCTAssertNil(response.headers[.setCookie])
                }
                try await client.execute(uri: "/operator/login?token=", method: .get) { response in
                    XCTAssertEqual(response.status, .unauthorized)
                    XCTAssertNil(response.headers[.setCookie])
                }
                try await client.execute(uri: "/operator/login?token=\(token)", method: .get) { response in
                    XCTAssertEqual(response.status, .seeOther)
                    XCTAssertEqual(response.headers[.location], "/operator")
                    let cookie = try XCTUnwrap(response.headers[.setCookie])
                    XCTAssertTrue(cookie.hasPrefix("caregate_operator=\(token);"))
                    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/operator"] { XCTAssertTrue(cookie.contains(attribute), attribute) }
                }
                try await client.execute(uri: "/operator", method: .get, headers: [.cookie: "other=1; caregate_operator=\(token)"]) { response in
                    XCTAssertEqual(response.status, .ok)
                    XCTAssertTrue(response.text.contains("operator:night-shift"))
                }
            }
        }
    }

    func testReplayButtonReplaysADeadLetterWhichLeavesTheListAndEscapesWhatItShows() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            var batch = StoreBatch()
            let patient = #"{"resourceType":"Patient","id":"pat-9","name":[{"family":"Replayed","given":["Ann"]}]}"#
            batch.deadLetter(DeadLetter(
                system: "https://ehr.example/fhir", resourceType: "Patient", resourceID: "pat-9",
                reason: "mapping failed <script>alert(1)</script>", detail: "\"quoted\" & <b>bold</b>", payload: Data(patient.utf8)))
            let id = try XCTUnwrap(fixture.store.apply(batch).deadLetterIDs.first)
            let token = try operatorToken(fixture)
            try await withPage(fixture) { client in
                try await client.execute(uri: "/operator", method: .get, headers: fixture.bearer(token)) { response in
                    XCTAssertFalse(response.text.contains("<script>alert(1)</script>"))
                    XCTAssertTrue(response.text.contains("mapping failed &lt;script&gt;alert(1)&lt;/script&gt;"))
                    XCTAssertTrue(response.text.contains("&quot;quoted&quot; &amp; &lt;b&gt;bold&lt;/b&gt;"))
                    XCTAssertTrue(response.text.contains("action=\"/operator/dead-letters/\(id)/retry\""))
                    XCTAssertTrue(response.text.contains("value=\"\(OperatorAccess.formProof(for: token))\""), "each form carries the proof")
                }
                let (headers, body) = Self.form(token)
                try await client.execute(uri: "/operator/dead-letters/\(id)/retry", method: .post, headers: headers, body: body) { response in
                    XCTAssertEqual(response.status, .ok)
                    XCTAssertTrue(response.text.contains("dead letter #\(id) replayed: resolved"), response.text)
                    XCTAssertFalse(response.text.contains("action=\"/operator/dead-letters/\(id)/retry\""), "it leaves the list (the trail names it)")
                }
                try await client.execute(uri: "/operator/dead-letters/999/retry", method: .post, headers: headers, body: body) { response in
                    XCTAssertEqual(response.status, .notFound)
                }
            }
            XCTAssertNotNil(try fixture.store.deadLetter(id: id)?.resolvedDate)
            XCTAssertTrue(try fixture.store.patients(EntityQuery()).contains { $0.id.hasSuffix("Patient/pat-9") }, "imported")
        }
    }

    func testOutboxRetryRequeuesAFailedEntryAndRefusesOneNotFailed() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            var enqueue = StoreBatch()
            for index in 1...2 {
                enqueue.enqueue(OutboxEntry(destination: "https://ehr.example/fhir", entityKind: .outcome, entityID: "x_\(index)", entityUUID: UUID(), payload: Data("{}".utf8)))
            }
            let ids = try fixture.store.apply(enqueue).outboxEntryIDs
            let then = Date(timeIntervalSince1970: 1_700_000_000)
            var fail = StoreBatch()
            fail.transition(outboxEntry: ids[0], .sent(at: then))
            fail.transition(outboxEntry: ids[0], .failed(error: "HTTP 422 <i>bad</i>", retryAt: nil, at: then))
            try fixture.store.apply(fail)
            let token = try operatorToken(fixture)
            try await withPage(fixture) { client in
                try await client.execute(uri: "/operator", method: .get, headers: fixture.bearer(token)) { response in
                    XCTAssertTrue(response.text.contains("HTTP 422 &lt;i&gt;bad&lt;/i&gt;"))
                    XCTAssertTrue(response.text.contains("action=\"/operator/outbox/\(ids[0])/retry\""))
                }
                let (headers, body) = Self.form(token)
                try await client.execute(uri: "/operator/outbox/\(ids[0])/retry", method: .post, headers: headers, body: body) { response in
                    XCTAssertEqual(response.status, .ok)
                    XCTAssertTrue(response.text.contains("outbox entry #\(ids[0]) requeued"))
                }
                try await client.execute(uri: "/operator/outbox/\(ids[1])/retry", method: .post, headers: headers, body: body) { response in
                    XCTAssertEqual(response.status, .conflict, "a pending entry is not failed")
                }
                try await client.execute(uri: "/operator/outbox/abc/retry", method: .post, headers: headers, body: body) { response in
                    XCTAssertEqual(response.status, .badRequest)
                }
            }
            XCTAssertEqual(try fixture.store.dueOutboxEntries(at: Date(), limit: 10).compactMap(\.id).sorted(), ids.sorted())
        }
    }

    func testAnActionWithoutTheFormProofOrFromAnotherOriginOrTokenIsRefusedAndChangesNothing() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let id = try fixture.addFailedOutboxEntry()
            let token = try operatorToken(fixture)
            let other = try operatorToken(fixture, name: "other")
            let patient = try fixture.token()
            try await withPage(fixture) { client in
                let uri = "/operator/outbox/\(id)/retry"
                // The cookie alone, as a forged cross-site form would send it: no proof.
                try await client.execute(uri: uri, method: .post, headers: [.cookie: "caregate_operator=\(token)"], body: ByteBuffer(string: "")) { response in
                    XCTAssertEqual(response.status, .forbidden)
                }
                // Another token's proof.
                let (headers, body) = Self.form(token, proof: OperatorAccess.formProof(for: other))
                try await client.execute(uri: uri, method: .post, headers: headers, body: body) { response in
                    XCTAssertEqual(response.status, .forbidden)
                }
                // The right proof from another origin.
                var foreign = Self.form(token).0
                foreign[.origin] = "https://evil.example"
                try await client.execute(uri: uri, method: .post, headers: foreign, body: Self.form(token).1) { response in
                    XCTAssertEqual(response.status, .forbidden)
                }
                // No token, a patient's token.
                try await client.execute(uri: uri, method: .post, body: Self.form(token).1) { response in
                    XCTAssertEqual(response.status, .unauthorized)
                }
                let (patientHeaders, patientBody) = Self.form(patient)
                try await client.execute(uri: uri, method: .post, headers: patientHeaders, body: patientBody) { response in
                    XCTAssertEqual(response.status, .forbidden)
                }
                try await client.execute(uri: "/operator/dead-letters/1/retry", method: .post, headers: patientHeaders, body: patientBody) { response in
                    XCTAssertEqual(response.status, .forbidden)
                }
            }
            XCTAssertEqual(try fixture.store.outboxEntry(id: id)?.state, .failed, "nothing requeued")
        }
    }
}
