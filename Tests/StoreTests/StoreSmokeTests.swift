import XCTest
@testable import Store

final class StoreSmokeTests: XCTestCase {
    func testModuleLoads() {}
}
