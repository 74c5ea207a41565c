import CareModel
import FHIR
import Foundation

/// FHIR values to CareKit outcome values: Quantity (and its profiles, Range, plain numbers) to a
/// number with its unit, and an Observation's value[x] and components to typed values.
enum ValueTransforms {
    /// The values of one Quantity-like node: a Quantity gives its value with the unit (UCUM code, else
    /// the human unit); a Range its low and high (kinds `low`/`high`); an integer or decimal itself.
    static func quantity(_ node: FHIRPathElementNode, kind: String?, time: Date?, zone: TimeZone, notes: inout [MappingNote]) -> [OutcomeValue] {
        quantity(node.element, typeName: node.typeName, path: { node.path ?? node.typeName ?? "value" }, kind: kind, time: time, zone: zone,
                 notes: &notes)
    }

    /// ``quantity(_:kind:time:zone:notes:)`` of an element of type `typeName`; its location (`path`)
    /// is written only into a note, so only made for one.
    private static func quantity(_ element: Element, typeName: String?, path: () -> String, kind: String?, time: Date?, zone: TimeZone,
                                 notes: inout [MappingNote]) -> [OutcomeValue] {
        switch typeName {
        case "Range":
            var values: [OutcomeValue] = []
            for bound in ["low", "high"] {
                if let quantity = element.child(named: bound), let value = number(quantity, path: "\(path()).\(bound)", notes: &notes) {
                    values.append(OutcomeValue(value, units: unit(of: quantity), kind: kind.map { "\($0) \(bound)" } ?? bound, createdDate: time, timezone: zone))
                }
            }
            return values
        case "integer", "positiveInt", "unsignedInt":
            return Int(element.value ?? "").map { [OutcomeValue(.integer($0), kind: kind, createdDate: time, timezone: zone)] } ?? []
        case "decimal":
            return Double(element.value ?? "").map { [OutcomeValue(.double($0), kind: kind, createdDate: time, timezone: zone)] } ?? []
        default:
            if element.childValue("comparator") != nil {
                notes.append(MappingNote(.warning, at: "\(path()).comparator", "the comparator '\(element.childValue("comparator") ?? "")' has no CareKit equivalent: the value is kept without it"))
            }
            guard let value = number(element, path: path(), notes: &notes) else { return [] }
            return [OutcomeValue(value, units: unit(of: element), kind: kind, createdDate: time, timezone: zone)]
        }
    }

