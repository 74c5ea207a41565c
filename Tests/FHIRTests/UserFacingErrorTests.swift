import Diagnostics
import FHIRCore
import FHIRPath
import XCTest

/// Library errors share one shape: a message, a location apart from it, an exit status; `description`
/// is `location: message`, as the command line prints it.
final class UserFacingErrorTests: XCTestCase {
    func testASyntaxErrorKeepsItsLineAndColumnApartFromItsMessage() {
        let error: any UserFacingError = FHIRSyntaxError(format: .json, line: 3, column: 14, message: "expected ':'")
        XCTAssertEqual(error.errorLocation, "3:14")
        XCTAssertEqual(error.errorMessage, "JSON syntax error: expected ':'")
        XCTAssertEqual(error.description, "3:14: JSON syntax error: expected ':'")
        XCTAssertEqual(error.exitStatus, 1)
    }

    func testAFHIRPathErrorNamesItsSubexpression() {
        let error = FHIRPathError(kind: .semantic, message: "unknown function 'foo'", line: 1, column: 6, subexpression: "name.foo()")
        XCTAssertEqual(error.description, "1:6: semantic error: unknown function 'foo' (in `name.foo()`)")
        XCTAssertEqual(FHIRPathError(kind: .syntax, message: "unexpected ')'", column: 2).description, "1:2: syntax error: unexpected ')'")
    }

    func testAnErrorWithoutALocationIsItsMessage() {
        let error: any UserFacingError = FHIRInputError("cannot read in.json: permission denied")
        XCTAssertNil(error.errorLocation)
        XCTAssertEqual(error.description, "cannot read in.json: permission denied")
    }
}
