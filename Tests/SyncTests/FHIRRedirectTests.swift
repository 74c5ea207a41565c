import Crypto
import Foundation
@testable import Sync
import TestSupport
import XCTest

/// Redirects the FHIR client follows (``FHIRRedirects``), through real servers on 127.0.0.1
/// (Scripts/hostile-server.py): only to the same scheme or a stronger one, a bounded number of them,
/// and the `Authorization` header never to another origin.
final class FHIRRedirectTests: XCTestCase {
    private func client(_ base: URL, token: String? = "secret-token") -> FHIRClient {
        FHIRClient(base: base, timeout: 10, headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:], retry: RetryPolicy(maxAttempts: 1))
    }

    func testARedirectToAnotherOriginIsFollowedWithoutTheCredentials() throws {
        let first = try HostileServerProcess.start()
        defer { first.stop() }
        let second = try HostileServerProcess.start()
        defer { second.stop() }
        // Another port is another origin (RFC 6454): the token stays with the first.
        let base = first.url("/redirect/302/http/127.0.0.1/\(second.port)/fhir")
        XCTAssertEqual(try client(base).capabilities().resourceType, "CapabilityStatement")
        XCTAssertEqual(try first.records().map(\.authorization), [true], "the first origin gets the token")
        let reached = try second.records()
        XCTAssertEqual(reached.map(\.path), ["/fhir/metadata"])
        XCTAssertEqual(reached.map(\.authorization), [false], "the token was sent to another origin")
    }

    func testARedirectWithinTheOriginKeepsTheCredentials() throws {
        let server = try HostileServerProcess.start()
        defer { server.stop() }
        let base = server.url("/redirect/307/http/127.0.0.1/\(server.port)/fhir")
        XCTAssertEqual(try client(base).capabilities().resourceType, "CapabilityStatement")
        XCTAssertEqual(try server.records().map(\.authorization), [true, true])
    }

    func testAnEndlessChainOfRedirectsIsRefused() throws {
        let server = try HostileServerProcess.start()
        defer { server.stop() }
        var path = "/fhir"
        for _ in 0...FHIRRedirects.maximumHops { path = "/redirect/302/http/127.0.0.1/\(server.port)" + path }
        XCTAssertThrowsError(try client(server.url(path)).capabilities()) { error in
            guard case FHIRClientError.redirectRefused(_, _, let reason)? = error as? FHIRClientError else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("more than \(FHIRRedirects.maximumHops) redirects"), reason)
            XCTAssertFalse((error as? FHIRClientError)?.isTransient ?? true)
        }
        XCTAssertEqual(try server.records().count, FHIRRedirects.maximumHops + 1)
    }

    /// The rule of every hop, for what a local server cannot show (https): the same scheme or stronger.
    func testTheRuleOfEveryHop() throws {
        let allowed = [
            ("https://ehr.test/fhir", "https://other.test/fhir"), ("http://ehr.test/fhir", "https://ehr.test/fhir"),
            ("http://ehr.test/fhir", "http://other.test:8080/fhir"),
        ]
        for (from, to) in allowed {
            XCTAssertNil(FHIRRedirects.refusal(from: URL(string: from)!, to: URL(string: to)!), "\(from) -> \(to)")
        }
        let refused = [
            ("https://ehr.test/fhir", "http://ehr.test/fhir"), ("https://ehr.test/fhir", "http://127.0.0.1/fhir"),
            ("http://ehr.test/fhir", "ftp://ehr.test/fhir"), ("https://ehr.test/fhir", "https://user:pw@ehr.test/fhir"),
        ]
        for (from, to) in refused {
            XCTAssertNotNil(FHIRRedirects.refusal(from: URL(string: from)!, to: URL(string: to)!), "\(from) -> \(to)")
        }
    }

    /// What the next hop carries: credentials only within the first origin, a 303 as a GET without body.
    func testTheNextHopDropsCredentialsAcrossOriginsAndA303BecomesAGET() throws {
        let origin = URL(string: "https://ehr.test/fhir")!
        let request = BoundedTransfers.Request(
            method: "POST", url: URL(string: "https://ehr.test/fhir/Observation/_search")!,
            headers: [("Authorization", "Bearer t"), ("Cookie", "c=1"), ("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/fhir+json")],
            body: Data("a=1".utf8))
        func answer(_ status: Int, _ location: String) -> BoundedTransfers.Answer {
            BoundedTransfers.Answer(status: status, headers: ["location": location], body: Data())
        }
        let sameOrigin = try XCTUnwrap(try FHIRRedirects.next(after: request, answer: answer(307, "/fhir2/Observation/_search"), origin: origin))
        XCTAssertEqual(sameOrigin.url.absoluteString, "https://ehr.test/fhir2/Observation/_search")
        XCTAssertEqual(sameOrigin.method, "POST")
        XCTAssertEqual(sameOrigin.body, Data("a=1".utf8))
        XCTAssertTrue(sameOrigin.headers.contains { $0.0 == "Authorization" })

        let elsewhere = try XCTUnwrap(try FHIRRedirects.next(after: request, answer: answer(308, "https://other.test/fhir"), origin: origin))
        XCTAssertEqual(elsewhere.headers.map(\.0), ["Content-Type", "Accept"], "credentials dropped, the rest kept")
        // Back to the first origin from there: the credentials stay dropped.
        let back = try XCTUnwrap(try FHIRRedirects.next(after: elsewhere, answer: answer(302, "https://ehr.test/fhir"), origin: origin))
        XCTAssertFalse(back.headers.contains { $0.0 == "Authorization" })

        let seeOther = try XCTUnwrap(try FHIRRedirects.next(after: request, answer: answer(303, "https://ehr.test/result"), origin: origin))
        XCTAssertEqual(seeOther.method, "GET")
        XCTAssertNil(seeOther.body)
        XCTAssertFalse(seeOther.headers.contains { $0.0 == "Content-Type" })

        XCTAssertThrowsError(try FHIRRedirects.next(after: request, answer: answer(302, "http://ehr.test/fhir"), origin: origin))
        XCTAssertNil(try FHIRRedirects.next(after: request, answer: BoundedTransfers.Answer(status: 200, headers: [:], body: Data()), origin: origin))
    }

    /// The SMART token POST follows no redirect: its client assertion is made for that one endpoint.
    func testTheTokenRequestFollowsNoRedirect() throws {
        let folder = try makeScratchFolder("token-redirect")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent(".well-known"), withIntermediateDirectories: true)
        let server = try HostileServerProcess.start(root: folder)
        defer { server.stop() }
        let endpoint = "http://127.0.0.1:\(server.port)/redirect/307/http/127.0.0.1/\(server.port)/files/token"
        try Data(#"{"token_endpoint": "\#(endpoint)"}"#.utf8).write(to: folder.appendingPathComponent(".well-known/smart-configuration"))
        let key = P384.Signing.PrivateKey()
        let auth = SMARTBackendServices(base: server.url("/files"), clientID: "caregate-test", key: try .pem(key.pemRepresentation, source: "test key"))
        XCTAssertThrowsError(try auth.authorization()) { error in
            guard case AuthorizationError.refused(let refused, let reason)? = error as? AuthorizationError else { return XCTFail("\(error)") }
            XCTAssertEqual(refused, endpoint)
            XCTAssertTrue(reason.contains("307"), reason)
        }
        XCTAssertFalse(try server.records().contains { $0.path == "/files/token" }, "the assertion was sent on to the redirect's target")
    }
}
