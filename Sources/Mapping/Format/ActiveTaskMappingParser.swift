import CareModel
import FHIR
import Foundation
import Yams

/// What can be wrong in an active-task mapping, each reported with its file:line:column (the tests and
/// an editor integration match on the issue, the user reads the message).
public enum ActiveTaskMappingIssue: String, Sendable, CaseIterable {
    /// A required key (`tasks`, `name`, `codes`, `kind`, `type`) is missing, or a section is empty.
    case missingKey = "missing-key"
    /// A value of the wrong YAML shape (a list where a mapping belongs, ...), or an unknown key.
    case badStructure = "bad-structure"
    /// A `kind` that is not a dotted name (`distance`, `threshold.left.1000`).
    case unknownKindShape = "unknown-kind-shape"
    /// The same kind twice in one task: a value could not say which result it is.
    case repeatedKind = "repeated-kind"
    /// A `unit` UCUM does not define.
    case nonUCUMUnit = "non-ucum-unit"
    /// An Observation or a component without a code.
    case missingCode = "missing-code"
    /// A code that is not `code`, `system|code` or `{system, code, display}` with an absolute URI system.
    case badCode = "bad-code"
    /// Two tasks with one name, or one task code claimed by two tasks.
    case repeatedTask = "repeated-task"
    /// A `content-type` that is not a MIME type (`audio/mp4`).
    case badContentType = "bad-content-type"
}

/// Reads an active-task mapping (`export: active-task`), reporting every problem with its file:line:column
/// and its ``ActiveTaskMappingIssue``.
struct ActiveTaskMappingParser {
    let file: String
    private(set) var problems: [MappingProblem] = []
    /// The problems this parser found itself, each with its issue (key checks aside, which are `badStructure`).
    private(set) var issues: [(issue: ActiveTaskMappingIssue, problem: MappingProblem)] = []

    static let exportValue = "active-task"
    static let keys: Set<String> = ["export", "description", "code-system", "tasks"]
    static let taskKeys: Set<String> = ["name", "researchkit", "description", "codes", "observations", "documents"]
    static let observationKeys: Set<String> = ["name", "code", "category", "value", "components"]
    static let resultKeys: Set<String> = ["kind", "code", "unit"]
    static let documentKeys: Set<String> = ["kind", "type", "category", "content-type", "title"]
    static let codingKeys: Set<String> = ["system", "code", "display"]

    init(file: String) {
        self.file = file
    }

    /// Whether `root` is an active-task mapping (`export: active-task`).
    static func isActiveTaskMapping(_ root: Node?) -> Bool {
        root?.mapping?.first { $0.key.string == "export" }?.value.string == exportValue
    }

    mutating func parse(_ root: Node) -> ActiveTaskMapping? {
        guard let mapping = root.mapping else {
            report(.badStructure, at: root, "an active-task mapping is a mapping with `export: active-task` and `tasks:`")
            return nil
        }
        var result = ActiveTaskMapping(file: file)
        let keys = checkedKeys(mapping, allowed: Self.keys, in: "an active-task mapping")
        if let system = keys["code-system"] {
            if let text = system.string, Self.isAbsoluteURI(text) { result.codeSystem = text } else {
                report(.badCode, at: system, "`code-system:` must be an absolute URI (`urn:...`, `https://...`)")
            }
        }
        guard let tasks = keys["tasks"] else {
            report(.missingKey, at: root, "missing `tasks:` (the active tasks and what their results become)")
            return nil
        }
        guard let list = tasks.sequence, !list.isEmpty else {
            report(.missingKey, at: tasks, "`tasks:` is a list of active tasks")
            return nil
        }
        var names: Set<String> = []
        var claimed: [String: String] = [:]
        for node in list {
            guard let task = parseTask(node, codeSystem: result.codeSystem) else { continue }
            if !names.insert(task.name).inserted { report(.repeatedTask, at: node, "task '\(task.name)' is given twice") }
            for code in task.codes {
                if let other = claimed[code], other != task.name {
                    report(.repeatedTask, at: node, "the code '\(code)' already makes a task '\(other)': a task's codes must name one active task")
                }
                claimed[code] = claimed[code] ?? task.name
            }
            result.tasks.append(task)
        }
        return problems.contains { $0.severity == .error } ? nil : result
    }

