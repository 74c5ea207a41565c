import CareModel
import FHIR
import Foundation
import Yams

/// Reads a HealthKit table (Mappings/healthkit.yaml) into a ``HealthKitTable``, collecting every problem
/// with its file:line:column: unknown keys, identifiers that are not `HKQuantityTypeIdentifier…`, a
/// `quantityType` other than discrete or cumulative, HealthKit units outside HealthKit's unit syntax, UCUM
/// units that are not UCUM, LOINC codes whose check digit is wrong or that are listed twice, ranges that
/// are empty or unbounded, panel components the table does not list.
///
/// Docs/healthkit.md documents the format.
public struct HealthKitTableParser {
    public let file: String
    public private(set) var problems: [MappingProblem] = []

    /// The most types, codes per type, and panels a table may hold.
    public static let maximumEntries = 1000
    /// The largest magnitude of a range bound: past it a number is a typo, not a measurement.
    public static let maximumMagnitude = 1e9
    /// The observation-category codes (http://terminology.hl7.org/CodeSystem/observation-category).
    public static let categories = [
        "social-history", "vital-signs", "imaging", "laboratory", "procedure", "survey", "exam", "therapy", "activity",
    ]

    static let rootKeys = ["healthkit", "description", "types", "panels"]
    static let typeKeys = ["identifier", "quantityType", "unit", "ucum", "category", "range", "codes", "description"]
    static let codeKeys = ["code", "display", "unit", "ucum", "range", "profile", "beside", "description"]
    static let panelKeys = ["code", "display", "category", "profile", "components", "description"]
    static let rangeKeys = ["low", "high"]

    public init(file: String) { self.file = file }

    /// Whether `root` is a HealthKit table (a YAML mapping with a `healthkit:` key).
    public static func isTable(_ root: Node) -> Bool {
        root.mapping?.keys.contains { $0.string == "healthkit" } == true
    }

    /// The table, or nil when any error was found (they are in ``problems``).
    public mutating func parse(_ source: String) -> HealthKitTable? {
        let root: Node?
        do {
            root = try Yams.compose(yaml: source)
        } catch let error as YamlError {
            problems.append(MappingParser.syntaxProblem(error, file: file, lines: source.split(separator: "\n", omittingEmptySubsequences: false)))
            return nil
        } catch {
            problems.append(MappingProblem(at: at(nil), "cannot be read as YAML"))
            return nil
        }
        guard let root else {
            problems.append(MappingProblem(at: at(nil), "a HealthKit table is a YAML mapping with `healthkit: 1` and `types:`"))
            return nil
        }
        return parse(root)
    }

    /// The table of an already composed document.
    public mutating func parse(_ root: Node) -> HealthKitTable? {
        guard let mapping = root.mapping else {
            problems.append(MappingProblem(at: at(root), "a HealthKit table is a YAML mapping with `healthkit: 1` and `types:`"))
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.rootKeys, in: "a HealthKit table")
        if let version = keys["healthkit"] {
            if version.int != 1 { problems.append(MappingProblem(at: at(version), "`healthkit:` takes the format version 1")) }
        }
        var types: [HealthKitQuantityType] = []
        var identifiers: [String: MappingLocation] = [:]
        var codes: [String: MappingLocation] = [:]
        if let node = keys["types"] {
            for item in sequence(node, what: "types") {
                guard let type = quantityType(item) else { continue }
                if let first = identifiers[type.identifier] {
                    problems.append(MappingProblem(at: type.location, "\(type.identifier) is listed twice (first at line \(first.line))"))
                } else {
                    identifiers[type.identifier] = type.location
                }
                for code in type.codes {
                    if let first = codes[code.code] {
                        problems.append(MappingProblem(at: code.location, "LOINC \(code.code) is listed twice (first at line \(first.line))"))
                    } else {
                        codes[code.code] = code.location
                    }
                }
                types.append(type)
            }
        } else {
            problems.append(MappingProblem(at: at(root), "missing `types:` (the HealthKit quantity types and their LOINC codes)"))
        }
        var panels: [HealthKitPanel] = []
        if let node = keys["panels"] {
            for item in sequence(node, what: "panels") {
                guard let panel = panel(item) else { continue }
                if let first = codes[panel.code] {
                    problems.append(MappingProblem(at: panel.location, "LOINC \(panel.code) is listed twice (first at line \(first.line))"))
                } else {
                    codes[panel.code] = panel.location
                }
                panels.append(panel)
            }
        }
        // Codes named beside a code, and panel components, must be codes of the table's types.
        let typeCodes = Set(types.flatMap { $0.codes.map(\.code) })
        for type in types {
            for code in type.codes {
                for other in code.beside where !typeCodes.contains(other) && LOINCCode.problem(in: other) == nil {
                    problems.append(MappingProblem(.warning, at: code.location, "\(code.code) carries \(other) beside it, which no type of the table lists"))
                }
            }
        }
        for panel in panels {
            for component in panel.components where !typeCodes.contains(component) {
                problems.append(MappingProblem(at: panel.location, "the component \(component) of panel \(panel.code) is no code of a type of the table"))
            }
        }
        guard !problems.contains(where: { $0.severity == .error }) else { return nil }
        return HealthKitTable(file: file, types: types, panels: panels)
    }

