import Foundation
import Mapping
import Yams

/// Reads a rules file (YAML) into ``InsightsRules``, collecting every problem with its file:line:column.
///
/// ```yaml
/// insights: 1
/// chart: http://loinc.org|44261-6
/// measurements:
///   - kind: http://loinc.org|8480-6
///     title: Systolic blood pressure
///     unit: mm[Hg]
///     target: {low: 90, high: 140}
/// progress:                           # tasks whose events count by the sum of their values
///   - code: http://loinc.org|55423-8
///     strategy: summing
/// rules:
///   - name: systolic-high
///     kind: http://loinc.org|8480-6
///     unit: mm[Hg]
///     above: 140
///     in-a-row: 3
///     message: Systolic over {threshold} {unit} on {count} readings in a row
///   - name: adherence-low
///     adherence-below: 0.8
///     days: 7
///     message: Adherence {mean} over {days} days
/// ```
public struct InsightsRulesParser {
    public let file: String
    public private(set) var problems: [MappingProblem] = []

    /// The largest magnitude of a threshold or band: numbers past it are typos, not measurements.
    public static let maximumMagnitude = 1e9
    /// The most readings in a row, and days in a window, a rule may ask.
    public static let maximumRun = 1000
    public static let maximumDays = 366
    /// The most rules and measurements in a file.
    public static let maximumEntries = 500

    static let rootKeys: Set<String> = ["insights", "description", "chart", "measurements", "rules", "progress"]
    static let progressKeys: Set<String> = ["task", "code", "strategy", "description"]
    static let measurementKeys: Set<String> = ["kind", "title", "unit", "target", "description"]
    static let bandKeys: Set<String> = ["low", "high"]
    static let ruleKeys: Set<String> = [
        "name", "kind", "unit", "above", "at-least", "below", "at-most", "in-a-row", "adherence-below", "days",
        "severity", "message", "description",
    ]

    public init(file: String) { self.file = file }

    /// Whether `text` is a rules file (a YAML mapping with an `insights:` key), so that a mapping folder
    /// can tell it from a mapping.
    public static func isRulesFile(_ text: String) -> Bool {
        guard let root = try? Yams.compose(yaml: text), let mapping = root.mapping else { return false }
        return mapping.keys.contains { $0.string == "insights" }
    }

    /// What could be read of `text`; nil when any problem was found (they are in ``problems``).
    public mutating func parse(_ source: String) -> InsightsRules? {
        let root: Node?
        do {
            root = try Yams.compose(yaml: source)
        } catch let error as YamlError {
            problems.append(Self.syntaxProblem(error, file: file))
            return nil
        } catch {
            problems.append(MappingProblem(at: at(nil), "cannot be read as YAML"))
            return nil
        }
        guard let root, let mapping = root.mapping else {
            problems.append(MappingProblem(at: at(root), "a rules file is a YAML mapping with `insights: 1`, `measurements:` and `rules:`"))
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.rootKeys, in: "a rules file")
        if let version = keys["insights"] {
            if version.int != 1 { problems.append(MappingProblem(at: at(version), "`insights:` takes the format version 1")) }
        } else {
            problems.append(MappingProblem(at: at(root), "missing `insights: 1` (the format version)"))
        }
        let chart = keys["chart"].flatMap { text($0, what: "chart") }
        var measurements: [MeasurementDefinition] = []
        if let node = keys["measurements"] {
            for item in sequence(node, what: "measurements") {
                if let definition = measurement(item) { measurements.append(definition) }
            }
        }
        var rules: [ThresholdRule] = []
        var names: Set<String> = []
        if let node = keys["rules"] {
            for item in sequence(node, what: "rules") {
                guard let rule = rule(item) else { continue }
                if !names.insert(rule.name).inserted {
                    problems.append(MappingProblem(at: rule.location, "two rules are named '\(rule.name)'"))
                }
                rules.append(rule)
            }
        }
        var progress: [ProgressRule] = []
        if let node = keys["progress"] {
            var matched: Set<ProgressRule.Match> = []
            for item in sequence(node, what: "progress") {
                guard let rule = progressRule(item) else { continue }
                if !matched.insert(rule.match).inserted {
                    problems.append(MappingProblem(at: rule.location ?? at(item), "two `progress:` rules match the same \(Self.words(rule.match))"))
                }
                progress.append(rule)
            }
        }
        guard problems.isEmpty else { return nil }
        return InsightsRules(file: file, measurements: measurements, chart: chart, rules: rules, progress: progress)
    }

