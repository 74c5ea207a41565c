import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation

/// `FHIRPathExpression.quickTruth` answers existence tests without the evaluator: wherever it answers,
/// the answer must be the single boolean a full evaluation gives; where the data does not decide, it
/// must decline (nil) so that the evaluator runs.
final class FHIRPathQuickTruthTests: XCTestCase {
    private let metadata = FHIRMetadata.r4
    private let environment = FHIRPathEnvironment(metadata: .r4, trustsSingleCardinality: true)

    private func quantity(_ fields: [String: String]) -> Element {
        Element(name: "valueQuantity", children: fields.sorted { $0.key < $1.key }.map { Element(name: $0.key, value: $0.value) })
    }

    private func period(start: String?, end: String?) -> Element {
        Element(name: "period", children: [start.map { Element(name: "start", value: $0) }, end.map { Element(name: "end", value: $0) }].compactMap { $0 })
    }

    /// The quick answer, after checking it against the evaluator's.
    private func quick(_ text: String, on element: Element, context: String, file: StaticString = #filePath, line: UInt = #line) throws -> Bool? {
        let expression = try FHIRPathExpression(text)
        let answer = expression.quickTruth(on: element, context: context, metadata: metadata, trustsSingleCardinality: true)
        if let answer {
            let node = FHIRPathElementNode(element: element, typeName: context, context: context)
            let full = try expression.evaluate(context: [.element(node)], resource: nil, rootResource: nil, environment: environment)
            XCTAssertEqual(full.count, 1, "\(text): the evaluator gives \(full)", file: file, line: line)
            if case .boolean(let value)? = full.first { XCTAssertEqual(value, answer, text, file: file, line: line) }
        }
        return answer
    }

    func testExistenceTestsAreDecidedFromTheTree() throws {
        // qty-3: "If a code for the unit is present, the system SHALL also be present".
        let qty3 = "code.empty() or system.exists()"
        XCTAssertEqual(try quick(qty3, on: quantity(["value": "1", "code": "mg", "system": "http://unitsofmeasure.org"]), context: "Quantity"), true)
        XCTAssertEqual(try quick(qty3, on: quantity(["value": "1", "code": "mg"]), context: "Quantity"), false)
        XCTAssertEqual(try quick(qty3, on: quantity(["value": "1"]), context: "Quantity"), true)
        XCTAssertEqual(try quick("value.exists() and unit.exists()", on: quantity(["value": "1"]), context: "Quantity"), false)
        XCTAssertEqual(try quick("value.exists() implies code.exists()", on: quantity(["unit": "mg"]), context: "Quantity"), true)
        XCTAssertEqual(try quick("value.exists() implies code.exists()", on: quantity(["value": "2"]), context: "Quantity"), false)
        XCTAssertEqual(try quick("code.exists().not()", on: quantity(["value": "2"]), context: "Quantity"), true)
    }

    func testChoiceElementsAreFoundByTheirTypedNames() throws {
        // obs-6: "dataAbsentReason SHALL only be present if Observation.value[x] is not present".
        let obs6 = "dataAbsentReason.empty() or value.empty()"
        let observation = Element.resource("Observation", children: [
            Element(name: "status", value: "final"), quantity(["value": "5"]),
            Element(name: "dataAbsentReason", children: [Element(name: "text", value: "unknown")]),
        ])
        XCTAssertEqual(try quick(obs6, on: observation, context: "Observation"), false)
        let withoutReason = Element.resource("Observation", children: [Element(name: "status", value: "final"), quantity(["value": "5"])])
        XCTAssertEqual(try quick(obs6, on: withoutReason, context: "Observation"), true)
        // A name that only starts like the choice (`valueSomething` of no allowed type) is not a value.
        XCTAssertEqual(try quick("value.exists()", on: Element.resource("Observation", children: [Element(name: "valueMoney", children: [])]),
                                 context: "Observation"), false)
    }

    func testFunctionsOnNothingSelectNothing() throws {
        // obs-7: a where() over components is decided when there are none, whatever its criteria.
        let obs7 = "value.empty() or component.code.where(coding.intersect(%resource.code.coding).exists()).empty()"
        let observation = Element.resource("Observation", children: [Element(name: "status", value: "final"), quantity(["value": "5"])])
        XCTAssertEqual(try quick(obs7, on: observation, context: "Observation"), true)
        let withComponent = Element.resource("Observation", children: [
            Element(name: "status", value: "final"), quantity(["value": "5"]),
            Element(name: "component", children: [Element(name: "code", children: [Element(name: "text", value: "x")])]),
        ])
        XCTAssertNil(try quick(obs7, on: withComponent, context: "Observation"), "a where() over something is the evaluator's")
    }

