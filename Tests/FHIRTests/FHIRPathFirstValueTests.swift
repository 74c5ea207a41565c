import Foundation
import TestSupport
import XCTest
import FHIR
@testable import FHIRPath
@testable import FHIRPathConformance

/// `FHIRPathExpression.evaluateLeadingOperand` gives the values of a union's first operand that has any,
/// so its first is the first a full evaluation gives; a union's right operand is evaluated only when its
/// left one is empty.
final class FHIRPathFirstValueTests: XCTestCase {
    private func observation(_ children: [Element]) -> Element {
        Element.resource("Observation", children: [Element(name: "status", value: "final")] + children)
    }

    private func first(_ text: String, on resource: Element, environment: FHIRPathEnvironment = FHIRPathEnvironment()) throws -> String? {
        let expression = try FHIRPathExpression(text)
        let root = FHIRPathElementNode(resource: resource, path: nil)
        switch try expression.evaluateLeadingOperand(context: [.element(root)], resource: resource, rootResource: resource, environment: environment).first {
        case .element(let node)?: return node.element.value
        case let value?: return value.description
        case nil: return nil
        }
    }

    func testAUnionGivesItsFirstNonEmptyOperandsFirstValue() throws {
        let time = "effective.ofType(dateTime) | effective.ofType(Period).start | issued"
        let withDateTime = observation([
            Element(name: "effectiveDateTime", value: "2024-03-01T10:00:00Z"), Element(name: "issued", value: "2024-03-02T10:00:00Z"),
        ])
        XCTAssertEqual(try first(time, on: withDateTime), "2024-03-01T10:00:00Z")
        let withPeriod = observation([
            Element(name: "effectivePeriod", children: [Element(name: "start", value: "2024-02-01")]),
            Element(name: "issued", value: "2024-03-02T10:00:00Z"),
        ])
        XCTAssertEqual(try first(time, on: withPeriod), "2024-02-01")
        XCTAssertEqual(try first(time, on: observation([Element(name: "issued", value: "2024-03-02T10:00:00Z")])), "2024-03-02T10:00:00Z")
        XCTAssertNil(try first(time, on: observation([])))
        // Not a union at the top: the first of the whole evaluation.
        XCTAssertEqual(try first("(effective.ofType(dateTime) | issued).last()", on: withDateTime), "2024-03-02T10:00:00Z")
    }

    /// The right operand is not evaluated once the left has a value: what it would raise is not raised.
    /// With a trace or an observer of selections, every operand is evaluated, as `evaluate` does.
    func testTheRightOperandIsEvaluatedOnlyWhenNeeded() throws {
        let resource = observation([Element(name: "issued", value: "2024-03-02T10:00:00Z")])
        let text = "issued | (1 | 2).single()"
        XCTAssertThrowsError(try FHIRPathExpression(text).evaluate(on: resource))
        XCTAssertEqual(try first(text, on: resource), "2024-03-02T10:00:00Z")
        var traced = FHIRPathEnvironment()
        traced.trace = { _, _ in }
        XCTAssertThrowsError(try first(text, on: resource, environment: traced))
        XCTAssertThrowsError(try first("status.where(false) | (1 | 2).single()", on: resource))
    }

    /// Over the official FHIRPath suite's expressions and inputs, and unions of pairs of them: wherever a
    /// full evaluation succeeds, the leading operand's first value is its first, and every value it
    /// gives is one of its values.
    func testFirstValueMatchesTheFullEvaluationOverTheSuite() throws {
        let folder = try Corpus.folder("fhirpath")
        let suite = try FHIRPathConformanceSuite(contentsOf: folder.appendingPathComponent("tests-fhir-r4.xml"))
        var inputs: [String: Element] = [:]
        var byInput: [String: [String]] = [:]
        for test in suite.tests where test.invalid == nil {
            guard let file = test.inputFile else { continue }
            if inputs[file] == nil { inputs[file] = try? FHIRPathConformanceSuite.readInput(folder.appendingPathComponent(file)) }
            byInput[file, default: []].append(test.expression)
        }
        var compared = 0
        for (file, expressions) in byInput.sorted(by: { $0.key < $1.key }) {
            guard let input = inputs[file] else { continue }
            // Each expression, and each with the next two as union operands on either side.
            var texts = expressions
            for (position, text) in expressions.enumerated() {
                for other in expressions.dropFirst(position + 1).prefix(2) {
                    texts += ["(\(text)) | (\(other))", "(\(other)) | (\(text))"]
                }
            }
            for text in texts {
                guard let expression = try? FHIRPathExpression(text),
                      let all = try? expression.evaluate(on: input) else { continue }
                let root = FHIRPathElementNode(resource: input, path: nil)
                let leading = try expression.evaluateLeadingOperand(context: [.element(root)], resource: input, rootResource: input)
                XCTAssertTrue(leading.allSatisfy { value in all.contains { $0.description == value.description } }, "\(file): \(text)")
                let one = leading.first
                XCTAssertEqual(one?.description, all.first?.description, "\(file): \(text)")
                XCTAssertEqual(one?.typeName, all.first?.typeName, "\(file): \(text)")
                compared += 1
            }
        }
        XCTAssertGreaterThan(compared, 1_000)
    }
}
