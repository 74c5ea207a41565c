import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation

/// ``InvariantShortcut`` answers per-1, obs-6, obs-7 and qty-3 from an element's children: wherever it
/// answers, the answer must be the one validation gave before it (the quick reading, else the
/// evaluator), so that reports stay identical; where the data does not decide, it must decline.
final class InvariantShortcutTests: XCTestCase {
    private let metadata = FHIRMetadata.r4
    private let environment = FHIRPathEnvironment(metadata: .r4, trustsSingleCardinality: true)

    /// The compiled invariant `key` of the R4 catalog, which must have a shortcut.
    private func compiled(_ key: String) throws -> InvariantCatalog.Compiled {
        let found = InvariantCatalog.r4.invariants(forType: key == "per-1" ? "Period" : key == "qty-3" ? "Quantity" : "Observation")
            .first { $0.invariant.key == key }
        let compiled = try XCTUnwrap(found, "\(key) is not in the catalog")
        XCTAssertNotNil(compiled.shortcut, "\(key) has no shortcut")
        return compiled
    }

    /// Checks the shortcut against what validation evaluated before it, on `element` in `context`;
    /// returns the shortcut's answer.
    @discardableResult
    private func check(_ compiled: InvariantCatalog.Compiled, on element: Element, context: String,
                       file: StaticString = #filePath, line: UInt = #line) throws -> Bool? {
        guard let answer = compiled.shortcut?.truth(on: element) else { return nil }
        let expected: Bool
        if let quick = compiled.expression.quickTruth(on: element, context: context, metadata: metadata, trustsSingleCardinality: true) {
            expected = quick
        } else {
            let node = FHIRPathElementNode(element: element, typeName: context, context: context)
            let result = try compiled.expression.evaluate(
                context: [.element(node)], resource: element, rootResource: element, environment: environment)
            if result.count == 1, case .boolean(true) = result[0] { expected = true } else { expected = false }
        }
        XCTAssertEqual(answer, expected, "\(compiled.invariant.key) on \(element)", file: file, line: line)
        return answer
    }

    func testPeriodOrderAgreesWithTheEvaluator() throws {
        let per1 = try compiled("per-1")
        let values = [
            "2023", "2024", "2023-06", "2023-07", "2023-06-21", "2023-06-22", "2023-06-21T06:20:00Z", "2023-06-21T07:20:00Z",
            "2023-06-21T06:20:00+01:00", "2023-06-21T06:20:00-05:00", "2023-06-21T05:20:00-05:00", "2023-06-21T07:20:00+01:00",
            "2023-06-21T06:20:00.5Z", "2023-06-21T06:20:00.4Z", "2023-06-21T06:20:00.50Z", "2023-06-21T23:59:60Z",
            "2023-13-21", "2023-02-30", "2024-02-29", "2023-06-21T06:20:00", "2023-06-21T25:20:00Z", "abcd-ef-gh", "",
            "2023-06-21T06:20:00+14:00", "2023-06-21T06:20:00-00:00", "2023-06-21T06:20:00+00:00",
        ]
        var answered = 0
        for start in values {
            for end in values {
                let period = Element(name: "period", children: [Element(name: "start", value: start), Element(name: "end", value: end)])
                if try check(per1, on: period, context: "Period") != nil { answered += 1 }
            }
        }
        XCTAssertGreaterThan(answered, 30)  // the pairs written alike
        // Written alike: the order of their text, which is the order of the instants.
        let alike = Element(name: "period", children: [Element(name: "start", value: "2023-06-21T07:20:00-05:00"),
                                                       Element(name: "end", value: "2023-06-21T06:20:00-05:00")])
        XCTAssertEqual(try check(per1, on: alike, context: "Period"), false)
        // A missing or repeated bound, or one with only an extension.
        let extensionOnly = Element(name: "end", children: [Element(name: "extension", children: [Element(name: "url", value: "http://example.org")])])
        for children in [
            [Element(name: "start", value: "2023")], [Element(name: "end", value: "2023")], [],
            [Element(name: "start", value: "2023"), Element(name: "start", value: "2022"), Element(name: "end", value: "2022")],
            [Element(name: "start", value: "2023"), extensionOnly],
        ] {
            try check(per1, on: Element(name: "period", children: children), context: "Period")
        }
        XCTAssertNil(per1.shortcut?.truth(on: Element(name: "period", children: [Element(name: "start", value: "2023"), extensionOnly])))
    }

    func testObservationAndQuantityShortcutsAgreeWithTheEvaluator() throws {
        let obs6 = try compiled("obs-6"), obs7 = try compiled("obs-7"), qty3 = try compiled("qty-3")
        let code = Element(name: "code", children: [Element(name: "coding", children: [
            Element(name: "system", value: "http://loinc.org"), Element(name: "code", value: "8867-4")])])
        let value = Element(name: "valueQuantity", children: [Element(name: "value", value: "60", valueKind: .number)])
        let absent = Element(name: "dataAbsentReason", children: [Element(name: "text", value: "asked")])
        let component = Element(name: "component", children: [code, Element(name: "valueString", value: "x")])
        let parts: [[Element]] = [[], [value], [absent], [component], [value, absent], [value, component], [absent, component],
                                  [value, absent, component]]
        for extra in parts {
            let observation = Element(name: "Observation", resourceType: "Observation",
                                      children: [Element(name: "status", value: "final"), code] + extra)
            try check(obs6, on: observation, context: "Observation")
            try check(obs7, on: observation, context: "Observation")
        }
        for fields in [["value": "1"], ["code": "mg"], ["code": "mg", "system": "http://unitsofmeasure.org"], ["system": "http://unitsofmeasure.org"]] {
            let quantity = Element(name: "valueQuantity", children: fields.sorted { $0.key < $1.key }.map { Element(name: $0.key, value: $0.value) })
            try check(qty3, on: quantity, context: "Quantity")
        }
    }
}
