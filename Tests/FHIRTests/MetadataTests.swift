import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// The generated R4 metadata: counts, lookups, choice resolution, derivation, representation.
final class MetadataTests: XCTestCase {
    private let meta = FHIRMetadata.r4

    func testResourceTypeCount() {
        let count = meta.resourceTypes.count
        print("metadata: \(count) concrete resource types, \(meta.typeNames.count) types")
        XCTAssertEqual(count, 146)
        XCTAssertTrue(meta.isResourceType("CarePlan"))
        XCTAssertTrue(meta.isResourceType("Bundle"))
        XCTAssertFalse(meta.isResourceType("DomainResource"), "abstract")
        XCTAssertFalse(meta.isResourceType("Quantity"), "datatype")
        XCTAssertEqual(meta.type(named: "string")?.kind, .primitive)
        XCTAssertEqual(meta.type(named: "Timing")?.kind, .complex)
    }

    func testCarePlanStatusRequiredCodes() throws {
        let status = try XCTUnwrap(meta.child("status", of: "CarePlan"))
        let binding = try XCTUnwrap(status.info.requiredBinding)
        XCTAssertEqual(binding.valueSet, "http://hl7.org/fhir/ValueSet/request-status")
        XCTAssertEqual(binding.codes, ["draft", "active", "on-hold", "revoked", "completed", "entered-in-error", "unknown"])
        XCTAssertEqual(status.info.min, 1)
        XCTAssertEqual(status.info.max, 1)
        XCTAssertTrue(status.info.isModifier)
        XCTAssertEqual(status.type, "code")
    }

    func testObservationChoiceResolution() throws {
        let quantity = try XCTUnwrap(meta.child("valueQuantity", of: "Observation"))
        XCTAssertEqual(quantity.type, "Quantity")
        XCTAssertEqual(quantity.info.path, "Observation.value[x]")
        XCTAssertTrue(quantity.info.isChoice)
        XCTAssertEqual(meta.child("valueString", of: "Observation")?.type, "string")
        XCTAssertEqual(meta.child("valueDateTime", of: "Observation")?.type, "dateTime")
        XCTAssertEqual(meta.child("valueCodeableConcept", of: "Observation")?.type, "CodeableConcept")
        XCTAssertEqual(meta.child("effectivePeriod", of: "Observation")?.type, "Period")
        XCTAssertEqual(meta.child("valueReference", of: "Extension")?.type, "Reference")
        XCTAssertNil(meta.child("valueMoney", of: "Observation"), "Money is not an Observation.value type")
        XCTAssertNil(meta.child("value", of: "Observation"), "a choice needs its type suffix")
        XCTAssertEqual(meta.element(named: "value", of: "Observation")?.path, "Observation.value[x]")
    }

    func testBackboneAndContentReference() throws {
        let activity = try XCTUnwrap(meta.child("activity", of: "CarePlan"))
        XCTAssertEqual(activity.type, "CarePlan.activity")
        let detail = try XCTUnwrap(meta.child("detail", of: activity.type))
        XCTAssertEqual(detail.type, "CarePlan.activity.detail")
        XCTAssertEqual(meta.child("scheduledTiming", of: detail.type)?.type, "Timing")

        let item = try XCTUnwrap(meta.child("item", of: "Questionnaire"))
        XCTAssertEqual(item.type, "Questionnaire.item")
        let nested = try XCTUnwrap(meta.child("item", of: item.type))
        XCTAssertEqual(nested.type, "Questionnaire.item", "contentReference #Questionnaire.item")
        XCTAssertNil(nested.info.max)
        XCTAssertNotNil(meta.child("linkId", of: nested.type))
    }

    func testResourceTypedElements() {
        XCTAssertEqual(meta.child("contained", of: "CarePlan")?.type, "Resource")
        XCTAssertEqual(meta.child("resource", of: "Bundle.entry")?.type, "Resource")
        XCTAssertEqual(meta.child("id", of: "Patient")?.type, "id")
        XCTAssertEqual(meta.child("id", of: "Quantity")?.type, "string")
    }

    func testTypesKnowWhatTheyDeriveFrom() {
        XCTAssertTrue(meta.isType("Age", derivedFrom: "Quantity"))
        XCTAssertTrue(meta.isType("Age", derivedFrom: "Element"))
        XCTAssertTrue(meta.isType("Patient", derivedFrom: "DomainResource"))
        XCTAssertTrue(meta.isType("Patient", derivedFrom: "Resource"))
        XCTAssertTrue(meta.isType("Bundle", derivedFrom: "Resource"))
        XCTAssertFalse(meta.isType("Bundle", derivedFrom: "DomainResource"))
        XCTAssertFalse(meta.isType("Quantity", derivedFrom: "Age"))
        XCTAssertEqual(meta.type(named: "Age")?.baseType, "Quantity")
    }

    func testRepresentation() throws {
        XCTAssertEqual(meta.child("div", of: "Narrative")?.info.representation, .xhtml)
        XCTAssertEqual(meta.child("div", of: "Narrative")?.type, "xhtml")
        let url = try XCTUnwrap(meta.child("url", of: "Extension"))
        XCTAssertEqual(url.info.representation, .xmlAttribute)
        XCTAssertEqual(url.type, "uri")
        XCTAssertEqual(meta.child("id", of: "Coding")?.info.representation, .xmlAttribute)
        XCTAssertEqual(meta.child("code", of: "Coding")?.info.representation, .element)
    }

    func testPrimitiveContexts() {
        let children = meta.elements(of: "date").map(\.name)
        XCTAssertEqual(children, ["id", "extension"])
        XCTAssertEqual(meta.child("extension", of: "string")?.type, "Extension")
        XCTAssertEqual(meta.primitiveType(of: "positiveInt"), .positiveInt)
        XCTAssertNil(meta.primitiveType(of: "Quantity"))
    }
}
