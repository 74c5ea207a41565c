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

    private func outcome(_ text: String, on resource: Element? = nil, _ environment: FHIRPathEnvironment) -> String {
        do {
            let values = try FHIRPathExpression(text).evaluate(on: resource ?? observation, environment: environment)
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

    /// A plan types a choice element's children from the instance names its metadata lists
    /// (``StepResolutions/ChoiceTable``): names that only look like one (an unknown or disallowed type
    /// suffix, a lower-case suffix, another element's name) are left out as the tree walk leaves them out.
    func testChoiceElementsAreTheOnesTheTreeWalkTakes() {
        let resource = Element.resource("Observation", children: [
            Element(name: "valueQuantity", children: [Element(name: "value", value: "5", valueKind: .number)]),
            Element(name: "valueString", value: "five"),
            Element(name: "valueMoney", children: [Element(name: "value", value: "6", valueKind: .number)]),
            Element(name: "valuequantity", children: [Element(name: "value", value: "7", valueKind: .number)]),
            Element(name: "valueFoo", value: "x"),
            Element(name: "effectivePeriod", children: [Element(name: "start", value: "2024-03-01")]),
            Element(name: "effectiveDateTime", value: "2024-03-02"),
            Element(name: "component", children: [
                Element(name: "valueCodeableConcept", children: [Element(name: "text", value: "t")]),
                Element(name: "valueBoolean", value: "true", valueKind: .boolean),
            ], jsonArrayItem: true),
        ])
        for text in [
            "Observation.value", "Observation.value.value", "Observation.value.ofType(string)", "Observation.value.ofType(Quantity).value",
            "Observation.valueQuantity.value", "Observation.valueMoney", "Observation.valueFoo", "Observation.effective",
            "Observation.effective.ofType(Period).start", "Observation.effective.first()", "Observation.component.value",
            "Observation.component.value.ofType(boolean)", "Observation.component.value.text", "Observation.value.count()",
            "Observation.where(value.exists()).effective.ofType(dateTime)", "Observation.component.where(value.text = 't').value.count()",
        ] {
            XCTAssertEqual(outcome(text, on: resource, FHIRPathEnvironment()), outcome(text, on: resource, treeWalk), text)
            var tracked = FHIRPathEnvironment()
            tracked.tracksPaths = true
            var trackedTreeWalk = treeWalk
            trackedTreeWalk.tracksPaths = true
            XCTAssertEqual(paths(text, on: resource, tracked), paths(text, on: resource, trackedTreeWalk), text)
        }
        // Money is no type of Observation.value[x]; a lower-case suffix names no choice.
        XCTAssertEqual(outcome("Observation.value.count()", on: resource, FHIRPathEnvironment()), "[integer:2]")
        XCTAssertEqual(outcome("Observation.effective.ofType(Period).start", on: resource, FHIRPathEnvironment()), "[dateTime:@2024-03-01T]")
    }

    /// Children a plan types on the spot rather than from its steps' cached definitions: resources
    /// (typed by their own `resourceType`, in `Bundle.entry.resource` and `contained`), elements the
    /// metadata does not define, and steps that meet more element types than their cache keeps (eight
    /// per step, ``StepResolutions``): what plan and tree walk select, and where, is the same on the
    /// first evaluation (which fills the caches) and on the next (which reads them).
    func testChildrenTypedOnTheSpotAreTypedAsTheTreeWalkTypesThem() throws {
        let types = ["Patient", "Observation", "Condition", "Procedure", "Encounter", "CarePlan", "Goal", "MedicationRequest",
                     "Immunization", "AllergyIntolerance", "Device"]
        let entries = types.enumerated().map { index, type in
            Element(name: "entry", children: [
                Element(name: "resource", resourceType: type, children: [
                    Element(name: "id", value: "r\(index)"),
                    Element(name: "meta", children: [Element(name: "versionId", value: "\(index)")]),
                    Element(name: "contained", resourceType: "Practitioner", children: [Element(name: "id", value: "p\(index)")],
                            jsonArrayItem: true),
                    Element(name: "madeUp", value: "m\(index)"),
                    Element(name: "extension", children: [Element(name: "url", value: "http://example.org/\(index)")], jsonArrayItem: true),
                ]),
            ], jsonArrayItem: true)
        }
        let bundle = Element.resource("Bundle", children: [Element(name: "type", value: "collection")] + entries)
        var tracked = FHIRPathEnvironment()
        tracked.tracksPaths = true
        var trackedTreeWalk = treeWalk
        trackedTreeWalk.tracksPaths = true
        func path(_ value: FHIRPathValue) -> String? {
            if case .element(let node) = value { return node.path }
            return nil
        }
        for text in [
            "Bundle.entry.resource", "Bundle.entry.resource.id", "Bundle.entry.resource.meta.versionId", "Bundle.entry.resource.contained",
            "Bundle.entry.resource.contained.id", "Bundle.entry.resource.madeUp", "Bundle.entry.resource.extension.url",
            "Bundle.entry.resource.ofType(Patient).id", "Bundle.entry.resource.where(id = 'r3').meta.versionId",
            "Bundle.entry.resource.contained.where(id.exists()).count()", "Bundle.entry.resource.madeUp.first()",
        ] {
            let expression = try FHIRPathExpression(text)
            let expected = try expression.evaluate(on: bundle, environment: treeWalk).map { "\($0.typeName):\($0)" }
            let expectedPaths = try expression.evaluate(on: bundle, environment: trackedTreeWalk).map(path)
            for _ in 0..<2 {
                XCTAssertEqual(try expression.evaluate(on: bundle).map { "\($0.typeName):\($0)" }, expected, text)
                XCTAssertEqual(try expression.evaluate(on: bundle, environment: tracked).map(path), expectedPaths, text)
            }
        }
    }

    /// A union whose operands all have plans is evaluated operand by operand, `distinct` of the two
    /// sides as the tree walk takes it: the same items in the same order (duplicates removed, the
    /// first kept), the same locations; an operand without a plan, or one that fails, leaves the
    /// whole union to the tree walk.
    func testUnionsOfPlannedOperandsGiveWhatTheTreeWalkGives() throws {
        var tracked = FHIRPathEnvironment()
        tracked.tracksPaths = true
        var trackedTreeWalk = treeWalk
        trackedTreeWalk.tracksPaths = true
        for text in [
            "Observation.status | Observation.subject.reference", "Observation.status | Observation.status",
            "Observation.code.coding.code | Observation.component.code.coding.code | Observation.code.coding.code",
            "Observation.code.coding | Observation.code.coding.where(system = 'http://loinc.org')",
            "(Observation.subject.reference | Observation.status) | (Observation.value.ofType(Quantity).code | Observation.status)",
            "Observation.valueString | Observation.value.ofType(Quantity).value | Observation.effective",
            "Observation.status | Observation.code.coding.code.single()", "Observation.status | now().toString().length()",
        ] {
            XCTAssertEqual(outcome(text, FHIRPathEnvironment()), outcome(text, treeWalk), text)
            XCTAssertEqual(paths(text, on: observation, tracked), paths(text, on: observation, trackedTreeWalk), text)
        }
        XCTAssertEqual(outcome("Observation.status | Observation.code.coding.code | Observation.status", FHIRPathEnvironment()),
                       "[code:final, code:1, code:29463-7]")
        XCTAssertTrue(try FHIRPathExpression("Observation.status | Observation.subject.reference").leadingOperands.allSatisfy { $0.plan != nil })
    }

    /// The locations of what `text` selects from `resource`.
    private func paths(_ text: String, on resource: Element, _ environment: FHIRPathEnvironment) -> [String?] {
        guard let values = try? FHIRPathExpression(text).evaluate(on: resource, environment: environment) else { return [] }
        return values.map { value in
            if case .element(let node) = value { return node.path }
            return nil
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

    /// The values with the locations they carry when paths are tracked.
    private func located(_ text: String, context: [FHIRPathValue]? = nil, _ environment: FHIRPathEnvironment) -> String {
        do {
            let expression = try FHIRPathExpression(text)
            let values = try context.map { try expression.evaluate(context: $0, resource: observation, rootResource: observation, environment: environment) }
                ?? expression.evaluate(on: observation, environment: environment)
            return "[" + values.map { value in
                guard case .element(let node) = value else { return "\(value)" }
                return "\(node.typeName ?? "?"):\(value)@\(node.path ?? "-")"
            }.joined(separator: ", ") + "]"
        } catch {
            return "error: \(error)"
        }
    }

    func testPlansGiveTheLocationsTheTreeWalkGives() throws {
        let planned = FHIRPathEnvironment(tracksPaths: true)
        let walked = FHIRPathEnvironment(trace: { _, _ in }, tracksPaths: true)
        XCTAssertTrue(FHIRPathPlanRun.applies(to: planned))
        XCTAssertFalse(FHIRPathPlanRun.applies(to: walked))
        let expressions = [
            "Observation.subject.reference", "Observation.code.coding.code", "Observation.code.coding", "Observation.component.value",
            "Observation.component.where(code.coding.code = '8480-6').value.ofType(Quantity).value", "Observation.value.ofType(Quantity)",
            "Observation.code.coding.where(system = 'http://loinc.org').code.first()", "Observation.category.coding.code",
            "Observation.component.code.coding.first()", "Observation", "Observation.effective.ofType(dateTime)", "component[0].code",
        ]
        for text in expressions {
            XCTAssertEqual(located(text, planned), located(text, walked), text)
        }
        XCTAssertEqual(located("Observation.code.coding.code", planned),
                       "[code:1@Observation.code.coding[0].code, code:29463-7@Observation.code.coding[1].code]")
        XCTAssertEqual(located("Observation.component.value", planned),
                       "[Quantity:120 '1'@Observation.component[0].valueQuantity, string:n/a@Observation.component[1].valueString]")
        // From items that carry their own locations, as the mapping engine evaluates a task's fields on
        // each item of its `each`.
        let components = try FHIRPathExpression("Observation.component").evaluate(on: observation, environment: walked)
        XCTAssertEqual(components.count, 2)
        for text in ["code.coding.code", "value", "code.coding.where(code = 'x')", "$this", "code.coding.code.first()"] {
            XCTAssertEqual(located(text, context: components, planned), located(text, context: components, walked), text)
            XCTAssertEqual(located(text, context: [components[1]], planned), located(text, context: [components[1]], walked), text)
        }
        XCTAssertEqual(located("code.coding.code", context: [components[1]], planned),
                       "[code:8462-4@Observation.component[1].code.coding[0].code, code:x@Observation.component[1].code.coding[1].code]")
    }

    /// Plans compare decimal and integer elements written as plain numbers on their digits: the same
    /// verdicts as the operators' conversions, and the same errors where the text is no number.
    func testNumbersCompareAsTheOperatorsCompareThem() {
        let quantities = ["101.50", "-0", "0.000", "-12.5", "1E2", "123456789012345678901", "100", "99.999999999999999", "abc"]
        let integers = ["5", "-5", "0", "5.0", "+7"]
        let resources = quantities.map { text in
            Element.resource("Observation", children: [Element(name: "valueQuantity", children: [Element(name: "value", value: text, valueKind: .number)])])
        } + integers.map { text in
            Element.resource("Observation", children: [Element(name: "valueInteger", value: text, valueKind: .number)])
        }
        let constants = ["100", "101.5", "101.500", "-1", "0", "0.0", "5", "5.0", "-12.50", "0.00000000000000001", "999999999999999999"]
        for resource in resources {
            for constant in constants {
                for op in ["=", "!=", "<", ">", "<=", ">="] {
                    for path in ["Observation.value.ofType(Quantity).value", "Observation.value.ofType(integer)"] {
                        let text = "\(path) \(op) \(constant)"
                        XCTAssertEqual(outcome(text, on: resource, FHIRPathEnvironment()), outcome(text, on: resource, treeWalk),
                                       "\(text) on \(resource.children)")
                    }
                }
            }
        }
        XCTAssertEqual(outcome("Observation.value.ofType(Quantity).value > 100", on: resources[0], FHIRPathEnvironment()), "[boolean:true]")
        XCTAssertEqual(outcome("Observation.value.ofType(Quantity).value = 0", on: resources[1], FHIRPathEnvironment()), "[boolean:true]")
        XCTAssertEqual(outcome("Observation.value.ofType(Quantity).value < -12.49", on: resources[3], FHIRPathEnvironment()), "[boolean:true]")
    }

    /// The System type of each FHIR primitive (FHIRPath, "Models"), which plans compare elements by.
    func testPrimitivesHaveTheirSystemTypes() {
        let expected: [String: String] = [
            "boolean": "Boolean", "integer": "Integer", "positiveInt": "Integer", "unsignedInt": "Integer", "integer64": "Integer",
            "decimal": "Decimal", "date": "Date", "dateTime": "DateTime", "instant": "DateTime", "time": "Time",
            "string": "String", "code": "String", "id": "String", "markdown": "String", "uri": "String", "url": "String",
            "canonical": "String", "oid": "String", "uuid": "String", "base64Binary": "String", "xhtml": "String",
        ]
        for (type, system) in expected { XCTAssertEqual(FHIRPathTypes.systemType(ofPrimitive: type), system, type) }
        for type in ["", "Quantity", "codes", "uri2", "dateTimes", "CodeableConcept", "Integer", "instants", "tim", "positiveint"] {
            XCTAssertNil(FHIRPathTypes.systemType(ofPrimitive: type), type)
        }
    }

    func testVariablesRedefinedByTheEnvironmentAreRespected() throws {
        let expression = try FHIRPathExpression("Observation.value.ofType(Quantity).where(system = %ucum).code")
        let redefined = FHIRPathEnvironment(stringVariables: ["ucum": "http://other"])
        XCTAssertEqual(try expression.evaluate(on: observation, environment: redefined).count, 0)
        XCTAssertEqual(try expression.evaluate(on: observation).map(\.description), ["kg"])
    }
}
