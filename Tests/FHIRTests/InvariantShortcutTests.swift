import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation

/// ``InvariantShortcut`` answers per-1, obs-6, obs-7 and qty-3 from an element's children: wherever it
/// answers, the answer must be the one validation gave before it (the quick reading, else the
/// evaluator), so that reports stay identical; where the data does not decide, it must decline.
final class InvariantShortcutTests: XCTestCase {
    private let metadata = FHIRMetadata.r4
    private let environment = FHIRPathEnvironment(metadata: .r4, trustsSingleCardinality: true)

    /// The compiled invariant `key` of the R4 catalog, which must have a shortcut.
    private func compiled(_ key: String) throws -> InvariantCatalog.Compiled {
        let types = ["per": "Period", "qty": "Quantity", "obs": "Observation", "con": "Condition", "org": "Organization",
                     "prr": "ServiceRequest", "bdl": "Bundle"]
        let found = InvariantCatalog.r4.invariants(forType: types[String(key.prefix(3))] ?? "")
            .first { $0.invariant.key == key }
        let compiled = try XCTUnwrap(found, "\(key) is not in the catalog")
        XCTAssertNotNil(compiled.shortcut, "\(key) has no shortcut")
        return compiled
    }

    /// Checks the shortcut against what validation evaluated before it, on `element` in `context`;
    /// returns the shortcut's answer.
    @discardableResult
    private func check(_ compiled: InvariantCatalog.Compiled, on element: Element, context: String,
                       file: StaticString = #filePath, line: UInt = #line) throws -> Bool? {
        guard let answer = compiled.shortcut?.truth(on: element) else { return nil }
        let expected: Bool
        if let quick = compiled.expression.quickTruth(on: element, context: context, metadata: metadata, trustsSingleCardinality: true) {
            expected = quick
        } else {
            let node = FHIRPathElementNode(element: element, typeName: context, context: context)
            let result = try compiled.expression.evaluate(
                context: [.element(node)], resource: element, rootResource: element, environment: environment)
            if result.count == 1, case .boolean(true) = result[0] { expected = true } else { expected = false }
        }
        XCTAssertEqual(answer, expected, "\(compiled.invariant.key) on \(element)", file: file, line: line)
        return answer
    }

    func testPeriodOrderAgreesWithTheEvaluator() throws {
        let per1 = try compiled("per-1")
        let values = [
            "2023", "2024", "2023-06", "2023-07", "2023-06-21", "2023-06-22", "2023-06-21T06:20:00Z", "2023-06-21T07:20:00Z",
            "2023-06-21T06:20:00+01:00", "2023-06-21T06:20:00-05:00", "2023-06-21T05:20:00-05:00", "2023-06-21T07:20:00+01:00",
            "2023-06-21T06:20:00.5Z", "2023-06-21T06:20:00.4Z", "2023-06-21T06:20:00.50Z", "2023-06-21T23:59:60Z",
            "2023-13-21", "2023-02-30", "2024-02-29", "2023-06-21T06:20:00", "2023-06-21T25:20:00Z", "abcd-ef-gh", "",
            "2023-06-21T06:20:00+14:00", "2023-06-21T06:20:00-00:00", "2023-06-21T06:20:00+00:00",
        ]
        var answered = 0
        for start in values {
            for end in values {
                let period = Element(name: "period", children: [Element(name: "start", value: start), Element(name: "end", value: end)])
                if try check(per1, on: period, context: "Period") != nil { answered += 1 }
            }
        }
        XCTAssertGreaterThan(answered, 30)  // the pairs written alike
        // Written alike: the order of their text, which is the order of the instants.
        let alike = Element(name: "period", children: [Element(name: "start", value: "2023-06-21T07:20:00-05:00"),
                                                       Element(name: "end", value: "2023-06-21T06:20:00-05:00")])
        XCTAssertEqual(try check(per1, on: alike, context: "Period"), false)
        // A missing or repeated bound, or one with only an extension.
        let extensionOnly = Element(name: "end", children: [Element(name: "extension", children: [Element(name: "url", value: "http://example.org")])])
        for children in [
            [Element(name: "start", value: "2023")], [Element(name: "end", value: "2023")], [],
            [Element(name: "start", value: "2023"), Element(name: "start", value: "2022"), Element(name: "end", value: "2022")],
            [Element(name: "start", value: "2023"), extensionOnly],
        ] {
            try check(per1, on: Element(name: "period", children: children), context: "Period")
        }
        XCTAssertNil(per1.shortcut?.truth(on: Element(name: "period", children: [Element(name: "start", value: "2023"), extensionOnly])))
    }