    // MARK: - Entries

    private mutating func quantityType(_ node: Node) -> HealthKitQuantityType? {
        guard let mapping = node.mapping else {
            problems.append(MappingProblem(at: at(node), "a type is a mapping with `identifier`, `quantityType`, `unit`, `ucum`, `category`, `range` and `codes`"))
            return nil
        }
        let errorsBefore = errorCount
        let keys = checkedKeys(mapping, allowed: Self.typeKeys, in: "a type")
        let identifier = required(keys, "identifier", in: node, what: "a type")
        if let identifier, let node = keys["identifier"], let problem = Self.identifierProblem(identifier) {
            problems.append(MappingProblem(at: at(node), problem))
        }
        var quantityType: HealthKitLinkage.QuantityType?
        if let text = required(keys, "quantityType", in: node, what: "a type"), let value = keys["quantityType"] {
            quantityType = HealthKitLinkage.QuantityType(rawValue: text)
            if quantityType == nil {
                let names = HealthKitLinkage.QuantityType.allCases.map(\.rawValue)
                problems.append(MappingProblem(at: at(value), "`quantityType:` is discrete or cumulative, not '\(text)'\(MappingParser.suggestion(for: text, among: names))"))
            }
        }
        var unit: String?, ucum: String?, category: String?, range: PlausibleRange?
        if let value = present(keys, "unit", in: node, what: "a type") { unit = healthKitUnit(value) }
        if let value = present(keys, "ucum", in: node, what: "a type") { ucum = ucumUnit(value) }
        if let value = present(keys, "category", in: node, what: "a type") { category = self.category(value) }
        if let value = present(keys, "range", in: node, what: "a type") { range = self.range(value) }
        var codes: [HealthKitCode] = []
        if let list = keys["codes"] {
            let items = sequence(list, what: "codes")
            if items.isEmpty, list.sequence != nil { problems.append(MappingProblem(at: at(list), "a type needs one LOINC code at least")) }
            for item in items {
                if let code = code(item, unit: unit, ucum: ucum, range: range) { codes.append(code) }
            }
        } else {
            problems.append(MappingProblem(at: at(node), "a type needs `codes:` (its LOINC codes, the primary one first)"))
        }
        guard errorCount == errorsBefore, let identifier, let quantityType, let unit, let ucum, let category, let range, !codes.isEmpty else {
            return nil
        }
        return HealthKitQuantityType(
            identifier: identifier, quantityType: quantityType, unit: unit, ucum: ucum, category: category, range: range, codes: codes,
            location: at(node))
    }

