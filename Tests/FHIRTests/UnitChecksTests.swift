import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRValidation

/// UCUM units (issue family 2): the syntax of the UCUM specification (§1–§2 and its grammar), where
/// R4 binds an element to the UCUM units with strength required, and in a Quantity whose system is UCUM;
/// Quantity comparators (a required binding to quantity-comparator).
final class UnitChecksTests: XCTestCase {
    // MARK: The syntax

    func testWellFormedUnitsOfTheSpecification() {
        // Products and quotients (§2.2), exponents with and without sign (§2.3), a leading solidus, the
        // 10* and 10^ atoms, square brackets inside symbols (§1 ■4), annotations (§2.4), parentheses, numbers.
        for unit in ["m", "mg/dL", "kg.m-2", "kg/m2", "m2", "/min", "10*3/uL", "10^-3", "10*-3.mol", "mm[Hg]", "[in_i]",
                     "[lb_av]", "[arb'U]", "%", "1", "{beats}/min", "{a b}", "mL/min/{1.73_m2}", "g/(8.h)", "(kg.m)/s2",
                     "mg{total}", "g/(8.h){shift}", "m+2", "[iU]/L", "'", "''", "10.uL", "/{tot}", "mmol/mol{creat}"] {
            XCTAssertNil(UCUMSyntax.problem(in: unit), unit)
        }
    }

    func testMalformedUnits() {
        // ■1: printable ASCII, no spaces; the grammar: an operator joins two components, brackets close,
        // a sign is followed by digits, `=` and `"` belong to no symbol.
        for unit in ["", "mg/", "m..s", "m./s", "kg m", "(mg", "mg)", "{mg", "mg}", "[in_i", "in_i]", "m-", "m2-3", "kg=1",
                     "\"m\"", "m/+", "μg", "m{a{b}}", "()", "mg/dL/"] {
            XCTAssertNotNil(UCUMSyntax.problem(in: unit), unit)
        }
        XCTAssertEqual(UCUMSyntax.problem(in: "kg m"), "'kg m' is not a valid UCUM unit: a space at character 3 (UCUM units have none)")
        XCTAssertEqual(UCUMSyntax.problem(in: "mg/"), "'mg/' is not a valid UCUM unit: a unit is missing at character 4")
    }

    /// Every unit of the official value set of common UCUM units is well formed.
    func testEveryCommonUCUMUnitOfTheR4PackageIsWellFormed() throws {
        let url = try Corpus.folder("fhir-r4-definitions").appendingPathComponent("ValueSet-ucum-common.json")
        let valueSet = try FHIRJSON.read(Data(contentsOf: url))
        var codes: [String] = []
        for include in valueSet.child(named: "compose")?.children(named: "include") ?? [] {
            codes += include.children(named: "concept").compactMap { $0.childValue("code") }
        }
        XCTAssertGreaterThan(codes.count, 1000)
        let malformed = codes.filter { UCUMSyntax.problem(in: $0) != nil }
        XCTAssertEqual(malformed, [])
    }

    // MARK: In resources

    private func issues(_ json: String) throws -> [ValidationIssue] {
        StructureValidator().validate(try FHIRJSON.read(Data(json.utf8))).issues.filter { $0.severity == .error }
    }

    private func observation(quantity: String) -> String {
        #"{"resourceType":"Observation","status":"final","code":{"text":"x"},"valueQuantity":\#(quantity)}"#
    }

    func testAQuantityOfTheUCUMSystemHasAWellFormedCode() throws {
        XCTAssertEqual(try issues(observation(quantity: #"{"value":1,"system":"http://unitsofmeasure.org","code":"mm[Hg]"}"#)), [])
        let found = try issues(observation(quantity: #"{"value":1,"system":"http://unitsofmeasure.org","code":"mm Hg"}"#))
        XCTAssertEqual(found.map(\.expression), ["Observation.valueQuantity.code"])
        XCTAssertEqual(found.first?.code, .codeInvalid)
        // Another system's code is that system's business; a unit alone is free text.
        XCTAssertEqual(try issues(observation(quantity: #"{"value":1,"system":"http://example.org/units","code":"mm Hg"}"#)), [])
        XCTAssertEqual(try issues(observation(quantity: #"{"value":1,"unit":"mm Hg"}"#)), [])
    }

    func testTheQuantitySpecializationsToo() throws {
        // Age is a Quantity: Condition.onsetAge.
        let condition = #"{"resourceType":"Condition","subject":{"reference":"Patient/1"},"onsetAge":{"value":3,"system":"http://unitsofmeasure.org","code":"a/"}}"#
        XCTAssertEqual(try issues(condition).map(\.expression), ["Condition.onsetAge.code"])
    }

    func testQuantityComparatorsAreTheFourOfTheRequiredBinding() throws {
        XCTAssertEqual(try issues(observation(quantity: #"{"value":1,"comparator":"<="}"#)), [])
        let found = try issues(observation(quantity: #"{"value":1,"comparator":"=<"}"#))
        XCTAssertEqual(found.map(\.expression), ["Observation.valueQuantity.comparator"])
    }

    private func researchElement(unit: String) -> String {
        #"{"resourceType":"ResearchElementDefinition","status":"draft","type":"population","characteristic":[{"definitionCodeableConcept":{"text":"x"},"unitOfMeasure":\#(unit)}]}"#
    }

    func testAnElementBoundToTheUCUMUnitsHasAUCUMCoding() throws {
        XCTAssertEqual(try issues(researchElement(unit: #"{"coding":[{"system":"http://unitsofmeasure.org","code":"mg/dL"}]}"#)), [])
        XCTAssertEqual(try issues(researchElement(unit: #"{"text":"milligrams"}"#)), [], "no coding: nothing to judge")
        let malformed = try issues(researchElement(unit: #"{"coding":[{"system":"http://unitsofmeasure.org","code":"mg//dL"}]}"#))
        XCTAssertEqual(malformed.map(\.expression), ["ResearchElementDefinition.characteristic[0].unitOfMeasure.coding[0].code"])
        let otherSystem = try issues(researchElement(unit: #"{"coding":[{"system":"http://snomed.info/sct","code":"258684004"}]}"#))
        XCTAssertEqual(otherSystem.map(\.expression), ["ResearchElementDefinition.characteristic[0].unitOfMeasure"])
    }

    /// The list of elements bound to ucum-units is the R4 definitions' own.
    func testTheUCUMBoundElementsAreThoseOfTheR4Definitions() throws {
        var bound: Set<String> = []
        for file in try Corpus.files(in: "fhir-r4-definitions", suffix: ".json") where file.lastPathComponent.hasPrefix("StructureDefinition-") {
            guard let object = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any],
                  object["kind"] as? String == "resource", object["derivation"] as? String == "specialization",
                  let snapshot = object["snapshot"] as? [String: Any], let elements = snapshot["element"] as? [[String: Any]]
            else { continue }
            for element in elements {
                guard let binding = element["binding"] as? [String: Any], binding["strength"] as? String == "required",
                      let valueSet = binding["valueSet"] as? String, valueSet.hasPrefix("http://hl7.org/fhir/ValueSet/ucum-units"),
                      let path = element["path"] as? String
                else { continue }
                bound.insert(path)
            }
        }
        XCTAssertEqual(bound, ValidationWalk.ucumBoundElements)
    }
}
