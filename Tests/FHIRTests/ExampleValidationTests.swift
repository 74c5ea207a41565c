import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// The official R4 examples are valid content: structural validation should find (almost) no errors in
/// them. The few it finds are genuine problems of the published examples, listed with their reasons in
/// Docs/validator-disagreements.md.
final class ExampleValidationTests: XCTestCase {
    /// The official JSON examples with genuine errors, each explained in Docs/validator-disagreements.md.
    static let examplesWithErrors: Set<String> = [
        "Bundle-10bb101f-a121-4264-a920-67be9cb82c74.json", "Bundle-3a0707d3-549e-4467-b8b8-5a2ab3800efe.json",
        "Bundle-lri-example.json", "Bundle-father.json", "EventDefinition-example.json",
        "Questionnaire-zika-virus-exposure-assessment.json", "Questionnaire-qs1.json",
    ]

    func testOfficialJSONExamples() throws {
        let files = try Corpus.files(in: "fhir-r4-examples", suffix: ".json")
        var clean = 0
        var failures: [String] = [], failing: Set<String> = []
        for file in files {
            let resource = try FHIRJSON.read(Data(contentsOf: file))
            let report = StructureValidator(options: ValidationOptions(checkJSONArrayShape: true)).validate(resource)
            if report.hasErrors {
                failing.insert(file.lastPathComponent)
                failures.append("\(file.lastPathComponent): " + report.errors.prefix(3).map(\.description).joined(separator: " | "))
            } else {
                clean += 1
            }
        }
        print("fhir-r4-examples: \(clean)/\(files.count) without errors")
        for failure in failures { print("  \(failure)") }
        XCTAssertEqual(failing.subtracting(Self.examplesWithErrors).sorted(), [], "examples with unexpected errors")
        XCTAssertEqual(Self.examplesWithErrors.subtracting(failing).sorted(), [], "listed examples that are now clean")
    }

    func testOfficialXMLExamples() throws {
        let files = try Corpus.files(in: "fhir-r4-examples-xml", suffix: ".xml")
        let validator = StructureValidator(options: ValidationOptions(checkJSONValueKinds: false))
        var clean = 0
        for file in files {
            let report = validator.validate(try FHIRXML.read(Data(contentsOf: file)))
            if report.hasErrors {
                print("  \(file.lastPathComponent): " + report.errors.prefix(3).map(\.description).joined(separator: " | "))
            } else {
                clean += 1
            }
        }
        print("fhir-r4-examples-xml: \(clean)/\(files.count) without errors")
        // Every XML example is clean (their JSON twins with errors have no XML twin).
        XCTAssertEqual(clean, files.count)
    }
}