    func testObservationAndQuantityShortcutsAgreeWithTheEvaluator() throws {
        let obs6 = try compiled("obs-6"), obs7 = try compiled("obs-7"), qty3 = try compiled("qty-3")
        let code = Element(name: "code", children: [Element(name: "coding", children: [
            Element(name: "system", value: "http://loinc.org"), Element(name: "code", value: "8867-4")])])
        let value = Element(name: "valueQuantity", children: [Element(name: "value", value: "60", valueKind: .number)])
        let absent = Element(name: "dataAbsentReason", children: [Element(name: "text", value: "asked")])
        let component = Element(name: "component", children: [code, Element(name: "valueString", value: "x")])
        let parts: [[Element]] = [[], [value], [absent], [component], [value, absent], [value, component], [absent, component],
                                  [value, absent, component]]
        for extra in parts {
            let observation = Element(name: "Observation", resourceType: "Observation",
                                      children: [Element(name: "status", value: "final"), code] + extra)
            try check(obs6, on: observation, context: "Observation")
            try check(obs7, on: observation, context: "Observation")
        }
        for fields in [["value": "1"], ["code": "mg"], ["code": "mg", "system": "http://unitsofmeasure.org"], ["system": "http://unitsofmeasure.org"]] {
            let quantity = Element(name: "valueQuantity", children: fields.sorted { $0.key < $1.key }.map { Element(name: $0.key, value: $0.value) })
            try check(qty3, on: quantity, context: "Quantity")
        }
    }

    func testResourceShortcutsAgreeWithTheEvaluator() throws {
        let con4 = try compiled("con-4"), con5 = try compiled("con-5"), org1 = try compiled("org-1"), prr1 = try compiled("prr-1")
        let bdl2 = try compiled("bdl-2")
        func concept(_ system: String?, _ code: String?, twice: Bool = false) -> Element {
            let fields = [system.map { Element(name: "system", value: $0) }, code.map { Element(name: "code", value: $0) }].compactMap { $0 }
            return Element(name: "coding", children: twice ? fields + fields : fields)
        }
        let clinical = "http://terminology.hl7.org/CodeSystem/condition-clinical"
        let verification = "http://terminology.hl7.org/CodeSystem/condition-ver-status"
        let statuses: [[Element]] = [
            [], [Element(name: "clinicalStatus", children: [concept(clinical, "active")])],
            [Element(name: "clinicalStatus", children: [concept(clinical, "resolved")])],
        ]
        let verifications: [[Element]] = [
            [], [Element(name: "verificationStatus", children: [concept(verification, "confirmed")])],
            [Element(name: "verificationStatus", children: [concept(verification, "entered-in-error")])],
            [Element(name: "verificationStatus", children: [concept("http://example.org", "entered-in-error")])],
            [Element(name: "verificationStatus", children: [concept(verification, nil)])],
            [Element(name: "verificationStatus", children: [concept(verification, "confirmed", twice: true)])],
        ]
        let abatements: [[Element]] = [[], [Element(name: "abatementDateTime", value: "2020-01-01")], [Element(name: "abatementString", value: "gone")]]
        for status in statuses {
            for verified in verifications {
                for abatement in abatements {
                    let condition = Element(name: "Condition", resourceType: "Condition",
                                            children: status + verified + abatement + [Element(name: "subject", children: [Element(name: "reference", value: "Patient/1")])])
                    try check(con4, on: condition, context: "Condition")
                    try check(con5, on: condition, context: "Condition")
                }
            }
        }
        let extensionOnly = [Element(name: "extension", children: [Element(name: "url", value: "http://example.org")])]
        for children in [[], [Element(name: "name", value: "Clinic")], [Element(name: "name", children: extensionOnly)],
                         [Element(name: "identifier", children: [Element(name: "value", value: "1")])], [Element(name: "identifier")],
                         [Element(name: "active", value: "true", valueKind: .boolean)]] {
            try check(org1, on: Element(name: "Organization", resourceType: "Organization", children: children), context: "Organization")
        }
        let code = Element(name: "code", children: [Element(name: "text", value: "x")])
        let detail = Element(name: "orderDetail", children: [Element(name: "text", value: "y")])
        for children in [[], [code], [detail], [code, detail], [Element(name: "code"), detail]] {
            try check(prr1, on: Element(name: "ServiceRequest", resourceType: "ServiceRequest", children: children), context: "ServiceRequest")
        }
        let entry = Element(name: "entry", children: [Element(name: "fullUrl", value: "urn:uuid:1")])
        let searched = Element(name: "entry", children: [Element(name: "search", children: [Element(name: "mode", value: "match")])])
        for type in ["searchset", "transaction", "collection"] {
            for entries in [[], [entry], [entry, searched]] {
                let bundle = Element(name: "Bundle", resourceType: "Bundle", children: [Element(name: "type", value: type)] + entries)
                try check(bdl2, on: bundle, context: "Bundle")
            }
        }
    }
}
