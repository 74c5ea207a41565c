import CareModel
import FHIR
import Foundation
import Yams

/// Reads one mapping file (YAML) into a ``ResourceMapping``, compiling every FHIRPath expression once.
///
/// Collects every problem it can find (YAML syntax, unknown or missing keys, wrong value shapes,
/// expressions that do not parse, unknown entity kinds, target fields or transforms), each with the
/// file and the line:column of the node, instead of stopping at the first. Type checks against R4 are
/// ``MappingChecker``'s job: the parser gives it what it could read even when other parts have errors
/// (marking what it could not, so that no consequence of an error is reported as a problem of its own).
struct MappingParser {
    let file: String
    var problems: [MappingProblem] = []
    /// The file's lines, to place expressions written as block or quoted scalars.
    private var lines: [Substring] = []
    /// The file said `extends: default`: it adds to the default mapping of its type instead of replacing it.
    private(set) var extendsDefault = false

    init(file: String) {
        self.file = file
    }

    static let resourceKeys: Set<String> = ["resource", "description", "extends", "when", "delete-when", "entities", "report"]
    static let entityKeys: Set<String> = ["entity", "name", "each", "when", "key", "fields", "description", "members"]
    static let fieldKeys: Set<String> = ["from", "transform", "value", "reverse", "on", "start", "end", "default", "waking-hours", "kind"]
    static let reportKeys: Set<String> = ["when", "message"]

    /// Whether ``problems`` holds an error: the mapping parsed is then only fit to be checked, not used.
    var hasErrors: Bool { problems.contains { $0.severity == .error } }

