import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR
@testable import FHIRPathConformance

/// Evaluation over the element model: choice types, primitive extensions, resolve(), environment
/// variables, quantities and dates, and reuse of a compiled expression.
final class FHIRPathEvaluationTests: XCTestCase {
    private func evaluate(_ expression: String, on resource: Element, variables: [String: String] = [:]) throws -> [String] {
        try FHIRPathExpression(expression).evaluate(on: resource, environment: FHIRPathEnvironment(stringVariables: variables))
            .map(\.description)
    }

    private let observation = Element.resource("Observation", children: [
        Element(name: "status", value: "final"),
        Element(name: "code", children: [
            Element(name: "coding", children: [
                Element(name: "system", value: "http://loinc.org"), Element(name: "code", value: "29463-7"),
            ]),
        ]),
        Element(name: "valueQuantity", children: [
            Element(name: "value", value: "72.5", valueKind: .number), Element(name: "unit", value: "kg"),
            Element(name: "system", value: "http://unitsofmeasure.org"), Element(name: "code", value: "kg"),
        ]),
        Element(name: "effectiveDateTime", value: "2024-03-01T10:30:00+01:00", children: [
            Element(name: "extension", children: [
                Element(name: "url", value: "http://example.org/precision"),
                Element(name: "valueCode", value: "minute"),
            ]),
        ]),
    ])

    func testChoiceElementsAreNamedWithoutSuffixAndTyped() throws {
        XCTAssertEqual(try evaluate("Observation.value.ofType(Quantity).value", on: observation), ["72.5"])
        XCTAssertEqual(try evaluate("(Observation.value as Quantity).unit", on: observation), ["kg"])
        XCTAssertEqual(try evaluate("Observation.value is Quantity", on: observation), ["true"])
        XCTAssertEqual(try evaluate("Observation.value.ofType(string)", on: observation), [])
        XCTAssertEqual(try evaluate("Observation.effective.type().name", on: observation), ["dateTime"])
        XCTAssertEqual(try evaluate("Observation.value > 70000 'g'", on: observation), ["true"])
        XCTAssertEqual(try evaluate("Observation.value = 72500 'g'", on: observation), ["true"])
        let bench = "Observation.where(code.coding.where(system='http://loinc.org' and code='29463-7').exists()).value.ofType(Quantity).value"
        XCTAssertEqual(try evaluate(bench, on: observation), ["72.5"])
    }

    func testPrimitiveExtensionsAndTheirValues() throws {
        XCTAssertEqual(try evaluate("Observation.effective.extension('http://example.org/precision').value", on: observation), ["minute"])
        XCTAssertEqual(try evaluate("Observation.effective > @2024-03-01T09:00:00Z", on: observation), ["true"])
        XCTAssertEqual(try evaluate("Observation.effective.hasValue()", on: observation), ["true"])
    }

    func testDuplicatedSingleElementsOfInvalidDataAreAllSeenUnlessCardinalityIsTrusted() throws {
        // Invalid data: Observation.status may occur once. FHIRPath still sees both unless the caller
        // (validation, which reports the cardinality itself) asks it to trust max-1 elements.
        let invalid = Element.resource("Observation", children: [
            Element(name: "status", value: "final"), Element(name: "status", value: "amended"),
        ])
        XCTAssertEqual(try evaluate("Observation.status", on: invalid), ["final", "amended"].map { FHIRPathValue.string($0).description })
        let trusting = FHIRPathEnvironment(trustsSingleCardinality: true)
        XCTAssertEqual(try FHIRPathExpression("Observation.status").evaluate(on: invalid, environment: trusting).count, 1)
    }

    func testVariables() throws {
        XCTAssertEqual(try evaluate("Observation.code.coding.where(system = %loinc).code", on: observation), ["29463-7"])
        XCTAssertEqual(try evaluate("%status = Observation.status", on: observation, variables: ["status": "final"]), ["true"])
        XCTAssertEqual(try evaluate("%resource.status", on: observation), ["final"])
        XCTAssertThrowsError(try evaluate("%nope", on: observation))
    }