    /// The number of a Quantity: an integer when written without a fraction, else a double.
    private static func number(_ quantity: Element, path: @autoclosure () -> String, notes: inout [MappingNote]) -> OutcomeValue.Value? {
        guard let text = quantity.childValue("value") else {
            if quantity.child(named: "value") == nil {
                notes.append(MappingNote(.warning, at: path(), "a quantity without a value is not carried over"))
            }
            return nil
        }
        if !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }), let integer = Int(text) { return .integer(integer) }
        return Double(text).map(OutcomeValue.Value.double)
    }

    /// The unit of a Quantity: its UCUM code, else its human-readable unit.
    static func unit(of quantity: Element) -> String? {
        if quantity.childValue("system") == "http://unitsofmeasure.org", let code = quantity.childValue("code") { return code }
        return quantity.childValue("unit") ?? quantity.childValue("code")
    }

    /// The values an Observation carries: its value[x], then each component's (kind: the component's
    /// code), each stamped with `time`. dataAbsentReason is reported, not invented.
    static func observationValues(_ observation: FHIRPathElementNode, time: Date?, zone: TimeZone, notes: inout [MappingNote]) -> [OutcomeValue] {
        // Locations are written only into notes, so made only for one.
        func path() -> String { observation.path ?? "Observation" }
        var values: [OutcomeValue] = []
        let kind = codeKey(observation.element.child(named: "code"))
        values += value(of: observation.element, path: path, kind: kind, time: time, zone: zone, notes: &notes)
        for (index, component) in observation.element.children(named: "component").enumerated() {
            let componentKind = codeKey(component.child(named: "code"))
            values += value(of: component, path: { "\(path()).component[\(index)]" }, kind: componentKind, time: time, zone: zone, notes: &notes)
        }
        for index in values.indices where values.count > 1 {
            values[index].index = index
        }
        return values
    }

    /// The value[x] of an Observation or a component, typed.
    private static func value(of holder: Element, path: () -> String, kind: String?, time: Date?, zone: TimeZone, notes: inout [MappingNote]) -> [OutcomeValue] {
        guard let child = holder.children.first(where: { $0.name.hasPrefix("value") && $0.name.count > 5 }) else {
            if let reason = holder.child(named: "dataAbsentReason") {
                let text = reason.childValue("text") ?? reason.child(named: "coding")?.childValue("code") ?? "unknown"
                notes.append(MappingNote(.info, at: "\(path()).dataAbsentReason", "no value (data absent: \(text))"))
            }
            return []
        }
        func childPath() -> String { "\(path()).\(child.name)" }
        switch child.name {
        case "valueQuantity":
            return quantity(child, typeName: "Quantity", path: childPath, kind: kind, time: time, zone: zone, notes: &notes)
        case "valueRange":
            return quantity(child, typeName: "Range", path: childPath, kind: kind, time: time, zone: zone, notes: &notes)
        case "valueCodeableConcept":
            let text = PersonTransforms.conceptText(child) ?? ""
            return [OutcomeValue(.text(text), units: codeKey(child), kind: kind, createdDate: time, timezone: zone)]
        case "valueString":
            return [OutcomeValue(.text(child.value ?? ""), kind: kind, createdDate: time, timezone: zone)]
        case "valueBoolean":
            return [OutcomeValue(.boolean(child.value == "true"), kind: kind, createdDate: time, timezone: zone)]
        case "valueInteger":
            return Int(child.value ?? "").map { [OutcomeValue(.integer($0), kind: kind, createdDate: time, timezone: zone)] } ?? []
        case "valueDateTime":
            guard let text = child.value, let date = FHIRDateText.date(text, in: zone) else { return [] }
            return [OutcomeValue(.date(date), kind: kind, createdDate: time, timezone: zone)]
        case "valueTime":
            return [OutcomeValue(.text(child.value ?? ""), units: "time", kind: kind, createdDate: time, timezone: zone)]
        case "valuePeriod":
            let start = child.childValue("start") ?? "", end = child.childValue("end") ?? ""
            return [OutcomeValue(.text("\(start)/\(end)"), units: "period", kind: kind, createdDate: time, timezone: zone)]
        case "valueRatio":
            guard let numerator = child.child(named: "numerator"), let denominator = child.child(named: "denominator"),
                  let top = Double(numerator.childValue("value") ?? ""), let bottom = Double(denominator.childValue("value") ?? ""), bottom != 0
            else {
                notes.append(MappingNote(.warning, at: childPath(), "a ratio without both values is not carried over"))
                return []
            }
            let units = [unit(of: numerator), unit(of: denominator)].compactMap { $0 }.joined(separator: "/")
            return [OutcomeValue(.double(top / bottom), units: units.isEmpty ? nil : units, kind: kind, createdDate: time, timezone: zone)]
        case "valueSampledData":
            notes.append(MappingNote(.warning, at: childPath(), "SampledData is kept as text (its data string), not as numbers"))
            return [OutcomeValue(.text(child.childValue("data") ?? ""), units: "SampledData", kind: kind, createdDate: time, timezone: zone)]
        default:
            notes.append(MappingNote(.warning, at: childPath(), "\(child.name) has no CareKit value type and is not carried over"))
            return []
        }
    }

    /// A code's key for `kind`: `system|code` of the first coding, or the text.
    static func codeKey(_ concept: Element?) -> String? {
        guard let concept else { return nil }
        if let coding = concept.children(named: "coding").first(where: { $0.childValue("code") != nil }), let code = coding.childValue("code") {
            return coding.childValue("system").map { "\($0)|\(code)" } ?? code
        }
        return concept.childValue("text")
    }

    /// Every `system|code` of a CodeableConcept or Coding.
    static func codings(_ node: Element) -> [String] {
        var result: [String] = [], seen: Set<String> = []
        appendCodings(of: node, to: &result, seen: &seen)
        return result
    }

    /// ``codings(_:)`` of `node` appended to `result`, each only when `result` lacks it (the node read
    /// once: a concept's codings, or the node itself when it has none). A few codes are told apart by
    /// a scan, cheaper than hashing them; from 16 on, `seen` holds them all.
    static func appendCodings(of node: Element, to result: inout [String], seen: inout Set<String>) {
        func append(_ coding: Element) {
            guard let code = coding.childValue("code") else { return }
            let text = coding.childValue("system").map { $0 + "|" + code } ?? code
            if result.count < 16 {
                if !result.contains(text) { result.append(text) }
                return
            }
            if seen.isEmpty { seen = Set(result) }
            if seen.insert(text).inserted { result.append(text) }
        }
        var sawCoding = false
        for child in node.children where child.name == "coding" {
            sawCoding = true
            append(child)
        }
        if !sawCoding { append(node) }
    }

    /// Goal.target detail[x] as target values (kind: the measure's code).
    static func goalTargets(_ node: FHIRPathElementNode, zone: TimeZone, notes: inout [MappingNote]) -> [OutcomeValue] {
        let targets = node.typeName == "Goal" ? node.element.children(named: "target") : [node.element]
        var values: [OutcomeValue] = []
        for (index, target) in targets.enumerated() {
            let path = node.typeName == "Goal" ? "\(node.path ?? "Goal").target[\(index)]" : (node.path ?? "Goal.target")
            let kind = codeKey(target.child(named: "measure"))
            guard let detail = target.children.first(where: { $0.name.hasPrefix("detail") }) else {
                notes.append(MappingNote(.info, at: path, "a goal target without detail gives no target value"))
                continue
            }
            let type = String(detail.name.dropFirst("detail".count))
            let detailPath = "\(path).\(detail.name)"
            switch type {
            case "Quantity", "Range":
                values += quantity(FHIRPathElementNode(element: detail, typeName: type, context: type, path: detailPath),
                                   kind: kind, time: nil, zone: zone, notes: &notes)
            case "String":
                values.append(OutcomeValue(.text(detail.value ?? ""), kind: kind, timezone: zone))
            case "Boolean":
                values.append(OutcomeValue(.boolean(detail.value == "true"), kind: kind, timezone: zone))
            case "Integer":
                if let integer = Int(detail.value ?? "") { values.append(OutcomeValue(.integer(integer), kind: kind, timezone: zone)) }
            case "CodeableConcept":
                values.append(OutcomeValue(.text(PersonTransforms.conceptText(detail) ?? ""), units: codeKey(detail), kind: kind, timezone: zone))
            default:
                notes.append(MappingNote(.warning, at: detailPath, "a goal target of type \(type) is not carried over"))
            }
        }
        return values
    }
}
