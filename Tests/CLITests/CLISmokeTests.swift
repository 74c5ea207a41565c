import TestSupport
import XCTest

final class CLISmokeTests: XCTestCase {
    func testHelpListsSubcommands() throws {
        let result = try CLIRunner.run(["--help"])
        XCTAssertEqual(result.status, 0)
        for command in ["convert", "validate", "fhirpath", "store", "bench"] {
            XCTAssertTrue(result.stdout.contains(command), "help should mention \(command)")
        }
    }
}
