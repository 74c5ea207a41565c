@testable import AppServer
import Foundation
import Logging
import TestSupport
import XCTest

/// The issuer's discovery document and JWK Set read from a hostile server (Scripts/hostile-server.py):
/// a redirect never leads where naming the URL could not (https, plain http only on the loopback),
/// and an answer that never ends, lies about its length or keeps coming after the hang-up is refused
/// at the limit with the process's peak memory bounded.
final class IssuerRedirectTests: XCTestCase {
    /// A server with an issuer's documents under /files/issuer: its SMART configuration names
    /// `jwksURI(port)` as its key set.
    private func issuerServer(jwksURI: (Int) -> String) throws -> (HostileServerProcess, TestIssuer, String) {
        let folder = try makeScratchFolder("issuer-redirects")
        let documents = folder.appendingPathComponent("issuer/.well-known")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        let server = try HostileServerProcess.start(seconds: 8, bytes: 512 << 20, root: folder)
        let issuerURL = server.origin.absoluteString + "/files/issuer"
        let issuer = try TestIssuer(issuer: issuerURL)
        try issuer.smartConfiguration(jwksURI: jwksURI(server.port)).write(to: documents.appendingPathComponent("smart-configuration"))
        try issuer.jwks().write(to: folder.appendingPathComponent("issuer/jwks.json"))
        return (server, issuer, issuerURL)
    }

    private func verifier(_ issuer: String) throws -> IssuerTokenVerifier {
        var logger = Logger(label: "test.issuer")
        logger.logLevel = .critical
        return IssuerTokenVerifier(try IssuerConfiguration(issuer: issuer, audience: TestIssuer.audience), logger: logger)
    }

    func testAKeySetRedirectedToPlainHTTPElsewhereIsRefused() async throws {
        // 127.0.0.2 is another host (on the loopback network, so nothing leaves the machine), not one of
        // the names plain http is allowed on.
        let (server, _, issuerURL) = try issuerServer { port in "http://127.0.0.1:\(port)/redirect/302/http/127.0.0.2/\(port)/files/issuer/jwks.json" }
        defer { server.stop() }
        let verifier = try verifier(issuerURL)
        do {
            _ = try await verifier.refreshKeys()
            XCTFail("keys were trusted from a redirect to plain http on another host")
        } catch {
            guard case .unreachable(_, let reason) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("redirect to http://127.0.0.2:\(server.port)/files/issuer/jwks.json is not followed"), reason)
            XCTAssertTrue(reason.contains("must be https"), reason)
        }
    }

    func testADiscoveryDocumentRedirectedToPlainHTTPElsewhereIsRefused() async throws {
        let (server, _, _) = try issuerServer { port in "http://127.0.0.1:\(port)/files/issuer/jwks.json" }
        defer { server.stop() }
        // The issuer's own well-known URLs answer 302 to plain http on another host.
        let redirecting = server.origin.absoluteString + "/redirect/302/http/127.0.0.2/\(server.port)/files/issuer"
        let verifier = try verifier(redirecting)
        do {
            _ = try await verifier.refreshKeys()
            XCTFail("a discovery document was read through a redirect to plain http on another host")
        } catch {
            guard case .unreachable(_, let reason) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("is not followed"), reason)
            XCTAssertTrue(reason.contains("must be https"), reason)
        }
        XCTAssertFalse(try server.records().contains { $0.path.contains("jwks") }, "no key set was asked for")
    }

    func testARedirectWithinTheRuleIsFollowed() async throws {
        // Loopback to loopback over plain http: allowed (as naming it directly is), so followed.
        let (server, _, issuerURL) = try issuerServer { port in "http://127.0.0.1:\(port)/redirect/307/http/localhost/\(port)/files/issuer/jwks.json" }
        defer { server.stop() }
        let count = try await verifier(issuerURL).refreshKeys()
        XCTAssertEqual(count, 3)
    }

    func testTooManyRedirectsAreRefused() async throws {
        let (server, _, _) = try issuerServer { _ in "" }
        defer { server.stop() }
        // Each hop adds one redirect in front of the next: four hops, one more than allowed.
        var url = "/files/issuer/jwks.json"
        for _ in 0...BoundedFetch.maximumRedirects { url = "/redirect/302/http/127.0.0.1/\(server.port)" + url }
        do {
            _ = try await BoundedFetch.get(URL(string: server.origin.absoluteString + url)!, limit: 1 << 16, deadline: 5)
            XCTFail("an endless chain of redirects was followed")
        } catch {
            guard case .unreachable(_, let reason) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("more than \(BoundedFetch.maximumRedirects) redirects"), reason)
        }
    }

    /// The rule each hop is checked against, for what a local server cannot show (https).
    func testTheRuleOfEveryHop() {
        for allowed in ["https://issuer.test/keys", "https://other.test:8443/jwks", "http://127.0.0.1:9/x", "http://localhost/x", "http://[::1]:8/x"] {
            XCTAssertNil(BoundedFetch.refusal(URL(string: allowed)!), allowed)
        }
        for refused in ["http://issuer.test/keys", "http://127.0.0.2/keys", "http://10.0.0.1/keys", "ftp://issuer.test/keys", "https://user:pw@issuer.test/keys", "/relative"] {
            XCTAssertNotNil(BoundedFetch.refusal(URL(string: refused)!), refused)
        }
    }

    /// A key set that never ends, lies about its length, or keeps coming after the hang-up: refused at
    /// the limit, the process's peak memory growing by a few times the limit at most.
    func testAHostileKeySetIsRefusedAtItsLimitWithMemoryBounded() async throws {
        guard PeakMemory.peakBytes != nil, PeakMemory.resetPeak() else { throw XCTSkip("no /proc/self/status or clear_refs here") }
        let server = try HostileServerProcess.start(seconds: 8, bytes: 512 << 20)
        defer { server.stop() }
        let limit = 256 * 1024
        let fetcher = BoundedFetch()
        _ = try? await fetcher.get(server.url("/fhir/metadata"), limit: limit, deadline: 5)
        for mode in ["endless", "lying", "after-hangup"] {
            PeakMemory.resetPeak()
            let before = PeakMemory.residentBytes ?? 0
            let url = server.url("/\(mode)/jwks.json")
            do {
                _ = try await fetcher.get(url, limit: limit, deadline: 5)
                XCTFail("\(mode): read")
            } catch {
                XCTAssertEqual(error, .tooLarge(url: url.absoluteString, limit: limit), mode)
            }
            let stream = try XCTUnwrap(try server.settledStream("/\(mode)/"))
            let growth = (PeakMemory.peakBytes ?? 0) - before
            print("issuer \(mode): peak resident memory grew by \(growth >> 10) KiB (limit \(limit >> 10) KiB); the server could send \(stream.bytes >> 10) KiB")
            // 4 MiB: the answer, the transport's buffers and the first use of a connection; URLSession
            // grew by 11 to 16 MiB here (and the tester saw 174-285 MB with the real 256 KiB limit).
            XCTAssertLessThan(growth, 4 << 20, "\(mode): the peak grew by \(growth >> 10) KiB")
            XCTAssertLessThan(stream.bytes, Int64(limit) + (16 << 20), "\(mode): the server could send \(stream.bytes >> 20) MiB")
        }
    }
}
