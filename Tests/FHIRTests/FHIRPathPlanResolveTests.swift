import Foundation
import XCTest
import FHIR
@testable import FHIRPath

/// Plans of what the mappings' conditions and fields read besides paths: `resolve()` through the
/// environment's resolver, `%resource`, `%rootResource` and `%context`, `is`, `startsWith()` and
/// `not()`. Each expression is evaluated with its plan and by the tree walk alone (a `trace` receiver
/// keeps plans out), with and without tracked paths: the same values, locations and errors.
final class FHIRPathPlanResolveTests: XCTestCase {
    private static let patient = Element.resource("Patient", children: [
        Element(name: "id", value: "p1"), Element(name: "gender", value: "female"),
    ])
    private static let medication = Element.resource("MedicationRequest", children: [
        Element(name: "id", value: "m1"), Element(name: "status", value: "active"),
        Element(name: "subject", children: [Element(name: "reference", value: "Patient/p1")]),
    ])
    /// What the importer's index would find: by `Type/id` only.
    private static let resolver: @Sendable (String, Element?) -> Element? = { reference, _ in
        switch reference {
        case "Patient/p1": return patient
        case "MedicationRequest/m1": return medication
        default: return nil
        }
    }

    private func observation(subjects: [String], status: String = "final") -> Element {
        Element.resource("Observation", children: [
            Element(name: "id", value: "o1"),
            Element(name: "contained", resourceType: "Patient", children: [Element(name: "id", value: "c1")], jsonArrayItem: true),
            Element(name: "status", value: status),
            Element(name: "period", children: [Element(name: "start", value: "2024-01-02")]),
        ] + subjects.map { Element(name: "subject", children: [Element(name: "reference", value: $0)]) } + [
            Element(name: "basedOn", children: [Element(name: "reference", value: "MedicationRequest/m1")], jsonArrayItem: true),
            Element(name: "basedOn", children: [Element(name: "reference", value: "MedicationRequest/none")], jsonArrayItem: true),
            Element(name: "basedOn", children: [Element(name: "display", value: "no reference")], jsonArrayItem: true),
            Element(name: "valueQuantity", children: [Element(name: "value", value: "1", valueKind: .number)]),
        ])
    }

    private static let expressions = [
        "subject.resolve()", "subject.resolve() is Patient", "subject.resolve() is Resource", "subject.resolve() is Observation",
        "subject.reference.startsWith('#').not()", "subject.reference.startsWith('Patient/')", "status.startsWith('fi')",
        "value.startsWith('1')", "basedOn.resolve()", "basedOn.resolve().ofType(MedicationRequest).status",
        "basedOn.resolve().ofType(MedicationRequest).subject.resolve().gender", "basedOn.resolve().ofType(Patient).empty()",
        "basedOn.where(resolve().ofType(MedicationRequest).exists()).reference", "basedOn.resolve().where(status = 'active').exists()",
        "%resource.period.start", "%resource.status", "%rootResource.status", "%context.status", "%resource", "status.exists().not()",
        "subject.exists() and subject.reference.startsWith('#').not() and (subject.resolve() is Patient or subject.reference.startsWith('Patient/'))",
        "(status = 'final').not() or %resource.subject.resolve().gender = 'female'", "status.not()", "basedOn.reference.startsWith('M')",
        "where(%resource.basedOn.where(reference = 'MedicationRequest/m1').empty()).status",
    ]

    private func evaluated(_ text: String, on resource: Element, root: Element? = nil, tracked: Bool, planned: Bool,
                           variables: [String: [FHIRPathValue]] = [:]) -> String {
        var environment = FHIRPathEnvironment(variables: variables, resolveReference: Self.resolver, tracksPaths: tracked)
        if !planned { environment.trace = { _, _ in } }
        do {
            let focus = FHIRPathValue.element(FHIRPathElementNode(resource: resource, path: tracked ? resource.resourceType : nil))
            let values = try FHIRPathExpression(text).evaluate(context: [focus], resource: resource, rootResource: root ?? resource,
                                                             environment: environment)
            return "[" + values.map { value in
                guard case .element(let node) = value else { return "\(value.typeName):\(value)" }
                return "\(node.typeName ?? "?"):\(value)@\(node.path ?? "-")"
            }.joined(separator: ", ") + "]"
        } catch {
            return "error: \(error)"
        }
    }

    func testTheMappingsConditionsHavePlans() throws {
        for text in Self.expressions where !text.hasPrefix("status.not()") {
            XCTAssertNotNil(try FHIRPathExpression(text).plan, text)
        }
        XCTAssertTrue(try XCTUnwrap(FHIRPathExpression("%resource.period.start").plan).needsInputs)
        XCTAssertFalse(try XCTUnwrap(FHIRPathExpression("subject.reference").plan).needsInputs)
    }

    func testPlansGiveWhatTheTreeWalkGives() {
        let subjects: [[String]] = [["Patient/p1"], ["#c1"], ["Patient/none"], [], ["Patient/p1", "Patient/p1"], ["MedicationRequest/m1"]]
        for subject in subjects {
            let resource = observation(subjects: subject)
            for text in Self.expressions {
                for tracked in [false, true] {
                    XCTAssertEqual(evaluated(text, on: resource, tracked: tracked, planned: true),
                                   evaluated(text, on: resource, tracked: tracked, planned: false), "\(text) on \(subject), tracked: \(tracked)")
                }
            }
        }
        let resource = observation(subjects: ["Patient/p1"])
        XCTAssertEqual(evaluated("subject.resolve() is Patient", on: resource, tracked: true, planned: true), "[boolean:true]")
        XCTAssertEqual(evaluated("basedOn.resolve().status", on: resource, tracked: true, planned: true),
                       "[code:active@MedicationRequest.status]")
        XCTAssertEqual(evaluated("%resource.status", on: resource, tracked: true, planned: true), "[code:final@-]")
        XCTAssertTrue(evaluated("status.startsWith('x') or subject.resolve() is Patient", on: observation(subjects: ["Patient/p1", "Patient/p1"]),
                                tracked: false, planned: true).hasPrefix("error"))
    }

    func testContainedReferencesBundlesAndRedefinedVariablesAreTheTreeWalks() {
        let resource = observation(subjects: ["#c1"])
        XCTAssertEqual(evaluated("subject.resolve().id", on: resource, tracked: false, planned: true), "[id:c1@-]")
        let bundle = Element.resource("Bundle", children: [
            Element(name: "entry", children: [
                Element(name: "fullUrl", value: "Patient/p1"),
                Element(name: "resource", resourceType: "Patient", children: [Element(name: "id", value: "in-bundle")]),
            ], jsonArrayItem: true),
        ])
        let inBundle = observation(subjects: ["Patient/p1"])
        for text in ["subject.resolve().id", "%rootResource.entry.count()", "%resource.status"] {
            XCTAssertEqual(evaluated(text, on: inBundle, root: bundle, tracked: true, planned: true),
                           evaluated(text, on: inBundle, root: bundle, tracked: true, planned: false), text)
        }
        let redefined: [String: [FHIRPathValue]] = ["resource": [.string("mine")], "context": [.string("ctx")]]
        for text in ["%resource", "%context", "%resource.status", "%context.startsWith('c')"] {
            XCTAssertEqual(evaluated(text, on: inBundle, tracked: false, planned: true, variables: redefined),
                           evaluated(text, on: inBundle, tracked: false, planned: false, variables: redefined), text)
        }
    }
}
