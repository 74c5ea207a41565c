import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// FHIR JSON writes an element that repeats (max > 1) as an array, even with one item, and one that does
/// not (max 1) never as an array: the reader records the shape (``Element/jsonArrayItem``) and validation
/// of JSON reports a mismatch at the element.
final class JSONArrayShapeTests: XCTestCase {
    private func read(_ json: String) throws -> Element {
        try FHIRJSON.read(Data(json.utf8))
    }

    private func jsonIssues(_ json: String) throws -> [ValidationIssue] {
        let options = ValidationOptions(checkJSONArrayShape: true)
        return StructureValidator(options: options).validate(try read(json)).issues
    }

    // MARK: Reading

    func testReaderRecordsWhichElementsCameFromArrays() throws {
        let patient = try read(#"""
            {"resourceType":"Patient","id":"p","active":true,"name":[{"family":"Doe","given":["Ann",null],
             "_given":[null,{"id":"g2"}]}],"_birthDate":{"id":"b"},"birthDate":"1970","extension":[{"url":"u","valueString":"x"}]}
            """#)
        XCTAssertFalse(patient.jsonArrayItem, "the root")
        XCTAssertFalse(try XCTUnwrap(patient.child(named: "id")).jsonArrayItem)
        XCTAssertFalse(try XCTUnwrap(patient.child(named: "active")).jsonArrayItem)
        XCTAssertFalse(try XCTUnwrap(patient.child(named: "birthDate")).jsonArrayItem)
        XCTAssertFalse(try XCTUnwrap(patient.child(named: "birthDate")?.child(named: "id")).jsonArrayItem)
        XCTAssertTrue(try XCTUnwrap(patient.child(named: "extension")).jsonArrayItem)
        let name = try XCTUnwrap(patient.child(named: "name"))
        XCTAssertTrue(name.jsonArrayItem)
        XCTAssertFalse(try XCTUnwrap(name.child(named: "family")).jsonArrayItem)
        let given = name.children(named: "given")
        XCTAssertEqual(given.map(\.jsonArrayItem), [true, true], "a primitive array, null slot included")
        XCTAssertEqual(given.last?.childValue("id"), "g2", "the _given item merged onto its slot")
    }

    func testAnnotationOnlyArrayIsMarkedToo() throws {
        let patient = try read(#"{"resourceType":"Patient","name":[{"_given":[{"id":"a"}]}]}"#)
        let given = try XCTUnwrap(patient.child(named: "name")?.child(named: "given"))
        XCTAssertTrue(given.jsonArrayItem)
        XCTAssertEqual(given.childValue("id"), "a")
    }

    func testShapeIsNotPartOfEqualityOrHash() throws {
        let json = #"{"resourceType":"Patient","id":"p","name":[{"family":"Doe","given":["Ann"]}],"gender":"female"}"#
        let xml = #"<Patient xmlns="http://hl7.org/fhir"><id value="p"/><name><family value="Doe"/><given value="Ann"/></name><gender value="female"/></Patient>"#
        let fromJSON = try read(json)
        let fromXML = try FHIRXML.read(Data(xml.utf8))
        XCTAssertTrue(try XCTUnwrap(fromJSON.child(named: "name")).jsonArrayItem)
        XCTAssertFalse(try XCTUnwrap(fromXML.child(named: "name")).jsonArrayItem, "XML input carries no shape")
        XCTAssertEqual(fromJSON.children.map(\.name), fromXML.children.map(\.name))
        // Values read from XML are text; the JSON tree's values are text too here, so the trees are equal.
        XCTAssertEqual(fromJSON, fromXML)
        XCTAssertEqual(Set([fromJSON, fromXML]).count, 1)
        var marked = Element(name: "given", value: "Ann")
        marked.jsonArrayItem = true
        XCTAssertEqual(marked, Element(name: "given", value: "Ann"))
        XCTAssertEqual(marked.hashValue, Element(name: "given", value: "Ann").hashValue)
    }

    func testUnknownElementKeepsItsArrayOnTheWayBack() throws {
        let json = #"{"resourceType":"Patient","colours":["blue"],"shade":"dark"}"#
        let written = String(decoding: FHIRJSON.write(try read(json)), as: UTF8.self)
        XCTAssertEqual(written, json)
    }

    // MARK: Validation

    func testRepeatingElementWrittenAsObjectIsAnError() throws {
        let issues = try jsonIssues(#"{"resourceType":"Patient","name":{"family":"Doe"}}"#)
        XCTAssertEqual(issues.map(\.expression), ["Patient.name"])
        let issue = try XCTUnwrap(issues.first)
        XCTAssertEqual(issue.severity, .error)
        XCTAssertTrue(issue.diagnostics.contains("must be a JSON array"), issue.diagnostics)
    }

    func testSingleElementWrittenAsArrayIsAnError() throws {
        let issues = try jsonIssues(#"{"resourceType":"Patient","gender":["female"],"active":true}"#)
        XCTAssertEqual(issues.map(\.expression), ["Patient.gender"])
        XCTAssertTrue(issues[0].diagnostics.contains("must be a single JSON value, not an array"), issues[0].diagnostics)
        // Two items: the shape once, and the cardinality.
        let two = try jsonIssues(#"{"resourceType":"Patient","gender":["female","male"]}"#)
        XCTAssertEqual(two.filter { $0.diagnostics.contains("not an array") }.map(\.expression), ["Patient.gender"])
        XCTAssertTrue(two.contains { $0.diagnostics.contains("max allowed = 1") })
    }

    func testShapeOfPrimitivesNestedElementsAndResources() throws {
        let json = #"""
            {"resourceType":"Bundle","type":"collection","entry":[{"resource":{"resourceType":"Patient",
              "name":[{"given":"Ann","_family":[{"id":"f"}]}],"contained":{"resourceType":"Basic","code":{"text":"x"}}}},
              {"resource":[{"resourceType":"Patient"}]}]}
            """#
        let issues = try jsonIssues(json).filter { $0.diagnostics.contains("JSON array") || $0.diagnostics.contains("single JSON value") }
        XCTAssertEqual(Set(issues.map(\.expression)), [
            "Bundle.entry[0].resource.name[0].given",
            "Bundle.entry[0].resource.name[0].family",
            "Bundle.entry[0].resource.contained",
            "Bundle.entry[1].resource",
        ])
    }

    func testUnknownElementsAndXMLAreNotCheckedForShape() throws {
        XCTAssertEqual(try jsonIssues(#"{"resourceType":"Patient","colour":["blue"]}"#).map(\.diagnostics),
                       ["unknown element 'colour' in Patient"])
        let xml = #"<Patient xmlns="http://hl7.org/fhir"><name><family value="Doe"/></name><gender value="female"/></Patient>"#
        let options = ValidationOptions(checkJSONValueKinds: false, checkJSONArrayShape: false)
        XCTAssertEqual(StructureValidator(options: options).validate(try FHIRXML.read(Data(xml.utf8))).issues, [])
        // Off by default: trees built in code carry no shape.
        let built = Element.resource("Patient", children: [Element(name: "name", children: [Element(name: "family", value: "Doe")])])
        XCTAssertEqual(StructureValidator().validate(built).issues, [])
    }

    func testDocumentValidatorChecksShapeForJSONAndNDJSONOnly() throws {
        let validator = DocumentValidator()
        let json = validator.validate(Data(#"{"resourceType":"Patient","name":{"family":"Doe"}}"#.utf8), source: "p.json")
        XCTAssertEqual(json.flatMap(\.report.issues).map(\.expression), ["Patient.name"])
        let ndjson = validator.validate(Data("{\"resourceType\":\"Patient\"}\n{\"resourceType\":\"Patient\",\"gender\":[\"male\"]}\n".utf8), source: "p.ndjson")
        XCTAssertEqual(ndjson.map(\.source), ["p.ndjson:1", "p.ndjson:2"])
        XCTAssertEqual(ndjson.flatMap(\.report.issues).map(\.expression), ["Patient.gender"])
        let xml = validator.validate(Data(#"<Patient xmlns="http://hl7.org/fhir"><name><family value="Doe"/></name></Patient>"#.utf8), source: "p.xml")
        XCTAssertEqual(xml.flatMap(\.report.issues), [])
    }

    // MARK: Resource detection

    func testOnlyResourceFieldsHoldResources() throws {
        XCTAssertEqual(FHIRMetadata.r4.resourceElementNames, ["contained", "resource", "outcome"])
        let scenario = try read(#"""
            {"resourceType":"ExampleScenario","status":"draft",
             "instance":[{"resourceId":"a","resourceType":"Patient","_resourceType":{"id":"t"}}]}
            """#)
        let instance = try XCTUnwrap(scenario.child(named: "instance"))
        XCTAssertNil(instance.resourceType, "ExampleScenario.instance.resourceType is a code, not a resource type")
        XCTAssertEqual(instance.childValue("resourceType"), "Patient")
        XCTAssertEqual(instance.child(named: "resourceType")?.childValue("id"), "t")
        XCTAssertFalse(StructureValidator(options: ValidationOptions(checkJSONArrayShape: true)).validate(scenario).hasErrors)

        let xml = String(decoding: FHIRXML.write(scenario), as: UTF8.self)
        XCTAssertTrue(xml.contains(#"<instance><resourceId value="a"/><resourceType id="t" value="Patient"/></instance>"#), xml)
        XCTAssertEqual(try FHIRXML.read(Data(xml.utf8)), scenario)
        XCTAssertEqual(String(decoding: FHIRJSON.write(scenario), as: UTF8.self).filter { !$0.isWhitespace },
                       #"{"resourceType":"ExampleScenario","status":"draft","instance":[{"resourceId":"a","resourceType":"Patient","_resourceType":{"id":"t"}}]}"#)

        let bundle = try read(#"""
            {"resourceType":"Bundle","type":"batch-response","entry":[{"resource":{"resourceType":"Patient"},
             "response":{"status":"200","outcome":{"resourceType":"OperationOutcome","issue":[{"severity":"information","code":"informational"}]}}}]}
            """#)
        let entry = try XCTUnwrap(bundle.child(named: "entry"))
        XCTAssertEqual(entry.child(named: "resource")?.resourceType, "Patient")
        XCTAssertEqual(entry.child(named: "response")?.child(named: "outcome")?.resourceType, "OperationOutcome")
        let patient = try read(#"{"resourceType":"Patient","contained":[{"resourceType":"Basic"}]}"#)
        XCTAssertEqual(patient.child(named: "contained")?.resourceType, "Basic")
    }

    func testResourceTypeElsewhereIsAnOrdinaryField() throws {
        let patient = try read(#"{"resourceType":"Patient","maritalStatus":{"resourceType":"Basic","text":"x"}}"#)
        let status = try XCTUnwrap(patient.child(named: "maritalStatus"))
        XCTAssertNil(status.resourceType)
        XCTAssertEqual(status.childValue("resourceType"), "Basic")
        let issues = StructureValidator().validate(patient).issues
        XCTAssertEqual(issues.map(\.expression), ["Patient.maritalStatus.resourceType"])
        XCTAssertTrue(issues[0].diagnostics.contains("unknown element 'resourceType'"), issues[0].diagnostics)
        // The root must still be a resource, and a resource field without resourceType is reported.
        XCTAssertThrowsError(try read(#"{"id":"x"}"#))
        let contained = StructureValidator().validate(try read(#"{"resourceType":"Patient","contained":[{"id":"c"}]}"#)).issues
        XCTAssertEqual(contained.map(\.expression), ["Patient.contained[0]"])
    }

    // MARK: Corpus

    /// The official examples, the Synthea Bundles and the Bulk Data export are all written with the right
    /// shapes: checking them adds no error.
    func testCorpusHasNoShapeErrors() throws {
        let validator = DocumentValidator()
        var resources = 0
        var shapeErrors: [String] = []
        for (folder, suffix) in [("fhir-r4-examples", ".json"), ("synthea-r4", ".json"), ("bulk-ndjson", ".000.ndjson")] {
            let files = try Corpus.files(in: folder, suffix: suffix)
            var count = 0
            for file in files {
                for result in validator.validate(try Data(contentsOf: file), source: file.lastPathComponent) {
                    count += 1
                    for issue in result.report.issues where issue.diagnostics.contains("JSON array") || issue.diagnostics.contains("single JSON value") {
                        shapeErrors.append("\(result.source): \(issue)")
                    }
                }
            }
            print("json shape: \(folder): \(count) documents or NDJSON lines, \(shapeErrors.count) shape errors so far")
            resources += count
        }
        XCTAssertEqual(shapeErrors, [])
        XCTAssertGreaterThan(resources, 7_000)
    }
}
