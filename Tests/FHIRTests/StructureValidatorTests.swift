import Foundation
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// Structural validation: each kind of problem is found, at its FHIRPath location.
final class StructureValidatorTests: XCTestCase {
    private func value(_ name: String, _ value: String, _ kind: Element.ValueKind = .string) -> Element {
        Element(name: name, value: value, valueKind: kind)
    }

    /// A valid CarePlan with one activity whose timing repeats every day.
    private func carePlan(period: Element = Element(name: "period", value: "1", valueKind: .number)) -> Element {
        let repeatElement = Element(name: "repeat", children: [period, value("periodUnit", "d")])
        let timing = Element(name: "scheduledTiming", children: [repeatElement])
        let detail = Element(name: "detail", children: [value("status", "scheduled"), timing])
        let subject = Element(name: "subject", children: [value("reference", "Patient/p1")])
        return Element.resource("CarePlan", children: [
            value("id", "cp1"), value("status", "active"), value("intent", "plan"), subject,
            Element(name: "activity", children: [detail]),
        ])
    }

    private func issues(_ resource: Element, options: ValidationOptions = ValidationOptions()) -> [ValidationIssue] {
        StructureValidator(options: options).validate(resource).issues
    }

    func testValidCarePlanHasNoIssues() {
        XCTAssertEqual(issues(carePlan()), [])
    }

    func testWrongTypeAtExactLocation() throws {
        let found = issues(carePlan(period: value("period", "1")))  // a JSON string for a decimal
        let issue = try XCTUnwrap(found.first)
        XCTAssertEqual(found.count, 1)
        XCTAssertEqual(issue.expression, "CarePlan.activity[0].detail.scheduledTiming.repeat.period")
        XCTAssertEqual(issue.severity, .error)
        XCTAssertTrue(issue.diagnostics.contains("JSON number"), issue.diagnostics)
        // XML has only text: the same value is fine there.
        XCTAssertEqual(issues(carePlan(period: value("period", "1")), options: ValidationOptions(checkJSONValueKinds: false)), [])
    }

    func testUnknownElementStrictAndLenient() throws {
        var plan = carePlan()
        plan.children.append(value("colour", "blue"))
        let strict = try XCTUnwrap(issues(plan).first)
        XCTAssertEqual(strict.severity, .error)
        XCTAssertEqual(strict.expression, "CarePlan.colour")
        let lenient = try XCTUnwrap(issues(plan, options: ValidationOptions(strict: false)).first)
        XCTAssertEqual(lenient.severity, .warning)
        XCTAssertFalse(StructureValidator(options: ValidationOptions(strict: false)).validate(plan).hasErrors)
    }

    func testMissingRequiredElement() throws {
        var plan = carePlan()
        plan.children.removeAll { $0.name == "intent" }
        let issue = try XCTUnwrap(issues(plan).first)
        XCTAssertEqual(issue.expression, "CarePlan.intent")
        XCTAssertEqual(issue.code, .required)
        XCTAssertTrue(issue.diagnostics.contains("minimum required = 1"), issue.diagnostics)
    }

    func testBadRequiredCode() throws {
        var plan = carePlan()
        plan.children[1] = value("status", "finished")
        let issue = try XCTUnwrap(issues(plan).first)
        XCTAssertEqual(issue.expression, "CarePlan.status")
        XCTAssertEqual(issue.code, .codeInvalid)
    }

    func testMalformedDate() throws {
        let patient = Element.resource("Patient", children: [
            value("birthDate", "1970-02-30"),
            Element(name: "name", children: [value("family", "Chalmers")]),
            Element(name: "name", children: [
                value("family", "Windsor"),
                Element(name: "period", children: [value("start", "2001-13-01")]),
            ]),
        ])
        let found = issues(patient)
        XCTAssertEqual(found.map(\.expression), ["Patient.birthDate", "Patient.name[1].period.start"])
        XCTAssertTrue(found.allSatisfy { $0.severity == .error })
    }

    func testChoiceMisuse() throws {
        let observation = Element.resource("Observation", children: [
            value("status", "final"),
            Element(name: "code", children: [value("text", "weight")]),
            Element(name: "valueQuantity", children: [value("value", "70", .number)]),
            value("valueString", "seventy"),
            value("effectiveMoney", "3"),
        ])
        let found = issues(observation)
        XCTAssertEqual(found.map(\.expression), ["Observation.valueString", "Observation.effectiveMoney"])
        XCTAssertTrue(found[1].diagnostics.contains("not an allowed type"), found[1].diagnostics)
    }

    func testCardinalityMaximum() {
        let patient = Element.resource("Patient", children: [value("gender", "male"), value("gender", "female")])
        XCTAssertEqual(issues(patient).map(\.expression), ["Patient.gender"])
    }

    func testReferenceFormats() {
        for good in ["Patient/1", "Patient/1/_history/2", "http://example.org/fhir/Patient/1", "#p1",
                     "urn:uuid:53fefa32-fcbb-4ff8-8a92-55ee120877b7", "urn:oid:1.2.3"] {
            XCTAssertNoThrow(try ReferenceFormat.parse(good).get(), good)
        }
        for bad in ["Patient", "Patient/", "Fish/1", "Patient/a b", "urn:uuid:nope", "Patient/1/2"] {
            XCTAssertThrowsError(try ReferenceFormat.parse(bad).get(), bad)
        }
        let observation = Element.resource("Observation", children: [
            value("status", "final"),
            Element(name: "code", children: [value("text", "x")]),
            Element(name: "subject", children: [value("reference", "Fish/1")]),
            Element(name: "performer", children: [value("reference", "Practitioner?identifier=1")]),
        ])
        let found = issues(observation)
        XCTAssertEqual(found.map(\.expression), ["Observation.subject.reference", "Observation.performer[0].reference"])
        // Reference syntax is a warning (as the reference validator has it); so is a conditional reference
        // outside a transaction.
        XCTAssertEqual(found.map(\.severity), [.warning, .warning])
    }