    private mutating func code(_ node: Node, unit: String?, ucum: String?, range: PlausibleRange?) -> HealthKitCode? {
        // `- 29463-7` alone: the code with its type's units and range.
        if node.scalar != nil {
            guard let text = loinc(node) else { return nil }
            guard let unit, let ucum, let range else { return nil }
            return HealthKitCode(code: text, display: nil, ucum: ucum, unit: unit, range: range, profile: nil, beside: [], location: at(node))
        }
        guard let mapping = node.mapping else {
            problems.append(MappingProblem(at: at(node), "a code is a LOINC code, or a mapping with `code:` and its own `display`, `ucum`, `unit`, `range`, `profile`, `beside`"))
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.codeKeys, in: "a code")
        guard let codeNode = keys["code"] else {
            problems.append(MappingProblem(at: at(node), "a code needs `code:` (a LOINC code)"))
            return nil
        }
        let code = loinc(codeNode)
        let display = keys["display"].flatMap { text($0, what: "display") }
        let ownUnit = keys["unit"].flatMap { healthKitUnit($0) }
        let ownUCUM = keys["ucum"].flatMap { ucumUnit($0) }
        let ownRange = keys["range"].flatMap { self.range($0) }
        // A code that names its own UCUM unit names its own range too: the type's is in another unit.
        if keys["ucum"] != nil, keys["range"] == nil, ownUCUM != ucum {
            problems.append(MappingProblem(at: at(node), "a code with a `ucum:` unit of its own needs a `range:` in that unit"))
        }
        let profile = keys["profile"].flatMap { text($0, what: "profile") }
        if let profile, let profileNode = keys["profile"], !(profile.hasPrefix("http://") || profile.hasPrefix("https://")) {
            problems.append(MappingProblem(at: at(profileNode), "`profile:` is the canonical URL of a profile (http://hl7.org/fhir/StructureDefinition/...)"))
        }
        var beside: [String] = []
        if let list = keys["beside"] {
            for item in sequence(list, what: "beside") {
                if let other = loinc(item) {
                    if other == code { problems.append(MappingProblem(at: at(item), "a code is not carried beside itself")) }
                    beside.append(other)
                }
            }
        }
        guard let code, let unit = ownUnit ?? unit, let ucum = ownUCUM ?? ucum, let range = ownRange ?? range else { return nil }
        return HealthKitCode(code: code, display: display, ucum: ucum, unit: unit, range: range, profile: profile, beside: beside, location: at(node))
    }

    private mutating func panel(_ node: Node) -> HealthKitPanel? {
        guard let mapping = node.mapping else {
            problems.append(MappingProblem(at: at(node), "a panel is a mapping with `code`, `category` and `components`"))
            return nil
        }
        let errorsBefore = errorCount
        let keys = checkedKeys(mapping, allowed: Self.panelKeys, in: "a panel")
        var code: String?, category: String?
        if let value = present(keys, "code", in: node, what: "a panel") { code = loinc(value) }
        let display = keys["display"].flatMap { text($0, what: "display") }
        if let value = present(keys, "category", in: node, what: "a panel") { category = self.category(value) }
        let profile = keys["profile"].flatMap { text($0, what: "profile") }
        var components: [String] = []
        if let list = keys["components"] {
            for item in sequence(list, what: "components") {
                if let component = loinc(item) { components.append(component) }
            }
            if components.count < 2, errorCount == errorsBefore {
                problems.append(MappingProblem(at: at(list), "a panel has two components at least (else list its code under the type)"))
            }
        } else {
            problems.append(MappingProblem(at: at(node), "a panel needs `components:` (the LOINC codes of its parts)"))
        }
        guard errorCount == errorsBefore, let code, let category else { return nil }
        return HealthKitPanel(code: code, display: display, category: category, profile: profile, components: components, location: at(node))
    }

    // MARK: - Values

    /// Why `identifier` is not an `HKQuantityTypeIdentifier` raw value, or nil.
    static func identifierProblem(_ identifier: String) -> String? {
        let prefix = "HKQuantityTypeIdentifier"
        let rest = identifier.dropFirst(prefix.count)
        guard identifier.hasPrefix(prefix), let first = rest.first, first.isASCII, first.isUppercase,
              rest.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else {
            return "'\(identifier)' is not a HealthKit quantity type identifier (HKQuantityTypeIdentifier followed by its name, e.g. HKQuantityTypeIdentifierBodyMass)"
        }
        return nil
    }

    private mutating func healthKitUnit(_ node: Node) -> String? {
        guard let text = text(node, what: "unit") else { return nil }
        if let problem = HealthKitUnitSyntax.problem(in: text) {
            problems.append(MappingProblem(at: at(node), "`unit:` is HealthKit's unit syntax (kg, count/min, mmHg, degC, %): \(problem)"))
            return nil
        }
        return text
    }

    private mutating func ucumUnit(_ node: Node) -> String? {
        guard let text = text(node, what: "ucum") else { return nil }
        if let problem = UCUMSyntax.problem(in: text) {
            problems.append(MappingProblem(at: at(node), problem))
            return nil
        }
        if !UCUM.recognizes(text) {
            problems.append(MappingProblem(.warning, at: at(node), "'\(text)' is well formed UCUM but not a unit CareGate can convert: readings in other units are refused"))
        }
        return text
    }

