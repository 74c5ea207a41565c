@testable import AppServer
@preconcurrency import Crypto
import Foundation
import TestSupport
import XCTest

/// A SMART issuer's access tokens, checked against its JWK Set (served here from memory: the live test
/// is `IssuerLiveTests`): the algorithms accepted, every way of getting one wrong refused, the scopes
/// that grant reads and writes, and the bounds on fetching keys.
final class IssuerTokenTests: XCTestCase {
    typealias Documents = IssuerDocuments
    static let jwksURL = IssuerDocuments.jwksURL
    static let smartURL = IssuerDocuments.smartURL
    static let openIDURL = "https://issuer.test/smart/.well-known/openid-configuration"

    private func verifier(_ issuer: TestIssuer, _ documents: Documents) throws -> IssuerTokenVerifier {
        try issuer.verifier(documents)
    }

    private func documents(_ issuer: TestIssuer) throws -> Documents {
        try IssuerDocuments(serving: issuer)
    }

    func testEachAcceptedAlgorithmVerifiesToThePatientsStoreID() async throws {
        let issuer = try TestIssuer()
        let documents = try documents(issuer)
        let verifier = try verifier(issuer, documents)
        for (alg, kid) in [("RS256", "rsa-1"), ("RS384", "rsa-1"), ("ES256", "ec-256"), ("ES384", "ec-384"), ("ES256", nil)] {
            let token = try issuer.token(issuer.claims(), alg: alg, kid: kid, signingKid: kid ?? "ec-256")
            let verified = try await verifier.verify(token, access: .read)
            XCTAssertEqual(verified.patientID, "Patient/pat-1", alg)
            XCTAssertEqual(verified.subject, "user-of-pat-1", alg)
            let written = try await verifier.verify(token, access: .write)
            XCTAssertEqual(written.patientID, "Patient/pat-1")
        }
        // One discovery, one JWK Set fetch for all of them.
        XCTAssertEqual(documents.count(Self.smartURL), 1)
        XCTAssertEqual(documents.count(Self.jwksURL), 1)
    }

    func testEachBadTokenIsRefusedWithItsReason() async throws {
        let issuer = try TestIssuer()
        let verifier = try verifier(issuer, try documents(issuer))
        let expected: [String: TokenError] = [
            "issuer: expired": .expired, "issuer: not yet valid": .notYetValid, "issuer: other audience": .wrongAudience,
            "issuer: forged (other key, same kid)": .badSignature, "issuer: forged ES256 (other key, same kid)": .badSignature,
            "issuer: unknown kid": .unknownKey, "issuer: alg none": .unsupportedAlgorithm,
            "issuer: HS256 with the public key as secret": .unsupportedAlgorithm, "issuer: RS256 header on an ES256 key": .unknownKey,
            "issuer: no patient claim": .noPatient, "issuer: patient claim not a FHIR id": .noPatient,
            "issuer: no patient-level read scope": .insufficientScope,
        ]
        for (name, token, _) in try issuer.badTokens(other: try TestIssuer()) where name != "issuer: wrong issuer" {
            do {
                _ = try await verifier.verify(token, access: .read)
                XCTFail("\(name): accepted")
            } catch {
                XCTAssertEqual(error, expected[name], name)
            }
        }
        // The issuer's verifier itself refuses another issuer's name (the composite sends those to CareGate's).
        var claims = issuer.claims()
        claims["iss"] = "https://issuer.test/other"
        let otherIssuer = try issuer.token(claims)
        do {
            _ = try await verifier.verify(otherIssuer, access: .read)
            XCTFail("another issuer accepted")
        } catch {
            XCTAssertEqual(error, .wrongIssuer)
        }
        // No exp at all is refused too.
        claims = issuer.claims()
        claims["exp"] = nil
        let noExpiry = try issuer.token(claims)
        do {
            _ = try await verifier.verify(noExpiry, access: .read)
            XCTFail("no exp accepted")
        } catch {
            XCTAssertEqual(error, .expired)
        }
    }