    // MARK: - Tasks

    private mutating func parseTask(_ node: Node, codeSystem: String) -> ActiveTaskMapping.Task? {
        guard let mapping = node.mapping else {
            report(.badStructure, at: node, "a task is a mapping with `name:`, `codes:` and `observations:` or `documents:`")
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.taskKeys, in: "an active task")
        guard let name = keys["name"]?.string, !name.isEmpty else {
            report(.missingKey, at: keys["name"] ?? node, "a task needs `name:`")
            return nil
        }
        var task = ActiveTaskMapping.Task(name: name, researchKit: keys["researchkit"]?.string, codes: [], observations: [], documents: [])
        if let codes = keys["codes"], let list = codes.sequence, !list.isEmpty {
            for code in list {
                guard let text = code.string, let bar = text.firstIndex(of: "|"), Self.isAbsoluteURI(String(text[..<bar])),
                      !text[text.index(after: bar)...].isEmpty, !text.contains(" ")
                else {
                    report(.badCode, at: code, "a task code is `system|code` with an absolute URI system (`http://loinc.org|64098-7`)")
                    continue
                }
                task.codes.append(text)
            }
        } else {
            report(.missingKey, at: keys["codes"] ?? node, "task '\(name)' needs `codes:`, the codes (`system|code`) that make a task this active task")
        }
        if let observations = keys["observations"] {
            for item in observations.sequence ?? [] {
                if let observation = parseObservation(item, codeSystem: codeSystem) { task.observations.append(observation) }
            }
            if observations.sequence == nil { report(.badStructure, at: observations, "`observations:` is a list") }
        }
        if let documents = keys["documents"] {
            for item in documents.sequence ?? [] {
                if let document = parseDocument(item, codeSystem: codeSystem) { task.documents.append(document) }
            }
            if documents.sequence == nil { report(.badStructure, at: documents, "`documents:` is a list") }
        }
        if task.observations.isEmpty, task.documents.isEmpty, keys["observations"] == nil, keys["documents"] == nil {
            report(.missingKey, at: node, "task '\(name)' needs `observations:` or `documents:`: what its results become")
        }
        var seen: Set<String> = []
        for kind in task.kinds where !seen.insert(kind).inserted {
            report(.repeatedKind, at: node, "task '\(name)' takes the kind '\(kind)' twice: a value must name one result")
        }
        // An Observation's name (else its code) and a document's kind make the ids of what an outcome becomes.
        var names: Set<String> = []
        for resource in task.observations.map(\.name) + task.documents.map(\.kind) where !names.insert(resource).inserted {
            report(.repeatedKind, at: node, "task '\(name)' makes two resources named '\(resource)': give each Observation its own `name:`")
        }
        return task
    }

    private mutating func parseObservation(_ node: Node, codeSystem: String) -> ActiveTaskMapping.Observation? {
        guard let mapping = node.mapping else {
            report(.badStructure, at: node, "an Observation is a mapping with `code:` and `value:` or `components:`")
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.observationKeys, in: "an Observation")
        let code = keys["code"].flatMap { coding($0, defaultSystem: codeSystem) }
        if keys["code"] == nil { report(.missingCode, at: node, "an Observation needs `code:` (LOINC where one exists, else a code of `code-system:`)") }
        let categories = (keys["category"].map { $0.sequence ?? [$0] } ?? []).compactMap { coding($0, defaultSystem: ExportMapping.categorySystem) }
        let value = keys["value"].flatMap { result($0, needsCode: false, codeSystem: codeSystem) }
        var components: [ActiveTaskMapping.Result] = []
        if let list = keys["components"] {
            if list.sequence == nil { report(.badStructure, at: list, "`components:` is a list") }
            for item in list.sequence ?? [] {
                if let component = result(item, needsCode: true, codeSystem: codeSystem) { components.append(component) }
            }
        }
        if keys["value"] == nil, keys["components"] == nil {
            report(.missingKey, at: node, "an Observation needs `value:` or `components:`: the kinds it takes")
        }
        guard let code else { return nil }
        let name = keys["name"]?.string ?? code.code
        return ActiveTaskMapping.Observation(name: name, code: code, categories: categories, value: value, components: components)
    }

