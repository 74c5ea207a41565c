import CareModel
import FHIR
import Foundation
import Yams

/// Reads one mapping file (YAML) into a ``ResourceMapping``, compiling every FHIRPath expression once.
///
/// Collects every problem it can find (YAML syntax, unknown or missing keys, wrong value shapes,
/// expressions that do not parse, unknown entity kinds, target fields or transforms), each with the
/// file and the line:column of the node, instead of stopping at the first. Type checks against R4 are
/// ``MappingChecker``'s job.
struct MappingParser {
    let file: String
    private(set) var problems: [MappingProblem] = []
    /// The file said `extends: default`: it adds to the default mapping of its type instead of replacing it.
    private(set) var extendsDefault = false

    init(file: String) {
        self.file = file
    }

    static let resourceKeys: Set<String> = ["resource", "description", "extends", "when", "delete-when", "entities", "report"]
    static let entityKeys: Set<String> = ["entity", "name", "each", "when", "key", "fields", "description"]
    static let fieldKeys: Set<String> = ["from", "transform", "value", "reverse", "on", "start", "end", "default", "waking-hours", "kind"]
    static let reportKeys: Set<String> = ["when", "message"]

    /// The mapping of `text`, or nil when it has errors (then in ``problems``).
    mutating func parse(_ text: String) -> ResourceMapping? {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            problems.append(Self.syntaxProblem(error, file: file))
            return nil
        } catch {
            problems.append(MappingProblem(at: MappingLocation(file: file, line: 1, column: 1), "cannot be read as YAML: \(error)"))
            return nil
        }
        guard let root, let mapping = root.mapping else {
            problems.append(MappingProblem(at: location(of: root), "a mapping file is a YAML mapping with `resource:` and `entities:`"))
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.resourceKeys, in: "a mapping file")
        guard let resourceNode = keys["resource"], let resourceType = resourceNode.string else {
            problems.append(MappingProblem(at: location(of: root), "missing `resource:` (the R4 resource type this file maps)"))
            return nil
        }
        if FHIRMetadata.r4.type(named: resourceType)?.kind != .resource || FHIRMetadata.r4.type(named: resourceType)?.isAbstract == true {
            problems.append(MappingProblem(at: location(of: resourceNode), "'\(resourceType)' is not an R4 resource type"))
        }
        if let extends = keys["extends"] {
            if extends.string == "default" {
                extendsDefault = true
            } else {
                problems.append(MappingProblem(at: location(of: extends), "`extends:` takes the one value `default`"))
            }
        }
        let filter = keys["when"].flatMap { expression($0, what: "when") }
        let deleteWhen = keys["delete-when"].flatMap { expression($0, what: "delete-when") }
        var entities: [EntityMapping] = []
        if let entityList = keys["entities"] {
            if let sequence = entityList.sequence, !sequence.isEmpty {
                for node in sequence { if let entity = entityMapping(node) { entities.append(entity) } }
            } else {
                problems.append(MappingProblem(at: location(of: entityList), "`entities:` must be a non-empty list"))
            }
        } else {
            problems.append(MappingProblem(at: location(of: root), "missing `entities:` (the entities this resource makes)"))
        }
        var reports: [ReportRule] = []
        if let reportNode = keys["report"] {
            for node in reportNode.sequence ?? [] {
                guard let rule = node.mapping else {
                    problems.append(MappingProblem(at: location(of: node), "a report rule is a mapping with `when:` and `message:`"))
                    continue
                }
                let ruleKeys = checkedKeys(rule, allowed: Self.reportKeys, in: "a report rule")
                guard let when = ruleKeys["when"].flatMap({ expression($0, what: "when") }), let message = ruleKeys["message"]?.string else {
                    problems.append(MappingProblem(at: location(of: node), "a report rule needs `when:` (FHIRPath) and `message:`"))
                    continue
                }
                reports.append(ReportRule(condition: when, message: message))
            }
            if reportNode.sequence == nil {
                problems.append(MappingProblem(at: location(of: reportNode), "`report:` must be a list of rules"))
            }
        }
        guard !problems.contains(where: { $0.severity == .error }) else { return nil }
        return ResourceMapping(
            resourceType: resourceType, file: file, filter: filter, deleteWhen: deleteWhen, entities: entities, reports: reports)
    }

    private mutating func entityMapping(_ node: Node) -> EntityMapping? {
        guard let mapping = node.mapping else {
            problems.append(MappingProblem(at: location(of: node), "an entity is a mapping with `entity:` and `fields:`"))
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.entityKeys, in: "an entity")
        guard let kindNode = keys["entity"], let kindName = kindNode.string else {
            problems.append(MappingProblem(at: location(of: node), "missing `entity:` (one of \(Self.kindNames))"))
            return nil
        }
        guard let kind = EntityKind(rawValue: kindName) else {
            problems.append(MappingProblem(at: location(of: kindNode), "unknown entity '\(kindName)': expected one of \(Self.kindNames)"))
            return nil
        }
        let each = keys["each"].flatMap { expression($0, what: "each") }
        let filter = keys["when"].flatMap { expression($0, what: "when") }
        let key = keys["key"].flatMap { expression($0, what: "key") }
        let name = keys["name"]?.string ?? kind.rawValue
        if let nameNode = keys["name"], !(nameNode.string ?? "").allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) {
            problems.append(MappingProblem(at: location(of: nameNode), "`name:` may hold letters, digits and '-' only (it becomes part of ids)"))
        }
        var fields: [FieldMapping] = []
        if let fieldsNode = keys["fields"] {
            guard let fieldPairs = fieldsNode.mapping else {
                problems.append(MappingProblem(at: location(of: fieldsNode), "`fields:` must map target fields to their sources"))
                return nil
            }
            for (targetNode, sourceNode) in fieldPairs {
                guard let target = targetNode.string else { continue }
                guard TargetField.type(of: target, on: kind) != nil else {
                    problems.append(MappingProblem(
                        at: location(of: targetNode),
                        "unknown target field '\(target)' for \(kind.rawValue)\(Self.suggestion(for: target, among: TargetField.allNames(of: kind)))"))
                    continue
                }
                if let source = fieldSource(sourceNode) {
                    fields.append(FieldMapping(target: target, source: source, location: location(of: targetNode)))
                }
            }
        } else {
            problems.append(MappingProblem(at: location(of: node), "missing `fields:`"))
        }
        return EntityMapping(kind: kind, name: name, each: each, filter: filter, key: key, fields: fields, location: location(of: node))
    }

    private mutating func fieldSource(_ node: Node) -> FieldSource? {
        if node.scalar != nil {
            return expression(node, what: "a field").map(FieldSource.expression)
        }
        guard let mapping = node.mapping else {
            problems.append(MappingProblem(at: location(of: node), "a field is a FHIRPath expression or a mapping (`from:`, `transform:`, `value:`, `reverse:`)"))
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.fieldKeys, in: "a field")
        if let literal = keys["value"] {
            return literal.string.map(FieldSource.literal)
        }
        if let reverseNode = keys["reverse"] {
            guard let type = reverseNode.string, FHIRMetadata.r4.type(named: type)?.kind == .resource else {
                problems.append(MappingProblem(at: location(of: reverseNode), "`reverse:` names an R4 resource type"))
                return nil
            }
            guard let on = keys["on"].flatMap({ expression($0, what: "on") }), let value = keys["from"].flatMap({ expression($0, what: "from") }) else {
                problems.append(MappingProblem(at: location(of: node), "a `reverse:` field needs `on:` (the reference back) and `from:` (the value)"))
                return nil
            }
            return .reverse(type: type, on: on, value: value)
        }
        let from = keys["from"].flatMap { expression($0, what: "from") }
        guard let transformNode = keys["transform"] else {
            guard let from else {
                problems.append(MappingProblem(at: location(of: node), "a field needs `from:`, `transform:`, `value:` or `reverse:`"))
                return nil
            }
            return .expression(from)
        }
        guard let transformName = transformNode.string, let transform = TransformName(rawValue: transformName) else {
            problems.append(MappingProblem(
                at: location(of: transformNode),
                "unknown transform '\(transformNode.string ?? "")': expected one of \(TransformName.allCases.map(\.rawValue).joined(separator: ", "))"))
            return nil
        }
        var options = TransformOptions()
        for name in ["start", "end"] {
            if let optionNode = keys[name], let compiled = expression(optionNode, what: name) {
                options.expressions[name] = compiled
                options.locations[name] = location(of: optionNode)
            }
        }
        for name in ["default", "waking-hours", "kind"] {
            if let optionNode = keys[name] {
                options.values[name] = optionNode.string ?? ""
                options.locations[name] = location(of: optionNode)
            }
        }
        return .transform(transform, from: from, options: options)
    }

    private mutating func expression(_ node: Node, what: String) -> MappingExpression? {
        guard let text = node.string else {
            problems.append(MappingProblem(at: location(of: node), "`\(what)` must be a FHIRPath expression (a string)"))
            return nil
        }
        do {
            return MappingExpression(text: text, compiled: try FHIRPathExpression(text), location: location(of: node))
        } catch {
            problems.append(MappingProblem(at: location(of: node, offsetBy: error.column - 1), "FHIRPath: \(error.message) (in `\(text)`)"))
            return nil
        }
    }

    private mutating func checkedKeys(_ mapping: Node.Mapping, allowed: Set<String>, in what: String) -> [String: Node] {
        Self.checkedKeys(mapping, allowed: allowed, in: what, file: file, problems: &problems)
    }

    /// The values of `mapping` by key, reporting unknown keys (with a did-you-mean) and repeated ones:
    /// the key check of import and export mapping files alike.
    static func checkedKeys(
        _ mapping: Node.Mapping, allowed: Set<String>, in what: String, file: String, problems: inout [MappingProblem]
    ) -> [String: Node] {
        var result: [String: Node] = [:]
        for (keyNode, value) in mapping {
            guard let key = keyNode.string else { continue }
            if !allowed.contains(key) {
                problems.append(MappingProblem(
                    at: location(of: keyNode, file: file),
                    "unknown key '\(key)' in \(what)\(suggestion(for: key, among: allowed.sorted()))"))
                continue
            }
            if result[key] != nil {
                problems.append(MappingProblem(at: location(of: keyNode, file: file), "key '\(key)' is given twice"))
            }
            result[key] = value
        }
        return result
    }

    private func location(of node: Node?, offsetBy columns: Int = 0) -> MappingLocation {
        Self.location(of: node, file: file, offsetBy: columns)
    }

    /// Where `node` is in `file` (line 1, column 1 when there is no node).
    static func location(of node: Node?, file: String, offsetBy columns: Int = 0) -> MappingLocation {
        let mark = node?.mark
        return MappingLocation(file: file, line: mark?.line ?? 1, column: (mark?.column ?? 1) + max(0, columns))
    }

    private static var kindNames: String { EntityKind.allCases.map(\.rawValue).joined(separator: ", ") }

    /// ` (did you mean 'x'?)` when a name is one or two edits from `name`.
    static func suggestion(for name: String, among candidates: [String]) -> String {
        let best = candidates.map { ($0, editDistance($0.lowercased(), name.lowercased())) }.min { $0.1 < $1.1 }
        guard let best, best.1 <= 2 else { return "" }
        return " (did you mean '\(best.0)'?)"
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return a.isEmpty ? b.count : previous[b.count]
    }

    static func syntaxProblem(_ error: YamlError, file: String) -> MappingProblem {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            return MappingProblem(at: MappingLocation(file: file, line: mark.line, column: mark.column), "YAML syntax: \(problem)")
        default:
            return MappingProblem(at: MappingLocation(file: file, line: 1, column: 1), "YAML: \(error)")
        }
    }
}