    func testScopesGrantReadsAndWritesAsDocumented() throws {
        let cases: [(String, read: Bool, write: Bool)] = [
            ("patient/*.read", true, false), ("patient/*.rs", true, false), ("patient/*.r", true, false), ("patient/*.cruds", true, true),
            ("patient/*.*", true, true), ("patient/*.write", false, true), ("patient/Observation.write", false, true),
            ("patient/Observation.cu", false, true), ("patient/Observation.c", false, false), ("patient/Observation.cud", false, true),
            ("patient/Observation.rs patient/Patient.rs patient/CarePlan.rs", false, false), ("user/*.*", false, false),
            ("system/*.cruds", false, false), ("patient/*.rs?category=vital-signs", false, false), ("patient/*.sr", false, false),
            ("patient/*.rr", false, false), ("patient/*.", false, false), ("patient/*.rs patient/Observation.cu", true, true),
            ("launch/patient openid fhirUser offline_access", false, false), ("", false, false),
        ]
        for (scope, read, write) in cases {
            XCTAssertEqual(SMARTScopes(scope).grants(.read), read, scope)
            XCTAssertEqual(SMARTScopes(scope).grants(.write), write, scope)
        }
    }

    /// A token naming a key the cache lacks fetches the JWK Set again, at most once a minute: a rotated
    /// key is found, and a flood of unknown kids costs the issuer one request a minute.
    func testAnUnknownKidRefetchesTheKeysAtMostOncePerMinute() async throws {
        let issuer = try TestIssuer()
        let documents = try documents(issuer)
        documents.set(Self.jwksURL, try issuer.jwks(["rsa-1"]))
        let verifier = try verifier(issuer, documents)
        let start = Date()
        _ = try await verifier.verify(try issuer.token(issuer.claims(now: start)), access: .read, now: start)
        XCTAssertEqual(documents.count(Self.jwksURL), 1)
        // The issuer adds a key; within the minute its tokens are refused and the set is not fetched again.
        documents.set(Self.jwksURL, try issuer.jwks(["rsa-1", "ec-256"]))
        let rotated = try issuer.token(issuer.claims(now: start), alg: "ES256", kid: "ec-256")
        for second in [1.0, 10, 59] {
            do {
                _ = try await verifier.verify(rotated, access: .read, now: start.addingTimeInterval(second))
                XCTFail("fetched again within the minute")
            } catch {
                XCTAssertEqual(error, .unknownKey)
            }
        }
        XCTAssertEqual(documents.count(Self.jwksURL), 1)
        // After the minute: fetched once more, and accepted.
        let verified = try await verifier.verify(rotated, access: .read, now: start.addingTimeInterval(61))
        XCTAssertEqual(verified.patientID, "Patient/pat-1")
        XCTAssertEqual(documents.count(Self.jwksURL), 2)
        // Many concurrent unknown kids after another minute: one fetch between them.
        let unknown = try issuer.token(issuer.claims(now: start), kid: "rsa-9", signingKid: "rsa-1")
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask { _ = try? await verifier.verify(unknown, access: .read, now: start.addingTimeInterval(130)) }
            }
        }
        XCTAssertEqual(documents.count(Self.jwksURL), 3)
        XCTAssertEqual(documents.count(Self.smartURL), 1, "the JWK Set's URL is kept")
    }

    func testDiscoveryFallsBackToOpenIDAndChecksTheIssuerAndBounds() async throws {
        let issuer = try TestIssuer()
        let token = try issuer.token(issuer.claims())
        // No SMART configuration: the OpenID one.
        var documents = Documents([Self.openIDURL: try issuer.smartConfiguration(jwksURI: Self.jwksURL), Self.jwksURL: try issuer.jwks()])
        let verified = try await verifier(issuer, documents).verify(token, access: .read)
        XCTAssertEqual(verified.patientID, "Patient/pat-1")
        XCTAssertEqual(documents.count(Self.smartURL), 1)

        // A discovery document of another issuer, a plain-http jwks_uri, too many keys, too large, no
        // usable key, unreachable: the keys cannot be had; the token is refused with 503, not accepted.
        let other = try TestIssuer(issuer: "https://issuer.test/elsewhere")
        var manyKeys: [[String: String]] = []
        for index in 0..<33 { manyKeys.append(["kty": "EC", "kid": "k\(index)", "crv": "P-256", "x": "AA", "y": "AA"]) }
        let broken: [(String, [String: Data])] = [
            ("other issuer", [Self.smartURL: try other.smartConfiguration(jwksURI: Self.jwksURL), Self.jwksURL: try issuer.jwks()]),
            ("http jwks_uri", [Self.smartURL: try issuer.smartConfiguration(jwksURI: "http://issuer.test/keys.json"), "http://issuer.test/keys.json": try issuer.jwks()]),
            ("too many keys", [Self.smartURL: try issuer.smartConfiguration(jwksURI: Self.jwksURL), Self.jwksURL: try JSONSerialization.data(withJSONObject: ["keys": manyKeys])]),
            ("too large", [Self.smartURL: try issuer.smartConfiguration(jwksURI: Self.jwksURL), Self.jwksURL: Data(count: 300_000)]),
            ("no usable key", [Self.smartURL: try issuer.smartConfiguration(jwksURI: Self.jwksURL), Self.jwksURL: Data(#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#.utf8)]),
            ("unreachable", [:]),
        ]
        for (name, served) in broken {
            documents = Documents(served)
            let verifier = try verifier(issuer, documents)
            do {
                _ = try await verifier.verify(token, access: .read)
                XCTFail("\(name): accepted")
            } catch {
                XCTAssertEqual(error, .issuerUnavailable, name)
            }
            do {
                _ = try await verifier.refreshKeys()
                XCTFail("\(name): keys read")
            } catch {
                XCTAssertFalse("\(error)".contains(token), name)
            }
        }
    }

    /// The network fetch over real HTTP: a document is read, one over the byte limit is refused from its
    /// Content-Length, one slower than the deadline ends at the deadline, a 404 is an error.
    func testTheFetchIsBoundedInSizeAndTime() async throws {
        let (server, port) = try ScriptRunner.startHTTPServerPython(prelude: "import time", answer: """
            if self.path == '/big': body = b'x' * 400000
            elif self.path == '/slow': time.sleep(4); body = b'{}'
            elif self.path == '/small': body = b'{"keys":[]}'
            else: status = 404
            """, threaded: true)
        defer {
            // SIGKILL: a process started from a concurrency thread inherits its mask, SIGTERM blocked.
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        let base = "http://127.0.0.1:\(port)"
        let small = try await BoundedFetch.get(URL(string: base + "/small")!, limit: 1024, deadline: 5)
        XCTAssertEqual(String(decoding: small, as: UTF8.self), #"{"keys":[]}"#)
        do {
            _ = try await BoundedFetch.get(URL(string: base + "/big")!, limit: 256 * 1024, deadline: 5)
            XCTFail("an oversize document was read")
        } catch {
            XCTAssertEqual(error, .tooLarge(url: base + "/big", limit: 256 * 1024))
        }
        // The answer comes after 4 s: a fetch that waited for it would have read it.
        do {
            _ = try await BoundedFetch.get(URL(string: base + "/slow")!, limit: 1024, deadline: 1)
            XCTFail("a slow document was waited for")
        } catch {
            guard case .unreachable = error else { return XCTFail("\(error)") }
        }
        do {
            _ = try await BoundedFetch.get(URL(string: base + "/missing")!, limit: 1024, deadline: 5)
            XCTFail("a 404 was read")
        } catch {
            XCTAssertEqual(error, .unreachable(url: base + "/missing", reason: "HTTP 404"))
        }
    }

    func testAnIssuerMustBeHTTPSOrLoopback() {
        for bad in ["http://issuer.test", "ftp://issuer.test", "issuer.test", "https://issuer.test/?x=1", "https://user@issuer.test", ""] {
            XCTAssertThrowsError(try IssuerConfiguration(issuer: bad, audience: TestIssuer.audience), bad)
        }
        for good in ["https://issuer.test", "https://issuer.test/realms/x/", "http://127.0.0.1:9000", "http://localhost:8080/smart"] {
            XCTAssertNoThrow(try IssuerConfiguration(issuer: good, audience: TestIssuer.audience), good)
        }
    }
}