    /// `task 'X'` or `code 'S|C'`, for messages.
    private static func words(_ match: ProgressRule.Match) -> String {
        switch match {
        case .task(let id): return "task '\(id)'"
        case .code(let code): return "code '\(code)'"
        }
    }

    /// A `progress:` entry: `task:` or `code:` (exactly one), and `strategy:`.
    private mutating func progressRule(_ node: Node) -> ProgressRule? {
        guard let mapping = node.mapping else {
            problems.append(MappingProblem(at: at(node), "a progress rule is a mapping with `code:` or `task:`, and `strategy:`"))
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.progressKeys, in: "a progress rule")
        let names = ProgressStrategy.allCases.map(\.rawValue)
        var strategy: ProgressStrategy?
        if let value = keys["strategy"] {
            if let text = value.string, let known = ProgressStrategy(rawValue: text) {
                strategy = known
            } else {
                problems.append(MappingProblem(
                    at: at(value), "`strategy:` is one of \(names.joined(separator: ", "))\(Self.suggestion(for: value.string ?? "", among: Set(names)))"))
            }
        } else {
            problems.append(MappingProblem(at: at(node), "missing `strategy:` (\(names.joined(separator: " or ")))"))
        }
        let match: ProgressRule.Match?
        switch (keys["task"], keys["code"]) {
        case (let task?, nil):
            match = text(task, what: "task").map(ProgressRule.Match.task)
        case (nil, let code?):
            match = text(code, what: "code").map(ProgressRule.Match.code)
            if case .code(let value)? = match, !Self.isSystemAndCode(value) {
                problems.append(MappingProblem(at: at(code), "`code:` is a FHIR code as system|code (e.g. http://loinc.org|55423-8)"))
            }
        case (_?, let code?):
            problems.append(MappingProblem(at: at(code), "a progress rule matches by `task:` or by `code:`, not both"))
            match = nil
        case (nil, nil):
            problems.append(MappingProblem(at: at(node), "missing `code:` (system|code of the tasks) or `task:` (a task id)"))
            match = nil
        }
        guard let match, let strategy else { return nil }
        return ProgressRule(match: match, strategy: strategy, location: at(node))
    }

