import CareModel
import FHIR
import Foundation
import Yams

/// How an outcome the patient recorded becomes an R4 Observation: the export mapping (a YAML file with
/// `export: outcome`, beside the import mappings in Mappings/, checked by `caregate mappings validate`).
///
/// What the care model knows fixes most of the Observation (subject, effective time, values, basedOn);
/// the mapping says what it cannot know: status, category, the code of a task that kept none, the
/// identifier system, units in UCUM, what to do with values FHIR cannot hold, and the Provenance.
public struct ExportMapping: Sendable, Equatable {
    /// A coding written into the Observation.
    public struct Coding: Sendable, Equatable {
        public var system: String?
        public var code: String
        public var display: String?

        public init(system: String?, code: String, display: String? = nil) {
            self.system = system
            self.code = code
            self.display = display
        }
    }

    /// What to do with a value the Observation cannot carry.
    public enum Refusal: String, Sendable, Equatable, CaseIterable {
        /// The outcome goes to dead letters with the reason.
        case deadLetter = "dead-letter"
        /// Binary data as base64 text (valueString); a unit not in UCUM as the Quantity's `unit` text.
        case text
    }

    public var file: String
    /// `Observation.status` of an outcome the provider has no earlier version of (a first version, or one
    /// edited before any was sent); `amended` once it has, or may have, one; deletions `entered-in-error`.
    public var status: String = "final"
    public var categories: [Coding] = [Coding(system: ExportMapping.categorySystem, code: "survey", display: "Survey")]
    /// The code of an outcome whose task kept no FHIR code (else only the task's title, as text).
    public var code: Coding?
    /// The system of the identifier derived from the outcome's id.
    public var identifierSystem = "urn:caregate:outcome"
    /// App units to UCUM codes (`beats/min: /min`).
    public var units: [String: String] = [:]
    /// A unit neither UCUM nor in ``units``.
    public var unknownUnits: Refusal = .text
    /// Binary values.
    public var binary: Refusal = .deadLetter
    /// Whether each Observation comes with a Provenance (agent: the patient, and the app or device).
    public var provenance = true
    /// Whether the patient is the Observation's performer.
    public var performerIsPatient = true
    /// Whether an outcome that completes a care plan activity's task (every occurrence of a finite
    /// schedule done) also sets that activity's `detail.status` to `completed`, by a FHIRPath Patch of
    /// the CarePlan in the same transaction or batch Bundle.
    public var activityStatus = false

    public static let categorySystem = "http://terminology.hl7.org/CodeSystem/observation-category"

    public init(file: String) {
        self.file = file
    }
}

/// Reads an export mapping file, reporting every problem with its file:line:column.
struct ExportMappingParser {
    let file: String
    private(set) var problems: [MappingProblem] = []

    static let keys: Set<String> = [
        "export", "resource", "description", "status", "category", "code", "identifier-system", "units",
        "unknown-units", "binary", "provenance", "performer", "activity-status",
    ]
    static let codingKeys: Set<String> = ["system", "code", "display"]

    init(file: String) {
        self.file = file
    }

    /// Whether `root` is an export mapping (it has `export:`) rather than an import one.
    static func isExportMapping(_ root: Node?) -> Bool {
        root?.mapping?.keys.contains { $0.string == "export" } ?? false
    }

