import XCTest
@testable import CareModel

final class CareModelSmokeTests: XCTestCase {
    func testModuleLoads() {}
}
