import AsyncHTTPClient
import Foundation
@testable import Sync
import XCTest

/// The proxy a FHIR request goes through, read from the environment as libcurl read it (the transport
/// before AsyncHTTPClient), so that a sync job behind a hospital's proxy keeps working.
final class EnvironmentProxyTests: XCTestCase {
    private let fhir = URL(string: "https://ehr.hospital.test/fhir")!
    private let plain = URL(string: "http://ehr.hospital.test/fhir")!

    func testTheSchemesProxyIsUsed() {
        let environment = ["https_proxy": "http://proxy.test:3128", "http_proxy": "proxy.test:8080"]
        XCTAssertEqual(EnvironmentProxy.proxy(for: fhir, environment: environment), .server(host: "proxy.test", port: 3128))
        XCTAssertEqual(EnvironmentProxy.proxy(for: plain, environment: environment), .server(host: "proxy.test", port: 8080))
        XCTAssertEqual(EnvironmentProxy.proxy(for: fhir, environment: ["HTTPS_PROXY": "http://proxy.test"]), .server(host: "proxy.test", port: 1080))
        XCTAssertEqual(EnvironmentProxy.proxy(for: fhir, environment: ["all_proxy": "socks5h://socks.test"]), .socksServer(host: "socks.test", port: 1080))
        XCTAssertNil(EnvironmentProxy.proxy(for: fhir, environment: [:]))
        // HTTP_PROXY in capitals is what a CGI request's Proxy header sets: curl ignores it, and so does this.
        XCTAssertNil(EnvironmentProxy.proxy(for: plain, environment: ["HTTP_PROXY": "http://evil.test:80"]))
    }

    func testCredentialsInTheProxysURLGoToTheProxy() {
        let proxy = EnvironmentProxy.proxy(for: fhir, environment: ["https_proxy": "http://user:pw@proxy.test:3128"])
        XCTAssertEqual(proxy, .server(host: "proxy.test", port: 3128, authorization: .basic(username: "user", password: "pw")))
    }

    func testNoProxyExemptsHostsAndDomains() {
        for list in ["*", "ehr.hospital.test", "hospital.test", ".hospital.test", "other.test, hospital.test:443"] {
            XCTAssertNil(EnvironmentProxy.proxy(for: fhir, environment: ["https_proxy": "proxy.test:3128", "no_proxy": list]), list)
        }
        for list in ["other.test", "pital.test", "ehr.hospital.test.other"] {
            XCTAssertNotNil(EnvironmentProxy.proxy(for: fhir, environment: ["https_proxy": "proxy.test:3128", "NO_PROXY": list]), list)
        }
    }
}
