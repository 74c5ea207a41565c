import Foundation
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

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
        // A long path parses (in a loop, not a recursion).
        let path = "Patient" + String(repeating: ".name", count: 150)
        XCTAssertNoThrow(try FHIRPathExpression(path))
        // A moderately long chain evaluates.
        let sum = try? FHIRPathExpression(Array(repeating: "1", count: 150).joined(separator: "+"))
            .evaluate(context: [], resource: nil, rootResource: nil)
        XCTAssertEqual(sum?.first?.description, "150")
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

    func testEmptyTruncatedAndMalformedExpressionsFailWithTheirKind() {
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

extension FHIRPathHostileInputTests {
    /// The deepest expressions the parser accepts evaluate and type-check on the main thread; on a
    /// secondary thread with a small stack they either evaluate or stop with a clear error (debug
    /// frames are large), and never overflow the stack.
    func testDeepestAcceptedExpressionsNeverOverflowTheStack() throws {
        let nestedCalls = String(repeating: "iif(true, ", count: 60) + "1" + String(repeating: ")", count: 60)
        let nestedWhere = "Patient" + String(repeating: ".where(true", count: 45) + String(repeating: ")", count: 45) + ".name.given"
        let chain = Array(repeating: "1", count: 180).joined(separator: " + ")
        let union = Array(repeating: "name.given", count: 150).joined(separator: " | ")
        let patient = Element.resource("Patient", children: [Element(name: "name", children: [Element(name: "given", value: "Ann")])])
        let expressions = try [nestedCalls, nestedWhere, chain, union].map { try FHIRPathExpression($0) }
        let expected = ["1", "Ann", "180", "Ann"]
        XCTAssertEqual(try expressions.map { try $0.evaluate(on: patient).map(\.description).joined() }, expected)
        for expression in expressions { XCTAssertEqual(expression.check(startingType: "Patient").errors, []) }

        let done = expectation(description: "evaluated")
        let results = ResultBox()
        let thread = Thread {
            for expression in expressions {
                do {
                    results.append(try expression.evaluate(on: patient).map(\.description).joined())
                } catch {
                    results.append("\(error)")
                }
                _ = expression.check(startingType: "Patient")
                _ = try? FHIRPathExpression(expression.text)
            }
            done.fulfill()
        }
        thread.stackSize = 512 * 1024
        thread.start()
        wait(for: [done], timeout: 60)
        XCTAssertEqual(results.values.count, 4)
        for (value, wanted) in zip(results.values, expected) {
            XCTAssertTrue(value == wanted || value.contains("nested too deeply"), value)
        }
    }
}

private final class ResultBox: @unchecked Sendable {
    private var storage: [String] = []
    private let lock = NSLock()
    func append(_ value: String) { lock.lock(); storage.append(value); lock.unlock() }
    var values: [String] { lock.lock(); defer { lock.unlock() }; return storage }
}
