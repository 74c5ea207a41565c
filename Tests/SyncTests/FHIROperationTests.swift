import Foundation
import Sync
import XCTest

/// The operation label of the FHIR server's request metrics, from the REST API's interactions.
final class FHIROperationTests: XCTestCase {
    private let base = URL(string: "https://ehr.example/fhir/R4")!

    private func operation(_ method: String, _ url: String) -> FHIROperation {
        FHIROperation(method: method, url: URL(string: url)!, base: base)
    }

    func testEachInteractionHasItsLabel() {
        XCTAssertEqual(operation("GET", "https://ehr.example/fhir/R4/metadata"), .capabilities)
        XCTAssertEqual(operation("GET", "https://ehr.example/fhir/R4/Observation?patient=1&_count=100"), .search)
        XCTAssertEqual(operation("POST", "https://ehr.example/fhir/R4/Observation/_search"), .search)
        XCTAssertEqual(operation("GET", "https://ehr.example/fhir/R4?_getpages=abc&_offset=100"), .page)
        XCTAssertEqual(operation("GET", "https://ehr.example/fhir/R4/Patient/123"), .read)
        XCTAssertEqual(operation("GET", "https://ehr.example/fhir/R4/Patient/123/_history/2"), .vread)
        XCTAssertEqual(operation("POST", "https://ehr.example/fhir/R4"), .transaction)
        XCTAssertEqual(operation("POST", "https://ehr.example/fhir/R4/"), .transaction)
        XCTAssertEqual(operation("POST", "https://ehr.example/fhir/R4/Observation"), .create)
        XCTAssertEqual(operation("PUT", "https://ehr.example/fhir/R4/Consent/abc"), .update)
        XCTAssertEqual(operation("DELETE", "https://ehr.example/fhir/R4/Consent/abc"), .delete)
        XCTAssertEqual(operation("GET", "https://ehr.example/fhir/R4/$export?_type=Patient"), .bulk)
        XCTAssertEqual(operation("GET", "https://ehr.example/fhir/R4/Group/g/$export"), .bulk)
    }

    func testRequestsOutsideTheBaseAreOther() {
        XCTAssertEqual(operation("POST", "https://login.example/token"), .other)
        XCTAssertEqual(operation("GET", "https://ehr.example:8443/fhir/R4/metadata"), .other)
        XCTAssertEqual(operation("GET", "https://ehr.example/other/metadata"), .other)
    }
}