    private mutating func result(_ node: Node, needsCode: Bool, codeSystem: String) -> ActiveTaskMapping.Result? {
        guard let mapping = node.mapping else {
            report(.badStructure, at: node, "a result is a mapping with `kind:`, `unit:`\(needsCode ? " and `code:`" : "")")
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.resultKeys, in: "a result")
        // Every part is checked, also when the kind is broken: one run names every mistake.
        let kind = self.kind(keys["kind"], in: node)
        var result = ActiveTaskMapping.Result(kind: kind ?? "")
        if let code = keys["code"] {
            result.code = coding(code, defaultSystem: codeSystem)
        } else if needsCode {
            report(.missingCode, at: node, "the component '\(kind ?? "")' needs `code:` (LOINC where one exists, else a code of `code-system:`)")
        }
        if let unit = keys["unit"] {
            if let text = unit.string, !text.isEmpty, Self.isUCUM(text) { result.unit = text } else {
                report(.nonUCUMUnit, at: unit, "'\(unit.string ?? "")' is not a UCUM unit (`m`, `s`, `dB`, `{taps}`, `%`)")
            }
        }
        return kind == nil ? nil : result
    }

    private mutating func parseDocument(_ node: Node, codeSystem: String) -> ActiveTaskMapping.Document? {
        guard let mapping = node.mapping else {
            report(.badStructure, at: node, "a document is a mapping with `kind:` and `type:`")
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.documentKeys, in: "a document")
        let kind = self.kind(keys["kind"], in: node)
        let type = keys["type"].flatMap { coding($0, defaultSystem: codeSystem) }
        if keys["type"] == nil { report(.missingCode, at: node, "a document needs `type:` (the DocumentReference's type)") }
        let categories = (keys["category"].map { $0.sequence ?? [$0] } ?? []).compactMap { coding($0, defaultSystem: codeSystem) }
        var contentType = "application/octet-stream"
        if let node = keys["content-type"] {
            if let text = node.string, Self.isMIMEType(text) { contentType = text } else {
                report(.badContentType, at: node, "'\(node.string ?? "")' is not a MIME type (`audio/mp4`, `video/quicktime`)")
            }
        }
        guard let kind, let type else { return nil }
        return ActiveTaskMapping.Document(kind: kind, type: type, categories: categories, contentType: contentType, title: keys["title"]?.string)
    }

    // MARK: - Parts

    private mutating func kind(_ node: Node?, in parent: Node) -> String? {
        guard let node else {
            report(.missingKey, at: parent, "a result needs `kind:` (the outcome value's kind it is made from)")
            return nil
        }
        guard let text = node.string, Self.isKind(text) else {
            report(.unknownKindShape, at: node, "'\(node.string ?? "")' is not a kind: a dotted name of letters, digits, `_` and `-` (`distance`, `threshold.left.1000`)")
            return nil
        }
        return text
    }

