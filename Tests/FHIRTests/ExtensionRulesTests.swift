import FHIR
import Foundation
import XCTest

/// Extensions against the R4 core extension definitions (https://hl7.org/fhir/R4/extensibility.html),
/// each case from the definitions' text: context, value type and cardinality, sub-extensions.
final class ExtensionRulesTests: XCTestCase {
    private func issues(_ json: String) throws -> [ValidationIssue] {
        StructureValidator().validate(try FHIRJSON.read(Data(json.utf8))).issues
    }

    /// A Patient with `extensions` (none when empty) and `more` fields.
    private func patient(_ extensions: String, more: String = "") -> String {
        #"{"resourceType":"Patient"\#(extensions.isEmpty ? "" : #","extension":["# + extensions + "]")\#(more)}"#
    }

    private let birthPlace = "http://hl7.org/fhir/StructureDefinition/patient-birthPlace"
    private let animal = "http://hl7.org/fhir/StructureDefinition/patient-animal"

    // patient-birthPlace: context Patient, value[x] 1..1 of type Address.
    func testACoreExtensionInItsContextWithItsValueTypeIsValid() throws {
        XCTAssertEqual(try issues(patient(#"{"url":"\#(birthPlace)","valueAddress":{"city":"Chicago"}}"#)), [])
    }

    func testAValueOfAnotherTypeIsAnError() throws {
        let found = try issues(patient(#"{"url":"\#(birthPlace)","valueString":"Chicago"}"#))
        XCTAssertEqual(found.map(\.severity), [.error])
        XCTAssertEqual(found.first?.expression, "Patient.extension[0].valueString")
        XCTAssertTrue(found.first?.diagnostics.contains("Address") ?? false, "\(found)")
    }

    func testARequiredValueThatIsMissingIsAnError() throws {
        // An extension with neither value nor extensions also breaks ele-1: both are reported.
        let found = try issues(patient(#"{"url":"\#(birthPlace)","extension":[{"url":"note","valueString":"x"}]}"#))
        XCTAssertTrue(found.contains { $0.severity == .error && $0.diagnostics.contains("must have a value") }, "\(found)")
    }

    // patient-birthTime: context Patient.birthDate (an extension on a primitive, `_birthDate` in JSON).
    func testAnExtensionOnAPrimitiveMatchesTheElementsPath() throws {
        let json = patient("", more: #","birthDate":"1970-01-01","_birthDate":{"extension":[{"url":"http://hl7.org/fhir/StructureDefinition/patient-birthTime","valueDateTime":"1970-01-01T08:30:00-06:00"}]}"#)
        XCTAssertEqual(try issues(json), [])
    }

    // translation: context string, code or markdown (by type, wherever the element is); complex, with
    // the sub-extensions lang (1..1 code) and content (1..1 string or markdown).
    func testAComplexExtensionOnATypeAnywhereIsValid() throws {
        let json = patient("", more: #","name":[{"family":"Doe","_family":{"extension":[{"url":"http://hl7.org/fhir/StructureDefinition/translation","extension":[{"url":"lang","valueCode":"fr"},{"url":"content","valueString":"Dupont"}]}]}}]"#)
        XCTAssertEqual(try issues(json), [])
    }

    // patient-animal: complex (value[x] 0..0), species 1..1, breed 0..1, genderStatus 0..1.
    func testAComplexExtensionsSubExtensionsAreChecked() throws {
        let species = #"{"url":"species","valueCodeableConcept":{"text":"dog"}}"#
        XCTAssertEqual(try issues(patient(#"{"url":"\#(animal)","extension":[\#(species)]}"#)), [])

        let missing = try issues(patient(#"{"url":"\#(animal)","extension":[{"url":"breed","valueCodeableConcept":{"text":"beagle"}}]}"#))
        XCTAssertTrue(missing.contains { $0.severity == .error && $0.diagnostics.contains("requires the sub-extension 'species'") }, "\(missing)")

        let twice = try issues(patient(#"{"url":"\#(animal)","extension":[\#(species),\#(species)]}"#))
        XCTAssertTrue(twice.contains { $0.severity == .error && $0.diagnostics.contains("at most 1") }, "\(twice)")

        let valued = try issues(patient(#"{"url":"\#(animal)","valueString":"dog"}"#))
        XCTAssertTrue(valued.contains { $0.severity == .error && $0.diagnostics.contains("complex") }, "\(valued)")

        let wrongType = try issues(patient(#"{"url":"\#(animal)","extension":[{"url":"species","valueString":"dog"}]}"#))
        XCTAssertTrue(wrongType.contains { $0.severity == .error && $0.expression == "Patient.extension[0].extension[0].valueString" }, "\(wrongType)")

        // A sub-extension the definition does not name: a warning (the official examples do it).
        let unknown = try issues(patient(#"{"url":"\#(animal)","extension":[\#(species),{"url":"colour","valueString":"brown"}]}"#))
        XCTAssertEqual(unknown.map(\.severity), [.warning])
    }

    // Out of its context (patient-birthPlace on an Observation): a warning, for the same reason.
    func testAnExtensionOutOfItsContextIsAWarning() throws {
        let found = try issues(#"""
            {"resourceType":"Observation","status":"final","code":{"text":"x"},
             "extension":[{"url":"\#(birthPlace)","valueAddress":{"city":"Chicago"}}]}
            """#)
        XCTAssertEqual(found.map(\.severity), [.warning])
        XCTAssertTrue(found.first?.diagnostics.contains("allowed on Patient") ?? false, "\(found)")
    }

    // "Element" as a context allows any element (data-absent-reason).
    func testTheElementContextAllowsAnyElement() throws {
        let json = patient("", more: #","_gender":{"extension":[{"url":"http://hl7.org/fhir/StructureDefinition/data-absent-reason","valueCode":"unknown"}]}"#)
        XCTAssertEqual(try issues(json), [])
    }

    func testAnUnknownCoreURLIsAnErrorAndAnUnknownOtherURLAWarning() throws {
        let core = try issues(patient(#"{"url":"http://hl7.org/fhir/StructureDefinition/patient-favouriteColour","valueString":"blue"}"#))
        XCTAssertEqual(core.map(\.severity), [.error])
        let other = try issues(patient(#"{"url":"http://example.org/fhir/StructureDefinition/favourite-colour","valueString":"blue"}"#))
        XCTAssertEqual(other.map(\.severity), [.warning])
    }
}
