import FHIR
import Foundation

/// The workloads of `caregate-bench fhirpath`: mapping-style FHIRPath expressions over Observations,
/// each with the same selection hand-written in Swift over the element tree, the baseline it is timed
/// beside. Both sides must select the same items.
public enum FHIRPathBenchmark {
    /// One workload: the FHIRPath text and the hand-written equivalent (which returns the selected items).
    public struct Workload: Sendable {
        public let expression: String
        public let baseline: @Sendable (Element) -> [String]
    }

    public static let workloads: [Workload] = [
        Workload(expression: "Observation.where(code.coding.where(system='http://loinc.org' and code='29463-7').exists()).value.ofType(Quantity).value") { obs in
            guard obs.children(named: "code").contains(where: { code in
                code.children(named: "coding").contains { $0.childValue("system") == "http://loinc.org" && $0.childValue("code") == "29463-7" }
            }) else { return [] }
            return obs.children(named: "valueQuantity").compactMap { $0.childValue("value") }
        },
        Workload(expression: "Observation.code.coding.where(system = 'http://loinc.org').code.first()") { obs in
            for code in obs.children(named: "code") {
                for coding in code.children(named: "coding") where coding.childValue("system") == "http://loinc.org" {
                    if let value = coding.childValue("code") { return [value] }
                }
            }
            return []
        },
        Workload(expression: "Observation.component.where(code.coding.code = '8480-6').value.ofType(Quantity).value") { obs in
            obs.children(named: "component").filter { component in
                component.children(named: "code").contains { $0.children(named: "coding").contains { $0.childValue("code") == "8480-6" } }
            }.flatMap { $0.children(named: "valueQuantity").compactMap { $0.childValue("value") } }
        },
        Workload(expression: "Observation.effective.ofType(dateTime)") { obs in
            obs.children(named: "effectiveDateTime").compactMap(\.value)
        },
        Workload(expression: "Observation.subject.reference") { obs in
            obs.children(named: "subject").compactMap { $0.childValue("reference") }
        },
        Workload(expression: "Observation.value.ofType(Quantity).where(system = %ucum).code") { obs in
            obs.children(named: "valueQuantity").filter { $0.childValue("system") == "http://unitsofmeasure.org" }.compactMap { $0.childValue("code") }
        },
        Workload(expression: "Observation.category.coding.where(system = 'http://terminology.hl7.org/CodeSystem/observation-category').code.first() = 'vital-signs'") { obs in
            let codes = obs.children(named: "category").flatMap { $0.children(named: "coding") }
                .filter { $0.childValue("system") == "http://terminology.hl7.org/CodeSystem/observation-category" }
                .compactMap { $0.childValue("code") }
            return codes.first.map { [$0 == "vital-signs" ? "true" : "false"] } ?? []
        },
        Workload(expression: "Observation.value.ofType(Quantity).value > 100 and Observation.status = 'final'") { obs in
            guard let text = obs.child(named: "valueQuantity")?.childValue("value"), let value = Decimal(string: text) else {
                return obs.childValue("status") == "final" ? [] : ["false"]
            }
            return [(value > 100 && obs.childValue("status") == "final") ? "true" : "false"]
        },
    ]
}
