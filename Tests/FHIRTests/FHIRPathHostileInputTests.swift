import XCTest
@testable import FHIR

/// Malformed and hostile expressions give a clear, typed error with a column; never a crash or a hang.
final class FHIRPathHostileInputTests: XCTestCase {
    private func assertFails(_ expression: String, kind: FHIRPathError.Kind, column: Int? = nil, containing text: String,
                             file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try FHIRPathExpression(expression)
            XCTFail("expected a \(kind) error", file: file, line: line)
        } catch {
            XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: line)
            if let column { XCTAssertEqual(error.column, column, "\(error)", file: file, line: line) }
            XCTAssertTrue(error.message.contains(text), "\(error)", file: file, line: line)
        }
    }

    func testUnbalancedParentheses() {
        assertFails("(1 + 2", kind: .syntax, column: 7, containing: "missing ')' to close '(' at column 1")
        assertFails("1 + 2)", kind: .syntax, column: 6, containing: "unexpected ')'")
        assertFails("name.where(given = 'x'", kind: .syntax, containing: "missing ')'")
        assertFails("name[0", kind: .syntax, containing: "missing ']'")
        assertFails("((((", kind: .syntax, containing: "unexpected end")
    }

    func testTenThousandNestedParenthesesAreRefusedNotRecursedInto() {
        let deep = String(repeating: "(", count: 10_000) + "1" + String(repeating: ")", count: 10_000)
        assertFails(deep, kind: .syntax, containing: "nested too deeply")
        let unclosed = String(repeating: "(", count: 10_000)
        assertFails(unclosed, kind: .syntax, containing: "nested too deeply")
        let unary = String(repeating: "-", count: 10_000) + "1"
        assertFails(unary, kind: .syntax, containing: "nested too deeply")
        let calls = String(repeating: "iif(true, ", count: 5_000) + "1" + String(repeating: ")", count: 5_000)
        assertFails(calls, kind: .syntax, containing: "nested too deeply")
    }

    func testLongOperatorChainsAreBoundedToo() {
        // Left-associative chains build deep trees without any parenthesis.
        let chain = Array(repeating: "1", count: 10_000).joined(separator: " + ")
        assertFails(chain, kind: .syntax, containing: "nested too deeply")
        // A long path is a loop, not a recursion, and is fine.
        let path = "Patient" + String(repeating: ".name", count: 300)
        XCTAssertNoThrow(try FHIRPathExpression(path))
        // A moderately long chain evaluates.
        let sum = try? FHIRPathExpression(Array(repeating: "1", count: 300).joined(separator: "+"))
            .evaluate(context: [], resource: nil, rootResource: nil)
        XCTAssertEqual(sum?.first?.description, "300")
    }

    func testUnterminatedStringsCommentsAndIdentifiers() {
        assertFails("name.given = 'Peter", kind: .syntax, column: 14, containing: "unterminated string")
        assertFails("name.`given", kind: .syntax, column: 6, containing: "unterminated quoted identifier")
        assertFails("1 /* never closed", kind: .syntax, column: 3, containing: "unterminated comment")
        assertFails("'bad \\q escape'", kind: .syntax, containing: "invalid escape")
    }

    func testUnknownFunctionIsASemanticErrorNamingIt() {
        assertFails("name.fooBar()", kind: .semantic, column: 6, containing: "unknown function 'fooBar'")
        assertFails("fooBar(1, 2)", kind: .semantic, column: 1, containing: "unknown function 'fooBar'")
    }

    func testOtherGarbage() {
        assertFails("", kind: .syntax, containing: "unexpected end")
        assertFails("   ", kind: .syntax, containing: "unexpected end")
        assertFails("name.", kind: .syntax, containing: "expected a name")
        assertFails("1 +", kind: .syntax, containing: "expected an expression after '+'")
        assertFails("name # given", kind: .syntax, column: 6, containing: "unexpected character '#'")
        assertFails("@2015-13-01", kind: .syntax, containing: "invalid date/time literal")
        assertFails("$self", kind: .syntax, containing: "unknown special variable")
        assertFails("name.is()", kind: .semantic, containing: "argument")
        assertFails("\u{0}", kind: .syntax, containing: "unexpected character")
    }

    func testErrorsOnMultiLineExpressionsGiveTheLine() {
        do {
            _ = try FHIRPathExpression("name\n  .where(given = 'x')\n  .nope()")
            XCTFail("expected an error")
        } catch {
            XCTAssertEqual(error.line, 3)
            XCTAssertEqual(error.column, 4)
        }
    }

    func testExecutionErrorsNameTheSubexpression() throws {
        let patient = Element.resource("Patient", children: [
            Element(name: "name", children: [Element(name: "family", value: "A")]),
            Element(name: "name", children: [Element(name: "family", value: "B")]),
        ])
        do {
            _ = try FHIRPathExpression("Patient.name.single().family").evaluate(on: patient)
            XCTFail("expected an execution error")
        } catch {
            XCTAssertEqual(error.kind, .execution)
            XCTAssertEqual(error.subexpression, "Patient.name.single()")
            XCTAssertTrue(error.message.contains("expected a single item, got 2"), "\(error)")
        }
        XCTAssertThrowsError(try FHIRPathExpression("Patient.name.family + 1").evaluate(on: patient))
        XCTAssertThrowsError(try FHIRPathExpression("'a' - 'b'").evaluate(on: patient))
    }
}
