@testable import AppServer
import CareModel
import Foundation
import Hummingbird
import HummingbirdTesting
import Pipeline
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// The consent routes and the gate (issue 45): terms served, decisions recorded for the token's patient
/// only (201, then 200 for the same again), hostile bodies refused with reasons and nothing stored, and
/// with `required: true` every other route 403 `consent-required` until the patient agrees, again after
/// a withdrawal; decisions and refusals in the audit trail, without the document.
final class ConsentRouteTests: XCTestCase {
    private func server(_ fixture: AppServerFixture, required: Bool) throws -> AppServer {
        var server = fixture.server
        server.consentTerms = try ConsentTermsFile.load(path: ConsentFixture.writeTerms(in: makeScratchFolder("consent-route"), required: required))
        return server
    }

    private func test(_ server: AppServer, _ body: @Sendable @escaping (any TestClientProtocol) async throws -> Void) async throws {
        try await Application(router: server.router()).test(.router, body)
    }

    func testTermsAreServedAndADecisionIsRecordedOnce() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let server = try server(fixture, required: false)
            let headers = fixture.bearer(try fixture.token("Patient/pat-1"))
            try await test(server) { client in
                try await client.execute(uri: "/carekit/v1/consent-terms", method: .get, headers: headers) { response in
                    XCTAssertEqual(response.status, .ok)
                    let body = response.json as? [String: Any]
                    XCTAssertEqual(body?["id"] as? String, "app-sharing")
                    XCTAssertEqual(body?["version"] as? String, "1")
                    XCTAssertEqual(body?["format"] as? String, "markdown")
                    XCTAssertTrue((body?["document"] as? String)?.hasPrefix("# Sharing") ?? false)
                }
                for expected in [HTTPResponse.Status.created, .ok] {
                    try await client.execute(uri: "/carekit/v1/consents", method: .post, headers: headers, body: ByteBuffer(bytes: ConsentFixture.body(decision: "agree"))) { response in
                        XCTAssertEqual(response.status, expected, response.text)
                        let body = response.json as? [String: Any]
                        XCTAssertEqual(body?["decision"] as? String, "agree")
                        XCTAssertEqual(body?["writtenBack"] as? Bool, false)
                        XCTAssertEqual((body?["terms"] as? [String: Any])?["version"] as? String, "1")
                    }
                }
                try await client.execute(uri: "/carekit/v1/consents", method: .post, headers: headers,
                                         body: ByteBuffer(bytes: ConsentFixture.body(decision: "withdraw", date: "2026-03-04T08:00:00Z", signature: nil, document: nil))) { response in
                    XCTAssertEqual(response.status, .created, response.text)
                }
                try await client.execute(uri: "/carekit/v1/consents", method: .get, headers: headers) { response in
                    XCTAssertEqual(response.status, .ok)
                    let list = (response.json as? [String: Any])?["consents"] as? [[String: Any]]
                    XCTAssertEqual(list?.map { $0["decision"] as? String }, ["agree", "withdraw"])
                }
                try await client.execute(uri: "/carekit/v1/consents", method: .get, headers: fixture.bearer(try fixture.token("Patient/pat-2"))) { response in
                    XCTAssertEqual(((response.json as? [String: Any])?["consents"] as? [Any])?.count, 0, "pat-1's decisions are not pat-2's")
                }
            }
            XCTAssertEqual(try fixture.store.consentDecisions(patientID: "Patient/pat-1").count, 2)
            let audit = try fixture.store.auditEntries(patientID: "Patient/pat-1", limit: 100).filter { $0.action == "POST /carekit/v1/consents" }
            XCTAssertEqual(audit.compactMap(\.detail).sorted(), [
                "consent agree to app-sharing version 1: recorded", "consent agree to app-sharing version 1: recorded before",
                "consent withdraw to app-sharing version 1: recorded",
            ])
            XCTAssertFalse(audit.contains { ($0.detail ?? "").contains(ConsentFixture.pdf.base64EncodedString().prefix(12)) })
        }
    }

    func testHostileBodiesAreRefusedWithReasonsAndNothingIsStored() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let server = try server(fixture, required: true)
            let headers = fixture.bearer(try fixture.token("Patient/pat-1"))
            let cases: [(Data, HTTPResponse.Status, String)] = [
                (ConsentFixture.body(decision: "agree", document: Data("%PDF-".utf8) + Data(count: ConsentSubmission.maximumDocumentBytes)), .contentTooLarge, "too-large"),
                (ConsentFixture.body(decision: "agree", signature: Data("<svg xmlns='http://www.w3.org/2000/svg'/>".utf8)), .unprocessableContent, "not-png"),
                (ConsentFixture.body(decision: "agree", termsID: "no-such-terms"), .unprocessableContent, "unknown-terms"),
                (ConsentFixture.body(decision: "agree", version: "0"), .unprocessableContent, "outdated-terms"),
                (ConsentFixture.body(decision: "agree", extra: ["patient": "Patient/pat-2"]), .forbidden, "forbidden"),
                (ConsentFixture.body(decision: "withdraw", signature: nil, document: nil), .unprocessableContent, "nothing-to-withdraw"),
                (Data("{".utf8), .badRequest, "bad-request"),
            ]
            try await test(server) { client in
                for (body, status, code) in cases {
                    try await client.execute(uri: "/carekit/v1/consents", method: .post, headers: headers, body: ByteBuffer(bytes: body)) { response in
                        XCTAssertEqual(response.status, status, response.text)
                        XCTAssertEqual((response.json as? [String: Any])?["error"] as? String, code, response.text)
                    }
                }
            }
            XCTAssertEqual(try fixture.store.consentDecisions(patientID: "Patient/pat-1").count, 0)
            XCTAssertEqual(try fixture.store.consentDecisions(patientID: "Patient/pat-2").count, 0)
            XCTAssertEqual(try fixture.store.outboxEntries(in: .pending, limit: 10).count, 0)
        }
    }

    /// `required: true`: reads and pushes 403 `consent-required` with the terms and no patient data until
    /// the patient agrees, then answered; after a withdrawal, 403 again. Each refusal is audited.
    func testRequiredConsentGatesEveryOtherRoute() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let server = try server(fixture, required: true)
            let headers = fixture.bearer(try fixture.token("Patient/pat-1"))
            let reads = ["/carekit/v1/tasks", "/carekit/v1/careplans", "/carekit/v1/patient", #"/carekit/v1/revisions?knowledgeVector={"processes":[]}"#]
            @Sendable func expectGated(_ client: any TestClientProtocol, _ gated: Bool) async throws {
                for uri in reads {
                    try await client.execute(uri: uri, method: .get, headers: headers) { response in
                        if gated {
                            XCTAssertEqual(response.status, .forbidden, uri)
                            let body = response.json as? [String: Any]
                            XCTAssertEqual(body?["error"] as? String, "consent-required")
                            XCTAssertEqual(body?["terms"] as? [String: String], ["id": "app-sharing", "version": "1"])
                            XCTAssertFalse(response.text.contains("pat-1"), response.text)
                        } else {
                            XCTAssertEqual(response.status, .ok, "\(uri): \(response.text)")
                        }
                    }
                }
                try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: headers, body: ByteBuffer(string: "{}")) { response in
                    if gated { XCTAssertEqual(response.status, .forbidden) } else { XCTAssertNotEqual(response.status, .forbidden) }
                }
            }
            try await test(server) { client in
                try await expectGated(client, true)
                try await client.execute(uri: "/carekit/v1/consent-terms", method: .get, headers: headers) { XCTAssertEqual($0.status, .ok) }
                try await client.execute(uri: "/carekit/v1/consents", method: .post, headers: headers, body: ByteBuffer(bytes: ConsentFixture.body(decision: "agree"))) {
                    XCTAssertEqual($0.status, .created)
                }
                try await expectGated(client, false)
                try await client.execute(uri: "/carekit/v1/consents", method: .post, headers: headers,
                                         body: ByteBuffer(bytes: ConsentFixture.body(decision: "withdraw", date: "2026-03-04T08:00:00Z", signature: nil, document: nil))) {
                    XCTAssertEqual($0.status, .created)
                }
                try await expectGated(client, true)
            }
            let refused = try fixture.store.auditEntries(patientID: "Patient/pat-1", limit: 100).filter { $0.status == 403 }
            XCTAssertEqual(refused.count, 2 * (reads.count + 1))
            XCTAssertTrue(refused.allSatisfy { $0.detail == "consent-required" }, "\(refused.map(\.detail))")
        }
    }
}