    /// Whether `text` is `system|code` with both sides given.
    private static func isSystemAndCode(_ text: String) -> Bool {
        let parts = text.split(separator: "|", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty
    }

    private mutating func measurement(_ node: Node) -> MeasurementDefinition? {
        guard let mapping = node.mapping else {
            problems.append(MappingProblem(at: at(node), "a measurement is a mapping with `kind:` and `title:`"))
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.measurementKeys, in: "a measurement")
        let kind = required(keys, "kind", in: node, what: "the outcome values' kind, e.g. http://loinc.org|8480-6")
        let title = required(keys, "title", in: node, what: "the title drawn above its chart")
        let unit = keys["unit"].flatMap { text($0, what: "unit") }
        var band: TargetBand?
        if let target = keys["target"] {
            if let targetMapping = target.mapping {
                let bandKeys = checkedKeys(targetMapping, allowed: Self.bandKeys, in: "a target")
                let low = bandKeys["low"].flatMap { number($0, what: "low") }
                let high = bandKeys["high"].flatMap { number($0, what: "high") }
                if low == nil && high == nil {
                    problems.append(MappingProblem(at: at(target), "a target gives `low:`, `high:` or both"))
                } else if let low, let high, low > high {
                    problems.append(MappingProblem(at: at(target), "the target's low (\(low)) is above its high (\(high))"))
                }
                band = TargetBand(low: low, high: high)
            } else {
                problems.append(MappingProblem(at: at(target), "`target:` is a mapping with `low:` and/or `high:`"))
            }
        }
        guard let kind, let title else { return nil }
        return MeasurementDefinition(kind: kind, title: title, unit: unit, target: band)
    }

    private mutating func rule(_ node: Node) -> ThresholdRule? {
        guard let mapping = node.mapping else {
            problems.append(MappingProblem(at: at(node), "a rule is a mapping with `name:`, a condition and `message:`"))
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.ruleKeys, in: "a rule")
        let name = required(keys, "name", in: node, what: "the rule's name")
        let message = required(keys, "message", in: node, what: "what the care team reads when it fires")
        var severity = ThresholdRule.Severity.warning
        if let node = keys["severity"] {
            if let text = node.string, let value = ThresholdRule.Severity(rawValue: text) {
                severity = value
            } else {
                problems.append(MappingProblem(at: at(node), "`severity:` is one of \(ThresholdRule.Severity.allCases.map(\.rawValue).joined(separator: ", "))"))
            }
        }
        let comparisons = Comparison.allCases.compactMap { comparison in keys[comparison.rawValue].map { (comparison, $0) } }
        let condition: ThresholdRule.Condition?
        if let adherence = keys["adherence-below"] {
            for (comparison, other) in comparisons {
                problems.append(MappingProblem(at: at(other), "`\(comparison.rawValue):` compares a measurement; this rule is on adherence (`adherence-below:`)"))
            }
            for key in ["kind", "unit", "in-a-row"] {
                if let other = keys[key] { problems.append(MappingProblem(at: at(other), "`\(key):` belongs to a measurement rule, not to an adherence rule")) }
            }
            let threshold = number(adherence, what: "adherence-below")
            if let threshold, !(0...1).contains(threshold) {
                problems.append(MappingProblem(at: at(adherence), "`adherence-below:` is a fraction from 0 to 1 (0.8 for 80%)"))
            }
            let days = keys["days"].map { count($0, what: "days", maximum: Self.maximumDays) } ?? 7
            condition = threshold.flatMap { threshold in days.map { .adherence(below: threshold, days: $0) } }
        } else {
            if let days = keys["days"] { problems.append(MappingProblem(at: at(days), "`days:` belongs to an adherence rule (`adherence-below:`)")) }
            let kind = required(keys, "kind", in: node, what: "the outcome values' kind it watches, or give `adherence-below:`")
            let unit = keys["unit"].flatMap { text($0, what: "unit") }
            if comparisons.count != 1 {
                let place = comparisons.count > 1 ? at(comparisons[1].1) : at(node)
                problems.append(MappingProblem(at: place, "a measurement rule gives exactly one of `above:`, `at-least:`, `below:`, `at-most:`"))
            }
            let threshold = comparisons.first.flatMap { number($0.1, what: $0.0.rawValue) }
            let inARow = keys["in-a-row"].map { count($0, what: "in-a-row", maximum: Self.maximumRun) } ?? 1
            if let kind, let threshold, let inARow, let comparison = comparisons.first?.0, comparisons.count == 1 {
                condition = .measurement(kind: kind, unit: unit, comparison: comparison, threshold: threshold, inARow: inARow)
            } else {
                condition = nil
            }
        }
        guard let name, let message, let condition else { return nil }
        checkPlaceholders(message, allowed: ThresholdRule.placeholders(for: condition), at: keys["message"])
        return ThresholdRule(name: name, condition: condition, severity: severity, message: message, location: at(node))
    }

    /// Reports each `{name}` in `message` that the rule cannot fill.
    private mutating func checkPlaceholders(_ message: String, allowed: Set<String>, at node: Node?) {
        var rest = Substring(message)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else {
                problems.append(MappingProblem(at: at(node), "a `{` without its `}` in the message"))
                return
            }
            let name = String(rest[rest.index(after: open)..<close])
            if !allowed.contains(name) {
                problems.append(MappingProblem(at: at(node), "'{\(name)}' is not filled in by this rule (it fills \(allowed.sorted().map { "{\($0)}" }.joined(separator: ", ")))"))
            }
            rest = rest[rest.index(after: close)...]
        }
    }

    // MARK: Nodes

    private mutating func checkedKeys(_ mapping: Node.Mapping, allowed: Set<String>, in what: String) -> [String: Node] {
        var keys: [String: Node] = [:]
        for (key, value) in mapping {
            guard let name = key.string else {
                problems.append(MappingProblem(at: at(key), "keys are plain names"))
                continue
            }
            guard allowed.contains(name) else {
                problems.append(MappingProblem(at: at(key), "unknown key '\(name)' in \(what)\(Self.suggestion(for: name, among: allowed))"))
                continue
            }
            keys[name] = value
        }
        return keys
    }

