import FHIR
import Foundation
import XCTest

/// The R4 rules for contained resources (https://hl7.org/fhir/R4/references.html#contained and the
/// DomainResource constraints dom-2 to dom-5), each from the specification's text, valid and invalid.
final class ContainedRulesTests: XCTestCase {
    private func errors(_ json: String, validateContained: Bool = true) throws -> [ValidationIssue] {
        var options = ValidationOptions()
        options.validateContained = validateContained
        return StructureValidator(options: options).validate(try FHIRJSON.read(Data(json.utf8))).errors
    }

    private let containedPatient = #"{"resourceType":"Patient","id":"p1","name":[{"family":"Chalmers"}]}"#

    // "it SHALL be referred to from elsewhere in the resource": by a Reference...
    func testAContainedResourceReferredToByAReferenceIsValid() throws {
        XCTAssertEqual(try errors(#"""
            {"resourceType":"Observation","contained":[\#(containedPatient)],"status":"final","code":{"text":"x"},
             "subject":{"reference":"#p1"}}
            """#), [])
    }

    // ...by a canonical (a contained ValueSet an item binds to)...
    func testAContainedResourceReferredToByACanonicalIsValid() throws {
        XCTAssertEqual(try errors(#"""
            {"resourceType":"Questionnaire","status":"draft",
             "contained":[{"resourceType":"ValueSet","id":"vs","status":"draft"}],
             "item":[{"linkId":"1","type":"choice","answerValueSet":"#vs"}]}
            """#), [])
    }

    // ...including from a primitive's own extension (a ValueSet naming its contained code system through
    // the valueset-system extension on compose.include.system).
    func testAContainedResourceReferredToFromAPrimitivesExtensionIsValid() throws {
        XCTAssertEqual(try errors(#"""
            {"resourceType":"ValueSet","status":"draft","url":"http://example.org/ValueSet/v",
             "contained":[{"resourceType":"CodeSystem","id":"cs","status":"draft","content":"complete",
               "url":"http://example.org/CodeSystem/cs"}],
             "compose":{"include":[{"system":"http://example.org/CodeSystem/cs","_system":{"extension":[
               {"url":"http://hl7.org/fhir/StructureDefinition/valueset-system","valueCanonical":"#cs"}]}}]}}
            """#), [])
    }

    // ...or from the narrative, as the reference validator counts it (an image or a link).
    func testAContainedResourceReferredToFromTheNarrativeIsValid() throws {
        XCTAssertEqual(try errors(#"""
            {"resourceType":"Observation","status":"final","code":{"text":"x"},
             "text":{"status":"generated","div":"<div xmlns=\"http://www.w3.org/1999/xhtml\"><a href=\"#p1\">patient</a></div>"},
             "contained":[\#(containedPatient)]}
            """#), [])
    }

    // "or SHALL refer to the containing resource" (a reference to "#").
    func testAContainedResourceReferringToItsContainerIsValid() throws {
        XCTAssertEqual(try errors(#"""
            {"resourceType":"Observation","status":"final","code":{"text":"x"},
             "contained":[{"resourceType":"Provenance","id":"prov","recorded":"2026-11-02T08:00:00Z",
                           "target":[{"reference":"#"}],"agent":[{"who":{"display":"a nurse"}}]}]}
            """#), [])
    }

    func testAContainedResourceNothingRefersToBreaksDom3() throws {
        let found = try errors(#"""
            {"resourceType":"Observation","contained":[\#(containedPatient)],"status":"final","code":{"text":"x"},
             "subject":{"reference":"Patient/other"}}
            """#)
        XCTAssertEqual(found.map(\.expression), ["Observation.contained[0]"])
        XCTAssertTrue(found.first?.diagnostics.contains("dom-3") ?? false, "\(found)")
        // Where contained resources are not validated at all, they are not judged either (as the reference does).
        XCTAssertEqual(try errors(#"""
            {"resourceType":"Observation","contained":[\#(containedPatient)],"status":"final","code":{"text":"x"}}
            """#, validateContained: false), [])
    }

    // A contained resource is reachable only by its id.
    func testAContainedResourceWithoutAnIdIsAnError() throws {
        let found = try errors(#"""
            {"resourceType":"Observation","contained":[{"resourceType":"Patient","active":true}],"status":"final","code":{"text":"x"}}
            """#)
        XCTAssertEqual(found.map(\.expression), ["Observation.contained[0]"])
        XCTAssertTrue(found.first?.diagnostics.contains("must have an id") ?? false, "\(found)")
    }

    // dom-2: "If the resource is contained in another resource, it SHALL NOT contain nested Resources".
    func testNestedContainedResourcesBreakDom2() throws {
        let found = try errors(#"""
            {"resourceType":"Observation","status":"final","code":{"text":"x"},"subject":{"reference":"#p1"},
             "contained":[{"resourceType":"Patient","id":"p1","contained":[{"resourceType":"Organization","id":"o1"}],
                           "managingOrganization":{"reference":"#o1"}}]}
            """#)
        XCTAssertTrue(found.contains { $0.diagnostics.contains("dom-2") }, "\(found)")
    }

    // dom-4: a contained resource "SHALL NOT have a meta.versionId or a meta.lastUpdated"; dom-5: "SHALL
    // NOT have a security label". (R4 dropped dom-1, which forbade a contained resource's narrative.)
    func testAContainedResourceWithAVersionOrSecurityLabelBreaksDom4AndDom5() throws {
        let versioned = try errors(#"""
            {"resourceType":"Observation","status":"final","code":{"text":"x"},"subject":{"reference":"#p1"},
             "contained":[{"resourceType":"Patient","id":"p1","meta":{"versionId":"2"}}]}
            """#)
        XCTAssertTrue(versioned.contains { $0.diagnostics.contains("dom-4") }, "\(versioned)")
        let labelled = try errors(#"""
            {"resourceType":"Observation","status":"final","code":{"text":"x"},"subject":{"reference":"#p1"},
             "contained":[{"resourceType":"Patient","id":"p1","meta":{"security":[{"code":"R"}]}}]}
            """#)
        XCTAssertTrue(labelled.contains { $0.diagnostics.contains("dom-5") }, "\(labelled)")
    }
}

/// Invariants that follow references with resolve(): the engine resolves contained resources (and a
/// Bundle's entries); what it cannot find is not judged.
final class ResolvingInvariantTests: XCTestCase {
    private func errors(_ json: String) throws -> [ValidationIssue] {
        StructureValidator().validate(try FHIRJSON.read(Data(json.utf8))).errors
    }

    private func careTeam(member: String) -> String {
        #"""
        {"resourceType":"CareTeam","contained":[{"resourceType":"Practitioner","id":"dr"},{"resourceType":"Organization","id":"org","name":"Clinic"}],
         "participant":[{"member":{"reference":"\#(member)"},"onBehalfOf":{"reference":"#org"}}]}
        """#
    }

    // ctm-1: "CareTeam.participant.onBehalfOf can only be populated when CareTeam.participant.member is a Practitioner".
    func testCtm1ResolvesTheMember() throws {
        XCTAssertEqual(try errors(careTeam(member: "#dr")), [])
        XCTAssertTrue(try errors(careTeam(member: "#org")).contains { $0.diagnostics.contains("ctm-1") })
        // A member that cannot be resolved here is not judged (nor is the Practitioner then referred to).
        XCTAssertFalse(try errors(careTeam(member: "Practitioner/elsewhere")).contains { $0.diagnostics.contains("ctm-1") })
    }
}