    mutating func parse(_ root: Node) -> ExportMapping? {
        guard let mapping = root.mapping else { return nil }
        var result = ExportMapping(file: file)
        let keys = checkedKeys(mapping, allowed: Self.keys, in: "an export mapping")
        if let export = keys["export"], export.string != EntityKind.outcome.rawValue {
            problems.append(MappingProblem(at: location(of: export), "`export:` takes `outcome` (outcomes are what goes back to the provider)"))
        }
        if let resource = keys["resource"] {
            if resource.string != "Observation" {
                problems.append(MappingProblem(at: location(of: resource), "an outcome is exported as an `Observation`, not '\(resource.string ?? "")'"))
            }
        } else {
            problems.append(MappingProblem(at: location(of: root), "missing `resource: Observation`"))
        }
        if let status = keys["status"] {
            let allowed = FHIRMetadata.r4.child("status", of: "Observation")?.info.requiredBinding?.codes ?? []
            if let text = status.string, allowed.contains(text) {
                result.status = text
            } else {
                problems.append(MappingProblem(at: location(of: status), "'\(status.string ?? "")' is not an Observation status (\(allowed.sorted().joined(separator: ", ")))"))
            }
        }
        if let category = keys["category"] {
            let nodes = category.sequence ?? [category]
            result.categories = nodes.compactMap { coding($0, defaultSystem: ExportMapping.categorySystem) }
        }
        if let code = keys["code"] { result.code = coding(code, defaultSystem: nil) }
        if let system = keys["identifier-system"] {
            if let text = system.string, Self.isAbsoluteURI(text) {
                result.identifierSystem = text
            } else {
                problems.append(MappingProblem(at: location(of: system), "`identifier-system:` must be an absolute URI (`urn:...`, `https://...`)"))
            }
        }
        if let units = keys["units"] {
            if let pairs = units.mapping {
                for (from, to) in pairs {
                    guard let appUnit = from.string, let ucum = to.string else { continue }
                    if !UCUM.recognizes(ucum) {
                        problems.append(MappingProblem(at: location(of: to), "'\(ucum)' is not a UCUM unit"))
                    }
                    result.units[appUnit] = ucum
                }
            } else {
                problems.append(MappingProblem(at: location(of: units), "`units:` maps app units to UCUM codes (`beats/min: /min`)"))
            }
        }
        if let node = keys["unknown-units"] { result.unknownUnits = refusal(node) ?? result.unknownUnits }
        if let node = keys["binary"] { result.binary = refusal(node) ?? result.binary }
        if let node = keys["provenance"] {
            if let flag = node.bool { result.provenance = flag } else { problems.append(MappingProblem(at: location(of: node), "`provenance:` is true or false")) }
        }
        if let node = keys["activity-status"] {
            if let flag = node.bool { result.activityStatus = flag } else { problems.append(MappingProblem(at: location(of: node), "`activity-status:` is true or false")) }
        }
        if let node = keys["performer"] {
            switch node.string {
            case "patient": result.performerIsPatient = true
            case "none": result.performerIsPatient = false
            default: problems.append(MappingProblem(at: location(of: node), "`performer:` is `patient` or `none`"))
            }
        }
        return problems.contains { $0.severity == .error } ? nil : result
    }

    private mutating func coding(_ node: Node, defaultSystem: String?) -> ExportMapping.Coding? {
        if let code = node.string { return ExportMapping.Coding(system: defaultSystem, code: code) }
        guard let mapping = node.mapping else {
            problems.append(MappingProblem(at: location(of: node), "a code is text, or a mapping with `system:`, `code:` and `display:`"))
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.codingKeys, in: "a code")
        guard let code = keys["code"]?.string, !code.isEmpty else {
            problems.append(MappingProblem(at: location(of: node), "a code needs `code:`"))
            return nil
        }
        let system = keys["system"]?.string
        if let system, !Self.isAbsoluteURI(system) {
            problems.append(MappingProblem(at: location(of: keys["system"]), "`system:` must be an absolute URI"))
        }
        return ExportMapping.Coding(system: system ?? defaultSystem, code: code, display: keys["display"]?.string)
    }

    private mutating func refusal(_ node: Node) -> ExportMapping.Refusal? {
        if let text = node.string, let value = ExportMapping.Refusal(rawValue: text) { return value }
        problems.append(MappingProblem(at: location(of: node), "takes \(ExportMapping.Refusal.allCases.map { "`\($0.rawValue)`" }.joined(separator: " or "))"))
        return nil
    }

    static func isAbsoluteURI(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex, !text.contains(" ") else { return false }
        return text[..<colon].allSatisfy { $0.isLetter || $0.isNumber || "+-.".contains($0) } && text[text.index(after: colon)...].count > 0
    }

    private mutating func checkedKeys(_ mapping: Node.Mapping, allowed: Set<String>, in what: String) -> [String: Node] {
        MappingParser.checkedKeys(mapping, allowed: allowed, in: what, file: file, problems: &problems)
    }

    private func location(of node: Node?) -> MappingLocation {
        MappingParser.location(of: node, file: file)
    }
}