    private mutating func loinc(_ node: Node) -> String? {
        guard let text = node.scalar?.string.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
            problems.append(MappingProblem(at: at(node), "a LOINC code is text (29463-7)"))
            return nil
        }
        if let problem = LOINCCode.problem(in: text) {
            problems.append(MappingProblem(at: at(node), problem))
            return nil
        }
        return text
    }

    private mutating func category(_ node: Node) -> String? {
        guard let text = text(node, what: "category") else { return nil }
        guard Self.categories.contains(text) else {
            problems.append(MappingProblem(
                at: at(node),
                "`category:` is an observation-category code (\(Self.categories.joined(separator: ", "))), not '\(text)'\(MappingParser.suggestion(for: text, among: Self.categories))"))
            return nil
        }
        return text
    }

    private mutating func range(_ node: Node) -> PlausibleRange? {
        guard let mapping = node.mapping else {
            problems.append(MappingProblem(at: at(node), "`range:` is {low: N, high: N} in the UCUM unit"))
            return nil
        }
        let keys = checkedKeys(mapping, allowed: Self.rangeKeys, in: "a range")
        guard let lowNode = keys["low"], let highNode = keys["high"] else {
            problems.append(MappingProblem(at: at(node), "`range:` needs both `low:` and `high:` (in the UCUM unit)"))
            return nil
        }
        guard let low = number(lowNode), let high = number(highNode) else { return nil }
        guard low < high else {
            problems.append(MappingProblem(at: at(node), "`range:` low (\(low)) must be below high (\(high))"))
            return nil
        }
        return PlausibleRange(low: low, high: high)
    }

    private mutating func number(_ node: Node) -> Double? {
        guard let value = node.float ?? node.int.map(Double.init), value.isFinite, abs(value) <= Self.maximumMagnitude else {
            problems.append(MappingProblem(at: at(node), "a number of magnitude at most 1e9"))
            return nil
        }
        return value
    }

    // MARK: - YAML helpers

    private var errorCount: Int { problems.filter { $0.severity == .error }.count }

    private mutating func checkedKeys(_ mapping: Node.Mapping, allowed: [String], in what: String) -> [String: Node] {
        var result: [String: Node] = [:]
        for (key, value) in mapping {
            guard let name = key.string else {
                problems.append(MappingProblem(at: at(key), "keys of \(what) are text"))
                continue
            }
            guard allowed.contains(name) else {
                problems.append(MappingProblem(at: at(key), "unknown key '\(name)' in \(what)\(MappingParser.suggestion(for: name, among: allowed))"))
                continue
            }
            result[name] = value
        }
        return result
    }

    private mutating func sequence(_ node: Node, what: String) -> [Node] {
        guard let items = node.sequence else {
            problems.append(MappingProblem(at: at(node), "`\(what):` is a list"))
            return []
        }
        guard items.count <= Self.maximumEntries else {
            problems.append(MappingProblem(at: at(node), "`\(what):` holds more than \(Self.maximumEntries) items"))
            return []
        }
        return Array(items)
    }

    private mutating func required(_ keys: [String: Node], _ key: String, in node: Node, what: String) -> String? {
        guard let value = keys[key] else {
            problems.append(MappingProblem(at: at(node), "\(what) needs `\(key):`"))
            return nil
        }
        return text(value, what: key)
    }

    /// The value of `key`; nil, with the problem reported, when `node` does not give it.
    private mutating func present(_ keys: [String: Node], _ key: String, in node: Node, what: String) -> Node? {
        if keys[key] == nil { problems.append(MappingProblem(at: at(node), "\(what) needs `\(key):`")) }
        return keys[key]
    }

    private mutating func text(_ node: Node, what: String) -> String? {
        guard let text = node.scalar?.string, !text.isEmpty else {
            problems.append(MappingProblem(at: at(node), "`\(what):` is text"))
            return nil
        }
        return text
    }

    private func at(_ node: Node?) -> MappingLocation {
        MappingParser.location(of: node, file: file)
    }
}

extension HealthKitTable {
    /// The table shipped in Mappings/healthkit.yaml (embedded in the binary).
    ///
    /// - Throws: ``MappingProblems`` when the embedded file has errors (a test keeps it sound).
    public static func defaults() throws -> HealthKitTable {
        guard let text = MappingSet.defaultFileText(named: fileName) else { return .empty }
        return try parse(text, file: "Mappings/" + fileName)
    }

    /// The table in `text`, read as file `file`.
    ///
    /// - Throws: ``MappingProblems`` listing every error (warnings alone do not stop it).
    public static func parse(_ text: String, file: String) throws -> HealthKitTable {
        var parser = HealthKitTableParser(file: file)
        guard let table = parser.parse(text) else { throw MappingProblems(parser.problems) }
        return table
    }
}