    /// A code: `code` (in `defaultSystem`), `system|code`, or `{system, code, display}`.
    private mutating func coding(_ node: Node, defaultSystem: String) -> ExportMapping.Coding? {
        if let text = node.string {
            if let bar = text.firstIndex(of: "|") {
                let system = String(text[..<bar]), code = String(text[text.index(after: bar)...])
                guard Self.isAbsoluteURI(system), Self.isCode(code) else {
                    report(.badCode, at: node, "'\(text)' is not `system|code` with an absolute URI system")
                    return nil
                }
                return ExportMapping.Coding(system: system, code: code)
            }
            guard Self.isCode(text) else {
                report(.badCode, at: node, "'\(text)' is not a code (no spaces, not empty)")
                return nil
            }
            return ExportMapping.Coding(system: defaultSystem, code: text)
        }
        guard let mapping = node.mapping else {
            report(.badCode, at: node, "a code is `code`, `system|code`, or a mapping with `system:`, `code:` and `display:`")
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.codingKeys, in: "a code")
        guard let code = keys["code"]?.string, Self.isCode(code) else {
            report(.missingCode, at: keys["code"] ?? node, "a code needs `code:` (no spaces, not empty)")
            return nil
        }
        let system = keys["system"]?.string ?? defaultSystem
        guard Self.isAbsoluteURI(system) else {
            report(.badCode, at: keys["system"], "`system:` must be an absolute URI")
            return nil
        }
        return ExportMapping.Coding(system: system, code: code, display: keys["display"]?.string)
    }

    /// A dotted name: `distance`, `threshold.left.1000` (at most 100 characters).
    static func isKind(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 100 else { return false }
        return text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
            !part.isEmpty && part.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "-") }
        }
    }

    /// A UCUM unit: one the FHIRPath reader converts (``UCUM/recognizes(_:)``), or one of UCUM's
    /// logarithmic level units (its "levels" section: `B`, `B[SPL]`, `B[V]`, `B[mV]`, `B[uV]`,
    /// `B[10.nV]`, `B[W]`, `B[kW]`, `Np`, all metric, so `dB` and `dB[SPL]` too), which that reader
    /// leaves out because they do not convert by a factor.
    static func isUCUM(_ text: String) -> Bool {
        if UCUM.recognizes(text) { return true }
        let levels = ["B", "B[SPL]", "B[V]", "B[mV]", "B[uV]", "B[10.nV]", "B[W]", "B[kW]", "Np"]
        let prefixes = ["", "Y", "Z", "E", "P", "T", "G", "M", "k", "h", "da", "d", "c", "m", "u", "n", "p", "f", "a", "z", "y"]
        return prefixes.contains { prefix in text.hasPrefix(prefix) && levels.contains(String(text.dropFirst(prefix.count))) }
    }

    /// An R4 `code`: no leading or trailing whitespace, no double spaces; here no spaces at all.
    private static func isCode(_ text: String) -> Bool {
        !text.isEmpty && !text.contains { $0.isWhitespace }
    }

    /// `type/subtype` with RFC 6838 restricted-name characters, parameters allowed after `;`.
    static func isMIMEType(_ text: String) -> Bool {
        let essence = text.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        let parts = essence.split(separator: "/", omittingEmptySubsequences: false)
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$&^_.+-")
        return parts.count == 2 && parts.allSatisfy { !$0.isEmpty && $0.count <= 127 && $0.unicodeScalars.allSatisfy(allowed.contains) }
            && !text.contains("\n") && text.utf8.count <= 255
    }

    static func isAbsoluteURI(_ text: String) -> Bool { ExportMappingParser.isAbsoluteURI(text) }

    private mutating func report(_ issue: ActiveTaskMappingIssue, at node: Node?, _ message: String) {
        let problem = MappingProblem(at: MappingParser.location(of: node, file: file), message)
        issues.append((issue, problem))
        problems.append(problem)
    }

    private mutating func checkedKeys(_ mapping: Node.Mapping, allowed: Set<String>, in what: String) -> [String: Node] {
        var found: [MappingProblem] = []
        let keys = MappingParser.checkedKeys(mapping, allowed: allowed, in: what, file: file, problems: &found)
        for problem in found { issues.append((.badStructure, problem)) }
        problems += found
        return keys
    }
}
