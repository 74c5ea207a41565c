import Foundation
import XCTest
import FHIR
@testable import FHIRPath

/// Compiled plans (``FHIRPathPlan``) give what the tree walk gives, and raise what it raises: the same
/// expressions are evaluated with a plan and, with a `trace` receiver set (which keeps plans out), by
/// the tree walk alone.
final class FHIRPathPlanTests: XCTestCase {
    private let observation = Element.resource("Observation", children: [
        Element(name: "status", value: "final"),
        Element(name: "category", children: [
            Element(name: "coding", children: [
                Element(name: "system", value: "http://terminology.hl7.org/CodeSystem/observation-category"),
                Element(name: "code", value: "vital-signs"),
            ], jsonArrayItem: true),
        ], jsonArrayItem: true),
        Element(name: "code", children: [
            Element(name: "coding", children: [Element(name: "system", value: "http://snomed.info/sct"), Element(name: "code", value: "1")],
                    jsonArrayItem: true),
            Element(name: "coding", children: [Element(name: "system", value: "http://loinc.org"), Element(name: "code", value: "29463-7")],
                    jsonArrayItem: true),
        ]),
        Element(name: "subject", children: [Element(name: "reference", value: "Patient/1")]),
        Element(name: "effectiveDateTime", value: "2024-03-01T10:00:00+02:00"),
        Element(name: "valueQuantity", children: [
            Element(name: "value", value: "101.50", valueKind: .number), Element(name: "system", value: "http://unitsofmeasure.org"),
            Element(name: "code", value: "kg"),
        ]),
        Element(name: "component", children: [
            Element(name: "code", children: [Element(name: "coding", children: [Element(name: "code", value: "8480-6")], jsonArrayItem: true)]),
            Element(name: "valueQuantity", children: [Element(name: "value", value: "120", valueKind: .number)]),
        ], jsonArrayItem: true),
        Element(name: "component", children: [
            Element(name: "code", children: [
                Element(name: "coding", children: [Element(name: "code", value: "8462-4")], jsonArrayItem: true),
                Element(name: "coding", children: [Element(name: "code", value: "x")], jsonArrayItem: true),
            ]),
            Element(name: "valueString", value: "n/a"),
        ], jsonArrayItem: true),
    ])

    private let treeWalk = FHIRPathEnvironment(trace: { _, _ in })

    private func outcome(_ text: String, _ environment: FHIRPathEnvironment) -> String {
        do {
            let values = try FHIRPathExpression(text).evaluate(on: observation, environment: environment)
            return "[" + values.map { "\($0.typeName):\($0)" }.joined(separator: ", ") + "]"
        } catch {
            return "error: \(error)"
        }
    }

    private func assertSameAsTreeWalk(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(outcome(text, FHIRPathEnvironment()), outcome(text, treeWalk), text, file: file, line: line)
    }

    func testPlansAreMadeForMappingStyleExpressions() throws {
        for text in [
            "Observation.subject.reference", "Observation.value.ofType(Quantity).where(system = %ucum).code",
            "Observation.code.coding.where(system = 'http://loinc.org').code.first()",
            "Observation.category.coding.where(system = 'x').code.first() = 'vital-signs'",
            "Observation.value.ofType(Quantity).value > 100 and Observation.status = 'final'",
            "Observation.where(code.coding.where(system = 'http://loinc.org' and code = '29463-7').exists()).value.ofType(Quantity).value",
        ] {
            XCTAssertNotNil(try FHIRPathExpression(text).plan, text)
        }
        // What plans do not cover stays with the tree walk.
        for text in ["Observation.component.code.coding.code.distinct()", "Observation.component[0]", "(1 | 2).count()"] {
            XCTAssertNil(try FHIRPathExpression(text).plan, text)
        }
    }

    func testPlansSelectWhatTheTreeWalkSelects() {
        for text in [
            "Observation.subject.reference", "Observation.effective.ofType(dateTime)", "Observation.value.ofType(Quantity).value",
            "Observation.value.ofType(Quantity).where(system = %ucum).code", "Observation.code.coding.code",
            "Observation.code.coding.where(system = 'http://loinc.org').code.first()", "Observation.code.coding.first().code",
            "Observation.code.coding.code.first()", "Observation.component.where(code.coding.code = '8480-6').value.ofType(Quantity).value",
            "Observation.component.value", "Observation.component.value.ofType(string)",
            "Observation.category.coding.where(system = 'http://terminology.hl7.org/CodeSystem/observation-category').code.first() = 'vital-signs'",
            "Observation.value.ofType(Quantity).value > 100 and Observation.status = 'final'",
            "Observation.value.ofType(Quantity).value <= 101.5", "Observation.value.ofType(Quantity).value < 101.50",
            "Observation.status != 'final'", "Observation.status = 'final' or Observation.missing = 'x'",
            "Observation.missing = 'x' and Observation.status = 'final'", "Observation.code.coding.code = '1'",
            "Observation.code.coding.code != '1'", "Observation.code.coding.exists()", "Observation.missing.empty()",
            "Observation.component.count()", "Observation.code.coding.where(code.exists()).count()",
            "Observation.where(code.coding.where(system = 'http://loinc.org' and code = '29463-7').exists()).value.ofType(Quantity).value",
            "Observation.component.where($this.code.coding.code = 'x').value", "Observation.effective = @2024-03-01T10:00:00+02:00",
            "Observation.effective > @2024-03-01", "Patient.name", "subject.reference", "value.value > 100",
        ] {
            assertSameAsTreeWalk(text)
        }
    }

    func testPlansRaiseWhatTheTreeWalkRaises() {
        for text in [
            // Several items where one is expected.
            "Observation.code.coding.code > 'a'",
            "Observation.component.where(code.coding.code > 'a').exists()",
            // A criterion that fails on a later item is not skipped by first() or exists().
            "Observation.component.where(code.coding.code = '8480-6' or code.coding.code > 'a').first()",
            "Observation.component.where(code.coding.code).exists()",
            // Operands that cannot be compared.
            "Observation.status > 1", "Observation.value.ofType(Quantity).value < 'a'",
        ] {
            XCTAssertTrue(outcome(text, treeWalk).hasPrefix("error"), text)
            assertSameAsTreeWalk(text)
        }
    }

    func testVariablesRedefinedByTheEnvironmentAreRespected() throws {
        let expression = try FHIRPathExpression("Observation.value.ofType(Quantity).where(system = %ucum).code")
        let redefined = FHIRPathEnvironment(stringVariables: ["ucum": "http://other"])
        XCTAssertEqual(try expression.evaluate(on: observation, environment: redefined).count, 0)
        XCTAssertEqual(try expression.evaluate(on: observation).map(\.description), ["kg"])
    }
}
