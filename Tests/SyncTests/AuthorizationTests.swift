import Crypto
import _CryptoExtras
import FHIR
import Foundation
import Sync
import TestSupport
import XCTest

/// Bearer tokens from the environment or a file, and SMART Backend Services against a token endpoint of
/// the test's own (a process on 127.0.0.1) that checks each assertion's signature with the client's
/// public key and refuses a wrong one.
final class AuthorizationTests: XCTestCase {
    /// Starts the SMART server trusting `publicKeyPEM`; its FHIR base URL and process.
    private func smartServer(trusting publicKeyPEM: String) throws -> (URL, Process) {
        let python = Corpus.projectRoot.appendingPathComponent(".venv/bin/python")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            let notice = "the test tools are not installed: run bash Scripts/setup-test-tools.sh"
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail(notice) }
            throw XCTSkip(notice)
        }
        let keyFile = try makeScratchFolder("smart").appendingPathComponent("client.pub.pem")
        try Data(publicKeyPEM.utf8).write(to: keyFile)
        let code = """
            import http.server, json, sys, urllib.parse, jwt
            public_key = open(sys.argv[1]).read()
            issued = []
            class Handler(http.server.BaseHTTPRequestHandler):
                def reply(self, status, body):
                    data = json.dumps(body).encode()
                    self.send_response(status)
                    self.send_header('Content-Type', 'application/json')
                    self.send_header('Content-Length', str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                def do_GET(self):
                    base = 'http://127.0.0.1:%d' % self.server.server_address[1]
                    if self.path == '/fhir/.well-known/smart-configuration':
                        return self.reply(200, {'token_endpoint': base + '/token'})
                    if self.path == '/issued':
                        return self.reply(200, {'issued': len(issued)})
                    token = self.headers.get('Authorization', '')[len('Bearer '):]
                    if token not in issued:
                        return self.reply(401, {'resourceType': 'OperationOutcome', 'issue': [{'severity': 'error', 'code': 'login', 'diagnostics': 'no valid token'}]})
                    return self.reply(200, {'resourceType': 'Patient', 'id': 'p1'})
                def do_POST(self):
                    base = 'http://127.0.0.1:%d' % self.server.server_address[1]
                    body = self.rfile.read(int(self.headers.get('Content-Length', 0))).decode()
                    if self.path == '/revoke':
                        issued.clear()
                        return self.reply(200, {})
                    form = dict(urllib.parse.parse_qsl(body))
                    try:
                        assert form.get('grant_type') == 'client_credentials'
                        assert form.get('client_assertion_type') == 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'
                        claims = jwt.decode(form['client_assertion'], public_key, algorithms=['ES384', 'RS384'], audience=base + '/token', issuer='caregate-test')
                        assert claims['sub'] == 'caregate-test' and claims.get('jti')
                    except Exception as error:
                        return self.reply(401, {'error': 'invalid_client', 'error_description': 'assertion refused: %s' % error})
                    token = 'tok-%d' % (len(issued) + 1)
                    issued.append(token)
                    return self.reply(200, {'access_token': token, 'token_type': 'bearer', 'expires_in': 300})
                def log_message(self, *args): pass
            server = http.server.HTTPServer(('127.0.0.1', 0), Handler)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            """
        let (process, port) = try ScriptRunner.startListening(python, ["-c", code, keyFile.path])
        return (try XCTUnwrap(URL(string: "http://127.0.0.1:\(port)/fhir")), process)
    }

    private func issued(_ base: URL) throws -> Int {
        let data = try Data(contentsOf: base.deletingLastPathComponent().appendingPathComponent("issued"))
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["issued"] as? Int ?? -1
    }

    func testES384AssertionGetsATokenThatIsReusedAndRenewedAfterA401() throws {
        let key = P384.Signing.PrivateKey()
        let (base, server) = try smartServer(trusting: key.publicKey.pemRepresentation)
        defer { server.terminate() }
        let auth = SMARTBackendServices(base: base, clientID: "caregate-test", key: try .pem(key.pemRepresentation, source: "test key"))
        let client = FHIRClient(base: base, retry: .none, authorization: auth)
        XCTAssertEqual(try client.read("Patient", "p1").childValue("id"), "p1")
        XCTAssertEqual(try client.read("Patient", "p1").childValue("id"), "p1")
        XCTAssertEqual(try issued(base), 1, "the token is kept until it expires")

        _ = try FHIRClient(base: base.deletingLastPathComponent()).send("POST", path: "revoke", body: Data())
        XCTAssertEqual(try client.read("Patient", "p1").childValue("id"), "p1", "a 401 gets a new token, once")
        XCTAssertEqual(try issued(base), 1, "revoked, then one new")
    }

    func testRS384AssertionIsAccepted() throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let (base, server) = try smartServer(trusting: key.publicKey.pemRepresentation)
        defer { server.terminate() }
        let auth = SMARTBackendServices(base: base, clientID: "caregate-test", key: try .pem(key.pemRepresentation, source: "test key"))
        XCTAssertEqual(try FHIRClient(base: base, retry: .none, authorization: auth).read("Patient", "p1").childValue("id"), "p1")
    }

    func testAWrongKeyIsRefusedWithTheEndpointsReason() throws {
        let trusted = P384.Signing.PrivateKey()
        let (base, server) = try smartServer(trusting: trusted.publicKey.pemRepresentation)
        defer { server.terminate() }
        let other = P384.Signing.PrivateKey()
        let auth = SMARTBackendServices(base: base, clientID: "caregate-test", key: try .pem(other.pemRepresentation, source: "test key"))
        XCTAssertThrowsError(try FHIRClient(base: base, retry: .none, authorization: auth).read("Patient", "p1")) { error in
            guard case AuthorizationError.refused(_, let reason) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("assertion refused"), reason)
        }
        XCTAssertThrowsError(try SMARTBackendServices.Key.pem("not a key", source: "key.pem")) { error in
            XCTAssertEqual(error as? AuthorizationError, .unreadable(source: "key.pem", reason: "not a PEM P-384 (ES384) or RSA (RS384) private key"))
        }
    }

    func testBearerTokensComeFromTheEnvironmentOrAFile() throws {
        XCTAssertEqual(try BearerToken.environment("CAREGATE_TOKEN", ["CAREGATE_TOKEN": " abc \n"]).authorization(), "Bearer abc")
        XCTAssertThrowsError(try BearerToken.environment("CAREGATE_TOKEN", [:])) { error in
            XCTAssertTrue("\(error)".contains("environment variable CAREGATE_TOKEN"), "\(error)")
        }
        let file = try makeScratchFolder("bearer").appendingPathComponent("token")
        try Data("s3cret\nignored\n".utf8).write(to: file)
        XCTAssertEqual(try BearerToken.file(file.path).authorization(), "Bearer s3cret")
        XCTAssertThrowsError(try BearerToken.file(file.path + ".missing"))
    }
}
