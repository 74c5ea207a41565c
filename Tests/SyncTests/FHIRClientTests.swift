import FHIR
import Foundation
import Sync
import TestSupport
import XCTest

/// The FHIR REST client against a real server (sekmet-fhir, its own process on 127.0.0.1).
final class FHIRClientTests: XCTestCase {
    nonisolated(unsafe) private static var server: FHIRServerProcess?

    override class func tearDown() {
        server?.stop()
        server = nil
        super.tearDown()
    }

    /// One server for the whole class (it takes seconds to start); each test uses its own ids.
    private func client(_ format: FHIRClient.Format = .json) throws -> FHIRClient {
        if Self.server == nil { Self.server = try FHIRServerProcess.start() }
        return FHIRClient(base: try XCTUnwrap(Self.server?.base), format: format, timeout: 30)
    }

    private func patient(_ id: String, family: String) -> Element {
        Element.resource("Patient", children: [
            Element(name: "id", value: id),
            Element(name: "name", children: [Element(name: "family", value: family)]),
        ])
    }

    private func observation(_ text: String, subject: String, identifier: String? = nil) -> Element {
        var children = [
            Element(name: "status", value: "final"),
            Element(name: "code", children: [Element(name: "text", value: text)]),
            Element(name: "subject", children: [Element(name: "reference", value: subject)]),
        ]
        if let identifier {
            children.insert(Element(name: "identifier", children: [
                Element(name: "system", value: "urn:caregate:test"), Element(name: "value", value: identifier),
            ]), at: 0)
        }
        return Element.resource("Observation", children: children)
    }

    func testCapabilityStatementInJSONAndXML() throws {
        let json = try client().capabilities()
        XCTAssertEqual(json.childValue("fhirVersion"), "4.0.1")
        let xml = try client(.xml).capabilities()
        XCTAssertEqual(xml.childValue("fhirVersion"), "4.0.1")
    }

    func testTransactionThenReadAndVread() throws {
        let client = try client()
        let bundle = Element.resource("Bundle", children: [
            Element(name: "type", value: "transaction"),
            Element(name: "entry", children: [
                Element(name: "fullUrl", value: "urn:uuid:7d3c1f0e-1111-4c2b-9a55-000000000001"),
                Element(name: "resource", resourceType: "Patient", children: patient("tx-pat", family: "Transact").children),
                Element(name: "request", children: [Element(name: "method", value: "PUT"), Element(name: "url", value: "Patient/tx-pat")]),
            ]),
        ])
        let response = try client.submit(bundle)
        XCTAssertEqual(response.childValue("type"), "transaction-response")
        XCTAssertTrue(response.children(named: "entry").first?.child(named: "response")?.childValue("status")?.hasPrefix("201") == true)
        let read = try client.read("Patient", "tx-pat")
        XCTAssertEqual(read.child(named: "name")?.childValue("family"), "Transact")

        var renamed = patient("tx-pat", family: "Renamed")
        renamed.children.append(Element(name: "active", value: "true", valueKind: .boolean))
        let updated = try client.update(renamed)
        XCTAssertEqual(updated.status, 200)
        XCTAssertEqual(try client.vread("Patient", "tx-pat", version: "1").child(named: "name")?.childValue("family"), "Transact")
        XCTAssertEqual(try client.vread("Patient", "tx-pat", version: "2").child(named: "name")?.childValue("family"), "Renamed")
        XCTAssertEqual(try self.client(.xml).read("Patient", "tx-pat").child(named: "name")?.childValue("family"), "Renamed", "the same resource read as XML")
    }

    func testConditionalCreateMakesOneResource() throws {
        let client = try client()
        let first = try client.create(observation("once", subject: "Patient/tx-pat", identifier: "cond-1"), ifNoneExist: "identifier=urn:caregate:test|cond-1")
        XCTAssertEqual(first.status, 201)
        let second = try client.create(observation("once", subject: "Patient/tx-pat", identifier: "cond-1"), ifNoneExist: "identifier=urn:caregate:test|cond-1")
        XCTAssertEqual(second.status, 200, "the second create finds the first")
        var found = 0
        try client.search("Observation", [("identifier", "urn:caregate:test|cond-1")]) { page in
            found += page.children(named: "entry").count
            return true
        }
        XCTAssertEqual(found, 1)
    }

    func testSearchFollowsNextLinksWithGETAndPOST() throws {
        let client = try client()
        for number in 0..<5 {
            _ = try client.create(observation("page \(number)", subject: "Patient/page-pat"))
        }
        for post in [false, true] {
            var pages = 0
            var ids: Set<String> = []
            try client.search("Observation", [("subject", "Patient/page-pat"), ("_count", "2")], post: post) { page in
                pages += 1
                for entry in page.children(named: "entry") { ids.insert(entry.child(named: "resource")?.childValue("id") ?? "") }
                return true
            }
            XCTAssertEqual(ids.count, 5, "every page followed (post: \(post))")
            XCTAssertEqual(pages, 3)
        }
    }

    func testErrorsAreTypedAndSayWhetherToRetry() throws {
        let client = try client()
        XCTAssertThrowsError(try client.read("Patient", "no-such-patient")) { error in
            guard case FHIRClientError.status(_, 404, _, let detail) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(detail?.contains("not found") == true, "the OperationOutcome's text: \(detail ?? "")")
            XCTAssertFalse((error as? FHIRClientError)?.isTransient ?? true)
        }
        // A port nobody listens on: no answer, worth retrying.
        let nowhere = FHIRClient(base: URL(string: "http://127.0.0.1:9/fhir")!, timeout: 5, retry: RetryPolicy(maxAttempts: 2, baseDelay: 0.01))
        XCTAssertThrowsError(try nowhere.capabilities()) { error in
            guard case FHIRClientError.transport = error else { return XCTFail("\(error)") }
            XCTAssertTrue((error as? FHIRClientError)?.isTransient ?? false)
        }
        // The server's web console is HTML, not FHIR.
        let console = FHIRClient(base: try XCTUnwrap(URL(string: "ui", relativeTo: try XCTUnwrap(Self.server?.base).deletingLastPathComponent())?.absoluteURL))
        XCTAssertThrowsError(try console.send("GET", path: "").resource()) { error in
            guard case FHIRClientError.notFHIR = error else { return XCTFail("\(error)") }
        }
    }

    /// A server that compresses: the client asks for gzip and reads the compressed answer.
    func testAGzippedAnswerIsRead() throws {
        let (process, port) = try ScriptRunner.startHTTPServerPython(prelude: "import gzip", answer: """
            headers = {'Content-Type': 'application/fhir+json'}
            body = json.dumps({'resourceType': 'Patient', 'id': 'zipped', 'name': [{'family': 'Gzip' * 200}]}).encode()
            if 'gzip' in (self.headers.get('Accept-Encoding') or ''):
                body = gzip.compress(body)
                headers['Content-Encoding'] = 'gzip'
            else:
                status, body = 406, b'{"resourceType":"OperationOutcome"}'
            """)
        defer { process.terminate() }
        let client = FHIRClient(base: try XCTUnwrap(URL(string: "http://127.0.0.1:\(port)/fhir")), timeout: 10)
        let patient = try client.read("Patient", "zipped")
        XCTAssertEqual(patient.childValue("id"), "zipped")
        XCTAssertEqual(patient.child(named: "name")?.childValue("family")?.count, 800)
    }
}