    private mutating func sequence(_ node: Node, what: String) -> [Node] {
        if case .scalar(let scalar) = node, scalar.string.isEmpty || scalar.string == "~" || scalar.string == "null" { return [] }
        guard let items = node.sequence else {
            problems.append(MappingProblem(at: at(node), "`\(what):` is a list"))
            return []
        }
        guard items.count <= Self.maximumEntries else {
            problems.append(MappingProblem(at: at(node), "`\(what):` lists \(items.count) entries, more than \(Self.maximumEntries)"))
            return []
        }
        return Array(items)
    }

    private mutating func required(_ keys: [String: Node], _ key: String, in node: Node, what: String) -> String? {
        guard let value = keys[key] else {
            problems.append(MappingProblem(at: at(node), "missing `\(key):` (\(what))"))
            return nil
        }
        return text(value, what: key)
    }

    private mutating func text(_ node: Node, what: String) -> String? {
        guard case .scalar(let scalar) = node, !scalar.string.isEmpty, scalar.string.count <= 1000 else {
            problems.append(MappingProblem(at: at(node), "`\(what):` is a text of 1 to 1000 characters"))
            return nil
        }
        return scalar.string
    }

    private mutating func number(_ node: Node, what: String) -> Double? {
        guard case .scalar(let scalar) = node, scalar.style == .plain, let value = Double(scalar.string), value.isFinite,
            abs(value) <= Self.maximumMagnitude
        else {
            problems.append(MappingProblem(at: at(node), "`\(what):` is a number between -\(Int(Self.maximumMagnitude)) and \(Int(Self.maximumMagnitude))"))
            return nil
        }
        return value
    }

    private mutating func count(_ node: Node, what: String, maximum: Int) -> Int? {
        guard case .scalar(let scalar) = node, scalar.style == .plain, let value = Int(scalar.string), (1...maximum).contains(value) else {
            problems.append(MappingProblem(at: at(node), "`\(what):` is a whole number from 1 to \(maximum)"))
            return nil
        }
        return value
    }

    private func at(_ node: Node?) -> MappingLocation {
        let mark = node?.mark
        return MappingLocation(file: file, line: mark?.line ?? 1, column: mark?.column ?? 1)
    }

    static func syntaxProblem(_ error: YamlError, file: String) -> MappingProblem {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            return MappingProblem(at: MappingLocation(file: file, line: mark.line, column: mark.column), "YAML syntax: \(problem)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            return MappingProblem(
                at: MappingLocation(file: file, line: context.mark.line, column: context.mark.column),
                "the key '\(duplicates.first ?? "")' is given twice")
        default:
            return MappingProblem(at: MappingLocation(file: file, line: 1, column: 1), "cannot be read as YAML")
        }
    }

    /// ` (did you mean 'x'?)` when one of `candidates` is one or two edits from `name`.
    static func suggestion(for name: String, among candidates: Set<String>) -> String {
        let best = candidates.map { ($0, distance(name.lowercased(), $0)) }.filter { $0.1 <= 2 }.min { ($0.1, $0.0) < ($1.1, $1.0) }
        return best.map { " (did you mean '\($0.0)'?)" } ?? ""
    }

    private static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.prefix(64)), b = Array(b.prefix(64))
        var row = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return a.isEmpty ? b.count : row[b.count]
    }
}

extension InsightsRules {
    /// Reads and checks the rules in `text` (named `file` in problems).
    ///
    /// - Throws: ``MappingProblems`` with every problem found.
    public static func parse(_ text: String, file: String) throws -> InsightsRules {
        var parser = InsightsRulesParser(file: file)
        guard let rules = parser.parse(text) else { throw MappingProblems(parser.problems) }
        return rules
    }

    /// Reads the rules file at `path`.
    ///
    /// - Throws: ``MappingProblems`` naming the file when it cannot be read or has problems.
    public static func load(path: String) throws -> InsightsRules {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 4 << 20,
            let text = String(data: data, encoding: .utf8)
        else {
            throw MappingProblems([MappingProblem(at: MappingLocation(file: path, line: 1, column: 1), "cannot be read as UTF-8 text of at most 4 MB")])
        }
        return try parse(text, file: path)
    }
}