    func testComparisonsOfSingleValues() throws {
        // per-1: "If present, start SHALL have a lower value than end".
        let per1 = "start.hasValue().not() or end.hasValue().not() or (start <= end)"
        XCTAssertEqual(try quick(per1, on: period(start: "2020-01-01", end: "2020-02-01"), context: "Period"), true)
        XCTAssertEqual(try quick(per1, on: period(start: "2020-03-01", end: "2020-02-01"), context: "Period"), false)
        XCTAssertEqual(try quick(per1, on: period(start: "2020-03-01", end: nil), context: "Period"), true)
        // Dates of different precision cannot be ordered here: FHIRPath's comparison is empty, which the
        // evaluator must give (and which fails the invariant).
        XCTAssertNil(try quick(per1, on: period(start: "2023-06-21", end: "2023-06-21T06:20:00Z"), context: "Period"))
    }

    func testWhatIsNotCoveredIsLeftToTheEvaluator() throws {
        let element = quantity(["value": "1", "code": "mg"])
        XCTAssertNil(try quick("code = 'mg'", on: element, context: "Quantity"))
        XCTAssertNil(try quick("%resource.exists()", on: element, context: "Quantity"))
        XCTAssertNil(try quick("code.exists() and code.startsWith('m')", on: element, context: "Quantity"))
        // The left side decides before the right side is read, as the evaluator short-circuits.
        XCTAssertEqual(try quick("code.exists() or code.startsWith('m')", on: element, context: "Quantity"), true)
        XCTAssertNil(try quick("code.startsWith('m') or code.exists()", on: element, context: "Quantity"))
    }

    private static func isSingle(_ answer: Bool, _ values: [FHIRPathValue]?) -> Bool {
        guard let values, values.count == 1, case .boolean(let value) = values[0] else { return false }
        return value == answer
    }

    /// Every R4 invariant validation evaluates, on every element of the official examples it applies to:
    /// wherever the quick reading answers, the evaluator gives the same single boolean.
    func testAgreesWithTheEvaluatorOnTheOfficialExamples() throws {
        let catalog = InvariantCatalog.r4
        var decided = 0, compared = 0
        for file in try Corpus.files(in: "fhir-r4-examples", suffix: ".json") {
            let resource = try FHIRJSON.read(Data(contentsOf: file))
            guard let type = resource.resourceType else { continue }
            func check(_ list: [InvariantCatalog.Compiled], _ element: Element, _ node: FHIRPathElementNode, _ context: String) throws {
                for compiled in list where !compiled.needsResource {
                    compared += 1
                    guard let answer = compiled.expression.quickTruth(on: element, context: context, metadata: metadata, trustsSingleCardinality: true)
                    else { continue }
                    decided += 1
                    let full = try? compiled.expression.evaluate(context: [.element(node)], resource: resource, rootResource: resource, environment: environment)
                    XCTAssertTrue(Self.isSingle(answer, full),
                                   "\(file.lastPathComponent) \(compiled.invariant.key): quick \(answer), evaluator \(String(describing: full))")
                }
            }
            func walk(_ element: Element, context: String) throws {
                for child in element.children {
                    guard let resolved = metadata.child(child.name, of: context) else { continue }
                    if let childType = child.resourceType {
                        try check(catalog.invariants(forType: childType), child, FHIRPathElementNode(resource: child), childType)
                        try walk(child, context: childType)
                        continue
                    }
                    let typeName = resolved.isBackbone ? (resolved.info.types.first ?? "BackboneElement") : resolved.type
                    try check(catalog.invariants(for: resolved), child,
                              FHIRPathElementNode(element: child, typeName: typeName, context: resolved.type), resolved.type)
                    try walk(child, context: resolved.type)
                }
            }
            try check(catalog.invariants(forType: type), resource, FHIRPathElementNode(resource: resource), type)
            try walk(resource, context: type)
        }
        print("quick truth: decided \(decided) of \(compared) invariant evaluations on the official examples")
        XCTAssertGreaterThan(decided, compared / 2, "most invariant evaluations should be decided from the tree")
    }
}