    /// What could be read of `text` (nil when not even its `resource:`); its errors are in ``problems``.
    mutating func parse(_ text: String) -> ResourceMapping? {
        lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            problems.append(Self.syntaxProblem(error, file: file, lines: lines))
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
        if !FHIRMetadata.r4.isResourceType(resourceType) {
            problems.append(MappingProblem(
                at: location(of: resourceNode),
                "'\(resourceType)' is not an R4 resource type\(Self.suggestion(for: resourceType, among: FHIRMetadata.r4.resourceTypes))"))
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
                var names: Set<String> = []
                for node in sequence {
                    guard let entity = entityMapping(node) else { continue }
                    if !names.insert(entity.name).inserted {
                        problems.append(MappingProblem(at: entity.location, "two entities are named '\(entity.name)': give each its own `name:`"))
                    }
                    entities.append(entity)
                }
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
            problems.append(MappingProblem(
                at: location(of: kindNode),
                "unknown entity '\(kindName)'\(Self.suggestion(for: kindName, among: EntityKind.allCases.map(\.rawValue))): expected one of \(Self.kindNames)"))
            return nil
        }
        let each = keys["each"].flatMap { expression($0, what: "each") }
        let unreadableEach = keys["each"] != nil && each == nil ? location(of: keys["each"]) : nil
        let filter = keys["when"].flatMap { expression($0, what: "when") }
        let key = keys["key"].flatMap { expression($0, what: "key") }
        let name = keys["name"]?.string ?? kind.rawValue
        if let nameNode = keys["name"], !(nameNode.string ?? "").allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) {
            problems.append(MappingProblem(at: location(of: nameNode), "`name:` may hold letters, digits and '-' only (it becomes part of ids)"))
        }
        var fields: [FieldMapping] = []
        var unreadableTargets: Set<String> = []
        if let fieldsNode = keys["fields"] {
            guard let fieldPairs = fieldsNode.mapping else {
                problems.append(MappingProblem(at: location(of: fieldsNode), "`fields:` must map target fields to their sources"))
                return nil
            }
            for (targetNode, sourceNode) in fieldPairs {
                guard let target = targetNode.scalar?.string else {
                    problems.append(MappingProblem(at: location(of: targetNode), "a target field is a name (`title`, `userInfo.status`...)"))
                    continue
                }
                guard TargetField.type(of: target, on: kind) != nil else {
                    problems.append(MappingProblem(
                        at: location(of: targetNode),
                        "unknown target field '\(target)' for \(kind.rawValue)\(Self.suggestion(for: target, among: TargetField.allNames(of: kind)))"))
                    continue
                }
                if let source = fieldSource(sourceNode) {
                    fields.append(FieldMapping(target: target, source: source, location: location(of: targetNode)))
                } else {
                    unreadableTargets.insert(target)
                }
            }
        } else {
            problems.append(MappingProblem(at: location(of: node), "missing `fields:`"))
        }
        var entity = EntityMapping(
            kind: kind, name: name, each: each, filter: filter, key: key, fields: fields, location: location(of: node),
            unreadableEach: unreadableEach, unreadableTargets: unreadableTargets)
        if let membersNode = keys["members"] {
            entity.members = memberRules(membersNode, entity: entity)
        }
        return entity
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
            guard let value = literal.scalar?.string else {
                problems.append(MappingProblem(at: location(of: literal), "`value:` is one fixed value (text, a number, true or false), not a list or mapping"))
                return nil
            }
            return .literal(value)
        }
        if let reverseNode = keys["reverse"] {
            guard let type = reverseNode.scalar?.string, FHIRMetadata.r4.isResourceType(type) else {
                let name = reverseNode.scalar?.string ?? ""
                problems.append(MappingProblem(
                    at: location(of: reverseNode),
                    "`reverse:` names an R4 resource type, and '\(name)' is not one\(Self.suggestion(for: name, among: FHIRMetadata.r4.resourceTypes))"))
                _ = keys["on"].flatMap { expression($0, what: "on") }
                _ = keys["from"].flatMap { expression($0, what: "from") }
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
        guard let transformName = transformNode.scalar?.string, let transform = TransformName(rawValue: transformName) else {
            let names = TransformName.allCases.map(\.rawValue)
            let name = transformNode.scalar?.string ?? ""
            problems.append(MappingProblem(
                at: location(of: transformNode),
                "unknown transform '\(name)'\(Self.suggestion(for: name, among: names)): expected one of \(names.joined(separator: ", "))"))
            for option in ["start", "end"] { _ = keys[option].flatMap { expression($0, what: option) } }
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

    mutating func expression(_ node: Node, what: String) -> MappingExpression? {
        guard let scalar = node.scalar else {
            problems.append(MappingProblem(at: location(of: node), "`\(what)` must be a FHIRPath expression (a string), not a list or mapping"))
            return nil
        }
        let text = scalar.string
        let start = location(of: node)
        let segments = segments(of: scalar, at: start)
        do {
            return MappingExpression(text: text, compiled: try FHIRPathExpression(text), location: start, segments: segments)
        } catch {
            let place = MappingExpression.place(line: error.line, column: error.column, in: text, at: start, segments: segments)
            problems.append(MappingProblem(at: place, "FHIRPath: \(error.message) (in `\(text)`)"))
            return nil
        }
    }

    /// Where the lines of `scalar`'s text start in the file: a quoted scalar one column after its
    /// node, a block scalar (`>-`, `|`) on the lines after its indicator, a scalar that goes on over
    /// several lines on each of them (folding joins lines with spaces, so each line is found in the
    /// text in order rather than counted).
    private func segments(of scalar: Node.Scalar, at start: MappingLocation) -> [(offset: Int, line: Int, column: Int)] {
        let quoted = scalar.style == .singleQuoted || scalar.style == .doubleQuoted
        let block = scalar.style == .literal || scalar.style == .folded
        let scalars = Array(scalar.string.unicodeScalars)
        var result: [(offset: Int, line: Int, column: Int)] = []
        var offset = 0
        var lineNumber = start.line + 1
        if !block {
            let column = start.column + (quoted ? 1 : 0)
            result.append((0, start.line, column))
            offset = lines.indices.contains(start.line - 1) ? max(0, lines[start.line - 1].unicodeScalars.count - (column - 1)) : scalars.count
        }
        while offset < scalars.count, lines.indices.contains(lineNumber - 1) {
            let line = lines[lineNumber - 1].unicodeScalars
            let indent = line.prefix { $0 == " " }.count
            let content = Array(line.dropFirst(indent))
            if !content.isEmpty {
                guard let found = Self.firstIndex(of: content, in: scalars, from: offset) else { break }
                result.append((found, lineNumber, indent + 1))
                offset = found + content.count
            }
            lineNumber += 1
        }
        return result
    }

    private static func firstIndex(of needle: [Unicode.Scalar], in haystack: [Unicode.Scalar], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= haystack.count {
            if haystack[index] == needle[0], Array(haystack[index..<index + needle.count]) == needle { return index }
            index += 1
        }
        return nil
    }

    mutating func checkedKeys(_ mapping: Node.Mapping, allowed: Set<String>, in what: String) -> [String: Node] {
        Self.checkedKeys(mapping, allowed: allowed, in: what, file: file, problems: &problems)
    }

    /// The values of `mapping` by key, reporting unknown keys (with a did-you-mean) and repeated ones:
    /// the key check of import and export mapping files alike. A misspelt key stands for the key it is
    /// nearest to when that one is not given, so that its value is still read and checked, and no
    /// "missing" error follows from the misspelling.
    static func checkedKeys(
        _ mapping: Node.Mapping, allowed: Set<String>, in what: String, file: String, problems: inout [MappingProblem]
    ) -> [String: Node] {
        var result: [String: Node] = [:]
        var misspelt: [(meant: String, value: Node)] = []
        for (keyNode, value) in mapping {
            guard let key = keyNode.scalar?.string else {
                problems.append(MappingProblem(at: location(of: keyNode, file: file), "a key in \(what) is a name, not a list or mapping"))
                continue
            }
            if !allowed.contains(key) {
                let meant = nearest(to: key, among: allowed.sorted())
                problems.append(MappingProblem(
                    at: location(of: keyNode, file: file),
                    "unknown key '\(key)' in \(what)\(meant.map { " (did you mean '\($0)'?)" } ?? "")"))
                if let meant { misspelt.append((meant, value)) }
                continue
            }
            if result[key] != nil {
                problems.append(MappingProblem(at: location(of: keyNode, file: file), "key '\(key)' is given twice"))
            }
            result[key] = value
        }
        for (meant, value) in misspelt where result[meant] == nil { result[meant] = value }
        return result
    }

    func location(of node: Node?) -> MappingLocation {
        Self.location(of: node, file: file)
    }

    /// Where `node` is in `file` (line 1, column 1 when there is no node).
    static func location(of node: Node?, file: String) -> MappingLocation {
        let mark = node?.mark
        return MappingLocation(file: file, line: mark?.line ?? 1, column: mark?.column ?? 1)
    }

    private static var kindNames: String { EntityKind.allCases.map(\.rawValue).joined(separator: ", ") }

    /// ` (did you mean 'x'?)` when a name is one or two edits from `name`.
    static func suggestion(for name: String, among candidates: [String]) -> String {
        nearest(to: name, among: candidates).map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// The candidate one or two edits from `name` (ignoring case), the nearest first; nil when none is
    /// (or when `name` is one of them).
    static func nearest(to name: String, among candidates: [String]) -> String? {
        guard !name.isEmpty, !candidates.contains(name) else { return nil }
        let best = candidates.map { ($0, editDistance($0.lowercased(), name.lowercased())) }.min { $0.1 < $1.1 }
        guard let best, best.1 <= 2, best.1 < max(name.count, best.0.count) else { return nil }
        return best.0
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

    static func syntaxProblem(_ error: YamlError, file: String, lines: [Substring]) -> MappingProblem {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            return MappingProblem(at: MappingLocation(file: file, line: mark.line, column: mark.column), "YAML syntax: \(problem)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            // The mark is the first of the keys; the repeat is the next line with the same key at its column.
            let key = duplicates.first ?? ""
            let mark = context.mark
            let repeated = lines.indices.dropFirst(mark.line).first { index in
                let line = lines[index].unicodeScalars
                return line.count >= mark.column && line.prefix(mark.column - 1).allSatisfy { $0 == " " || $0 == "-" }
                    && String(String.UnicodeScalarView(line.dropFirst(mark.column - 1))).hasPrefix(key + ":")
            }
            return MappingProblem(
                at: MappingLocation(file: file, line: repeated.map { $0 + 1 } ?? mark.line, column: mark.column),
                "key '\(key)' is given twice in one mapping (first at line \(mark.line))")
        default:
            return MappingProblem(at: MappingLocation(file: file, line: 1, column: 1), "YAML: \(error)")
        }
    }
}
