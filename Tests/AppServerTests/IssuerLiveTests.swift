import AppServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import StoreTestSupport
import TestSupport
import XCTest

/// `caregate serve --issuer` as its own process, beside a SMART issuer of the test's own (a Python HTTP
/// server on 127.0.0.1 serving `.well-known/smart-configuration` and a JWK Set of keys made here): its
/// tokens are accepted beside CareGate's own, and the bad ones refused with nothing of a patient.
final class IssuerLiveTests: XCTestCase {
    /// One request: status, `WWW-Authenticate`, body.
    private func get(_ url: URL, token: String?, method: String = "GET") async throws -> (Int, String?, String) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if method == "POST" { request.httpBody = Data(#"{"deviceRevisions":[],"deviceKnowledge":{"processes":[]}}"#.utf8) }
        return try await withCheckedThrowingContinuation { continuation in
            URLSession.shared.dataTask(with: request) { data, response, error in
                guard let http = response as? HTTPURLResponse else {
                    return continuation.resume(throwing: error ?? URLError(.badServerResponse))
                }
                continuation.resume(returning: (http.statusCode, http.value(forHTTPHeaderField: "WWW-Authenticate"), String(decoding: data ?? Data(), as: UTF8.self)))
            }.resume()
        }
    }

    func testServeAcceptsARealIssuersTokensBesideItsOwnAndRefusesTheBadOnes() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            let folder = try makeScratchFolder("issuer-live")
            let documents = folder.appendingPathComponent("documents")
            try FileManager.default.createDirectory(at: documents.appendingPathComponent("smart/.well-known"), withIntermediateDirectories: true)
            // The issuer: files of `documents`, and /_counts, how often each path was asked for.
            let root = String(decoding: try JSONSerialization.data(withJSONObject: [documents.path], options: [.withoutEscapingSlashes]), as: UTF8.self)
            let (python, port) = try ScriptRunner.startHTTPServerPython(prelude: "import os\nroot = \(root)[0]\ncounts = {}", answer: """
                path = self.path.split('?')[0]
                counts[path] = counts.get(path, 0) + 1
                file = os.path.normpath(os.path.join(root, path.lstrip('/')))
                if path == '/_counts':
                    body = json.dumps(counts).encode()
                elif file.startswith(root) and os.path.isfile(file):
                    body, headers = open(file, 'rb').read(), {'Content-Type': 'application/json'}
                else:
                    status = 404
                """)
            defer {
                // SIGKILL: a process started from a concurrency thread inherits its mask, SIGTERM blocked.
                kill(python.processIdentifier, SIGKILL)
                python.waitUntilExit()
            }
            let issuerURL = "http://127.0.0.1:\(port)/smart"
            let issuer = try TestIssuer(issuer: issuerURL)
            try issuer.smartConfiguration(jwksURI: issuerURL + "/jwks.json")
                .write(to: documents.appendingPathComponent("smart/.well-known/smart-configuration"))
            try issuer.jwks().write(to: documents.appendingPathComponent("smart/jwks.json"))

            // A store with Patient/pat-1 and Patient/pat-2 (what an import of FHIR patients pat-1 and pat-2 gives).
            let store = try XCTUnwrap(tested.location)
            let fixture = try AppServerFixture(tested)
            let key = folder.appendingPathComponent("server.key").path
            let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "Patient/pat-1", "--audience", TestIssuer.audience])
            XCTAssertEqual(issued.status, 0, issued.stderr)
            let own = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

            // --issuer without --audience, or on plain http elsewhere than the loopback: usage errors.
            XCTAssertEqual(try CLIRunner.run(["serve", "--store", store, "--key", key, "--issuer", issuerURL]).status, 2)
            XCTAssertEqual(try CLIRunner.run(["serve", "--store", store, "--key", key, "--issuer", "http://issuer.test", "--audience", "x"]).status, 2)

            let server = try AppServerProcess.start(store: store, key: key, extra: ["--issuer", issuerURL, "--audience", TestIssuer.audience])
            defer { server.stop() }
            let tasks = server.base.appendingPathComponent("carekit/v1/tasks")
            let revisions = server.base.appendingPathComponent("carekit/v1/revisions")

            // Accepted: the issuer's tokens of each algorithm, and CareGate's own, each for its patient only.
            for (alg, kid) in [("RS256", "rsa-1"), ("RS384", "rsa-1"), ("ES256", "ec-256"), ("ES384", "ec-384")] {
                for patient in ["pat-1", "pat-2"] {
                    let (status, _, body) = try await get(tasks, token: try issuer.token(issuer.claims(patient: patient), alg: alg, kid: kid))
                    XCTAssertEqual(status, 200, "\(alg): \(body)")
                    XCTAssertTrue(body.contains("task-\(patient)"), "\(alg): \(body)")
                    XCTAssertFalse(body.contains(patient == "pat-1" ? "pat-2" : "pat-1"), alg)
                }
            }
            let (ownStatus, _, ownBody) = try await get(tasks, token: own)
            XCTAssertEqual(ownStatus, 200, ownBody)
            XCTAssertTrue(ownBody.contains("task-pat-1"), ownBody)
            // A push with write scopes gets past the token (an empty push is a 200 or a 409, never a 401/403).
            let (pushStatus, _, pushBody) = try await get(revisions, token: try issuer.token(issuer.claims()), method: "POST")
            XCTAssertTrue([200, 409].contains(pushStatus), pushBody)
            // Read scopes only: the push is refused 403, the read allowed.
            let readOnly = try issuer.token(issuer.claims(scope: "patient/*.rs"))
            let (readOnlyPush, challenge, _) = try await get(revisions, token: readOnly, method: "POST")
            XCTAssertEqual(readOnlyPush, 403)
            XCTAssertEqual(challenge, #"Bearer error="insufficient_scope""#)
            let readOnlyRead = try await get(tasks, token: readOnly)
            XCTAssertEqual(readOnlyRead.0, 200)

            // Refused: every bad token, on a read and on the push, with nothing of a patient in the body.
            for (name, token, expected) in try issuer.badTokens(other: try TestIssuer(issuer: issuerURL)) {
                for (url, method) in [(tasks, "GET"), (revisions, "POST")] {
                    let (status, challenge, body) = try await get(url, token: token, method: method)
                    XCTAssertEqual(status, expected, "\(name) \(method): \(body)")
                    XCTAssertEqual(challenge, expected == 403 ? #"Bearer error="insufficient_scope""# : #"Bearer error="invalid_token""#, name)
                    XCTAssertFalse(body.contains("pat-"), "\(name): \(body)")
                    XCTAssertFalse(body.contains(token), name)
                }
            }
            // A patient the store does not have: 403.
            let unknownPatient = try await get(tasks, token: try issuer.token(issuer.claims(patient: "pat-9")))
            XCTAssertEqual(unknownPatient.0, 403)

            // The keys were fetched once at start-up: the unknown kids within the minute fetched nothing more.
            let counts = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(string: "http://127.0.0.1:\(port)/_counts")!)) as? [String: Int]
            XCTAssertEqual(counts?["/smart/.well-known/smart-configuration"], 1)
            XCTAssertEqual(counts?["/smart/jwks.json"], 1)

            let stopped = server.stop()
            XCTAssertFalse(stopped?.stderr.contains(own) ?? true, "a token in the server's log")
            XCTAssertFalse(stopped?.stderr.contains("Given-pat") ?? true, "patient data in the server's log")
            _ = fixture
        }
    }
}
