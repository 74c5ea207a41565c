import XCTest
@testable import FHIR

final class FHIRSmokeTests: XCTestCase {
    func testModuleLoads() {}
}