    func testResolveWithinABundleAndContainedResources() throws {
        let patient = Element.resource("Patient", children: [Element(name: "id", value: "p1"), Element(name: "gender", value: "female")])
        var entryPatient = patient
        entryPatient.name = "resource"
        var entryObservation = Element.resource("Observation", children: [
            Element(name: "subject", children: [Element(name: "reference", value: "urn:uuid:abc")]),
            Element(name: "performer", children: [Element(name: "reference", value: "Patient/p1")]),
        ])
        entryObservation.name = "resource"
        let bundle = Element.resource("Bundle", children: [
            Element(name: "type", value: "collection"),
            Element(name: "entry", children: [Element(name: "fullUrl", value: "urn:uuid:abc"), entryPatient]),
            Element(name: "entry", children: [entryObservation]),
        ])
        XCTAssertEqual(try evaluate("Bundle.entry.resource.ofType(Observation).subject.resolve().gender", on: bundle), ["female"])
        XCTAssertEqual(try evaluate("Bundle.entry.resource.ofType(Observation).performer.resolve().id", on: bundle), ["p1"])

        var contained = Element.resource("Practitioner", children: [Element(name: "id", value: "pr")])
        contained.name = "contained"
        let plan = Element.resource("CarePlan", children: [
            contained,
            Element(name: "author", children: [Element(name: "reference", value: "#pr")]),
        ])
        XCTAssertEqual(try evaluate("CarePlan.author.resolve().is(Practitioner)", on: plan), ["true"])
        XCTAssertEqual(try evaluate("CarePlan.contained.ofType(Practitioner).id", on: plan), ["pr"])
    }

    func testQuantitiesAndDates() throws {
        let empty = Element.resource("Basic")
        let cases: [(String, String)] = [
            ("1 'mg' = 0.001 'g'", "true"), ("100 'mL' < 1 'L'", "true"), ("90 'min' = 1.5 'h'", "true"),
            ("120 'mm[Hg]' > 15 'kPa'", "true"), ("2 'wk' = 14 'd'", "true"), ("1 year = 12 months", "true"),
            ("(1 'kg' + 500 'g').toString()", "1.5 'kg'"), ("@2024-01-31 + 1 month", "@2024-02-29"),
            ("@2024-03-01T10:00:00Z - 90 minutes", "@2024-03-01T08:30:00Z"), ("today() > @2000-01-01", "true"),
            ("@2024 = @2024-01", ""), ("5.5 'mg'.toQuantity('g')", "0.0055 'g'"),
            ("coalesce({}, 'b', 'c')", "b"), ("coalesce({}, {})", ""),
            ("1.587.lowBoundary(2)", "1.58"), ("1.587.highBoundary(2)", "1.59"), ("(-1.587).lowBoundary(2)", "-1.59"),
        ]
        for (expression, expected) in cases {
            XCTAssertEqual(try evaluate(expression, on: empty).joined(separator: ","), expected, expression)
        }
    }

    func testACompiledExpressionIsReusedAcrossResourcesAndThreads() throws {
        let expression = try FHIRPathExpression("Observation.value.ofType(Quantity).value")
        let values = (0..<50).map { index in
            Element.resource("Observation", children: [
                Element(name: "valueQuantity", children: [Element(name: "value", value: "\(index)", valueKind: .number)]),
            ])
        }
        let results = UnsafeSendableBox(Array(repeating: "", count: values.count))
        DispatchQueue.concurrentPerform(iterations: values.count) { index in
            let value = (try? expression.evaluate(on: values[index]))?.first?.description ?? "error"
            results.set(index, value)
        }
        XCTAssertEqual(results.values, (0..<50).map(String.init))
    }

    func testSuiteInputsReadThroughTheReaders() throws {
        let folder = try Corpus.folder("fhirpath")
        let patient = try FHIRPathConformanceSuite.readInput(folder.appendingPathComponent("patient-example.xml"))
        XCTAssertEqual(try evaluate("Patient.name.where(use = 'official').given", on: patient), ["Peter", "James"])
        XCTAssertEqual(try evaluate("Patient.birthDate.extension('http://hl7.org/fhir/StructureDefinition/patient-birthTime').value",
                                    on: patient), ["@1974-12-25T14:35:45-05:00"])
    }
}

/// A fixed-size array written by index from concurrent closures (each index by one writer).
private final class UnsafeSendableBox: @unchecked Sendable {
    private var storage: [String]
    private let lock = NSLock()
    init(_ values: [String]) { storage = values }
    func set(_ index: Int, _ value: String) { lock.lock(); storage[index] = value; lock.unlock() }
    var values: [String] { lock.lock(); defer { lock.unlock() }; return storage }
}