    func testContainedAndBundleRecursion() {
        // A contained resource has an id and is referred to (dom-3): only its bad gender is an issue.
        let contained = Element(name: "contained", resourceType: "Patient", children: [value("id", "p1"), value("gender", "robot")])
        let plan = carePlan()
        var withContained = plan
        withContained.children.insert(contained, at: 1)
        if let subject = withContained.children.firstIndex(where: { $0.name == "subject" }) {
            withContained.children[subject] = Element(name: "subject", children: [value("reference", "#p1")])
        }
        XCTAssertEqual(issues(withContained).map(\.expression), ["CarePlan.contained[0].gender"])

        let entry = Element(name: "entry", children: [
            value("fullUrl", "urn:uuid:53fefa32-fcbb-4ff8-8a92-55ee120877b7"),
            Element(name: "resource", resourceType: "Patient", children: [value("birthDate", "1970-1-1")]),
        ])
        let bundle = Element.resource("Bundle", children: [value("type", "collection"), entry])
        XCTAssertEqual(issues(bundle).map(\.expression), ["Bundle.entry[0].resource.birthDate"])
    }

    func testResourceTypes() {
        XCTAssertEqual(issues(Element.resource("Fish")).map(\.diagnostics), ["unknown resource type 'Fish'"])
        XCTAssertEqual(issues(Element.resource("DomainResource")).count, 1)
    }

    func testPrimitiveWithoutValueOrExtension() {
        let patient = Element.resource("Patient", children: [Element(name: "birthDate")])
        XCTAssertEqual(issues(patient).map(\.expression), ["Patient.birthDate"])
        let withExtension = Element.resource("Patient", children: [Element(name: "birthDate", children: [
            Element(name: "extension", children: [
                value("url", "http://hl7.org/fhir/StructureDefinition/data-absent-reason"), value("valueCode", "unknown"),
            ]),
        ])])
        XCTAssertEqual(issues(withExtension), [])
    }

    func testNarrativeMustBeXHTMLWithContentAndTheNamespace() {
        func patient(_ div: String) -> Element {
            Element.resource("Patient", children: [Element(name: "text", children: [
                value("status", "generated"), value("div", div),
            ])])
        }
        XCTAssertEqual(issues(patient("<div xmlns=\"http://www.w3.org/1999/xhtml\"><p>Hi &amp; bye</p></div>")), [])
        XCTAssertEqual(issues(patient("<div xmlns=\"http://www.w3.org/1999/xhtml\">&reg;</div>")).count, 1)
        XCTAssertEqual(issues(patient("<div xmlns=\"http://www.w3.org/1999/xhtml\"><p></p></div>")).count, 1)
        XCTAssertEqual(issues(patient("<div><a href=\"urn:uuid:1\">x</a></div>")).count, 1)
        XCTAssertEqual(issues(patient("<div><script>alert(1)</script></div>")).count, 1)
    }

    func testOperationOutcomeAndText() throws {
        var plan = carePlan()
        plan.children.append(value("colour", "blue"))
        let report = StructureValidator().validate(plan)
        let outcome = report.operationOutcome()
        XCTAssertEqual(outcome.resourceType, "OperationOutcome")
        let issue = try XCTUnwrap(outcome.child(named: "issue"))
        XCTAssertEqual(issue.childValue("severity"), "error")
        XCTAssertEqual(issue.childValue("code"), "structure")
        XCTAssertEqual(issue.childValue("expression"), "CarePlan.colour")
        XCTAssertEqual(StructureValidator().validate(outcome).issues, [], "the outcome is itself valid")
        XCTAssertEqual(StructureValidator().validate(ValidationReport().operationOutcome()).issues, [])
        XCTAssertTrue(report.textReport(source: "plan.json").hasPrefix("plan.json: error CarePlan.colour: "))
    }

    func testJSONAndXMLGiveTheSameIssues() throws {
        let json = #"""
            {"resourceType":"CarePlan","status":"finished","intent":"plan","colour":"blue",
             "subject":{"reference":"Patient/p1"},
             "activity":[{"detail":{"status":"scheduled","scheduledTiming":{"repeat":{"period":1,"periodUnit":"d",
               "boundsPeriod":{"start":"2024-02-30"}}}}}]}
            """#
        let xml = #"""
            <CarePlan xmlns="http://hl7.org/fhir"><status value="finished"/><intent value="plan"/><colour value="blue"/>
              <subject><reference value="Patient/p1"/></subject>
              <activity><detail><status value="scheduled"/><scheduledTiming><repeat>
                <boundsPeriod><start value="2024-02-30"/></boundsPeriod><period value="1"/><periodUnit value="d"/>
              </repeat></scheduledTiming></detail></activity></CarePlan>
            """#
        let fromJSON = StructureValidator().validate(try FHIRJSON.read(Data(json.utf8))).issues
        let fromXML = StructureValidator(options: ValidationOptions(checkJSONValueKinds: false))
            .validate(try FHIRXML.read(Data(xml.utf8))).issues
        XCTAssertEqual(Set(fromJSON), Set(fromXML))
        XCTAssertEqual(Set(fromJSON.map(\.expression)), [
            "CarePlan.status", "CarePlan.colour",
            "CarePlan.activity[0].detail.scheduledTiming.repeat.boundsPeriod.start",
        ])
    }
}
