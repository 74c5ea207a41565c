import CareModel
import FHIR
import Foundation

/// The values of a mapping's fields: FHIRPath over the item being mapped, the named transforms, and
/// `reverse:` lookups of the resources that reference it.
extension MappingRun {
    // MARK: - Field values

    func describe(_ field: FieldMapping) -> String {
        switch field.source {
        case .expression(let expression): return expression.text
        case .transform(let name, let from, _): return "\(name.rawValue)(\(from?.text ?? ""))"
        case .literal(let value): return value
        case .reverse(let type, _, _): return "reverse \(type)"
        }
    }

    /// The raw items a field's source selects (for transforms: what `from` selects).
    func source(_ field: FieldMapping, item: FHIRPathElementNode) throws(MappingFailure) -> [FHIRPathElementNode] {
        switch field.source {
        case .expression(let expression):
            // What a field selects is used whole (a reference's parts, a concept's codings).
            let selected = try nodes(expression, on: item)
            if let coverage = engine.coverage {
                for node in selected { if let path = node.path { coverage.consumedWhole(path) } }
            }
            return selected
        case .transform(_, let from, _):
            let selected = try from.map { from throws(MappingFailure) in try nodes(from, on: item) } ?? [item]
            if let coverage = engine.coverage {
                for node in selected { if let path = node.path { coverage.consumedWhole(path) } }
            }
            return selected
        case .literal: return []
        case .reverse(let type, let on, let value):
            var result: [FHIRPathElementNode] = []
            for other in try reverseResources(type: type, on: on) {
                result += try nodes(value, on: FHIRPathElementNode(resource: other.element, path: other.key.type), resource: other.element)
            }
            return result
        }
    }

    /// The resources of `type` in the input whose `on` references name this resource: a lookup in an
    /// index of those references, built on first use for the whole input (never a scan per resource).
    func reverseResources(type: String, on: MappingExpression, target: ResourceKey? = nil) throws(MappingFailure) -> [(key: ResourceKey, element: Element)] {
        let cacheKey = "\(type)|\(on.location)|\(on.text)"
        let referrers: [ResourceKey: [ResourceKey]]
        if let known = engine.reverseIndexes.lookup(cacheKey, in: index) {
            referrers = known
        } else {
            var built: [ResourceKey: [ResourceKey]] = [:]
            for otherKey in index.keys(ofType: type) {
                guard let other = index.resource(otherKey) else { continue }
                var targets: Set<ResourceKey> = []
                for reference in try evaluate(on, on: FHIRPathElementNode(resource: other, path: type), resource: other) {
                    if let text = Self.referenceText(reference), case .found(let target) = index.resolve(text), targets.insert(target).inserted {
                        built[target, default: []].append(otherKey)
                    }
                }
            }
            engine.reverseIndexes.store(built, for: cacheKey, in: index)
            referrers = built
        }
        return (referrers[target ?? key] ?? []).compactMap { otherKey in index.resource(otherKey).map { (otherKey, $0) } }
    }

    mutating func personName(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> PersonName {
        guard let field else { return PersonName() }
        return PersonTransforms.personName(try source(field, item: item).filter { $0.typeName == "HumanName" }, notes: &notes)
    }

    mutating func values(_ field: FieldMapping?, item: FHIRPathElementNode, time: Date?) throws(MappingFailure) -> [OutcomeValue] {
        guard let field, case .transform(let transform, _, let transformOptions) = field.source else { return [] }
        let kind = transformOptions.values["kind"]
        var result: [OutcomeValue] = []
        for node in try source(field, item: item) {
            switch transform {
            case .observationValues: result += ValueTransforms.observationValues(node, time: time, zone: zone, notes: &notes)
            case .questionnaireAnswers: result += QuestionnaireAnswerValues.values(node, time: time, zone: zone, notes: &notes)
            default:
                // Targets and doses: a Goal gives its targets, a quantity (or range, or number) itself.
                if node.typeName == "Goal" || node.typeName == "Goal.target" {
                    result += ValueTransforms.goalTargets(node, zone: zone, notes: &notes)
                } else {
                    result += ValueTransforms.quantity(node, kind: kind, time: time, zone: zone, notes: &notes)
                }
            }
        }
        return result
    }

    func codings(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> [String] {
        guard let field else { return [] }
        var result: [String] = [], seen: Set<String> = []
        for node in try source(field, item: item) { ValueTransforms.appendCodings(of: node.element, to: &result, seen: &seen) }
        return result
    }

    func string(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> String? {
        if case .expression(let expression)? = field?.source { return try firstString(expression, on: item) }
        return try stringList(field, item: item).first
    }

    func stringList(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> [String] {
        guard let field else { return [] }
        switch field.source {
        case .literal(let value): return [value]
        case .transform(.codeableConcept, _, _):
            return try source(field, item: item).compactMap { PersonTransforms.conceptText($0.element) }
        case .expression(let expression):
            return try strings(expression, on: item)
        case .reverse(_, _, let value):
            return try source(field, item: item).map { node throws(MappingFailure) in
                guard let text = node.element.value ?? PersonTransforms.conceptText(node.element) else {
                    throw MappingFailure(at: node.path ?? key.type, "`\(value.text)` (\(value.location)) gives a \(node.typeName ?? "element"), not text")
                }
                return text
            }
        case .transform:
            return []
        }
    }

    func boolean(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> Bool? {
        guard let text = try string(field, item: item) else { return nil }
        guard text == "true" || text == "false" else {
            throw MappingFailure(at: key.type, "'\(field.map(describe) ?? "")' gives '\(text)', not true or false (\(field?.location.description ?? ""))")
        }
        return text == "true"
    }

    func date(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> Date? {
        guard let field, case .expression(let expression) = field.source else { return nil }
        return try dateValue(expression, on: item)
    }

    /// The date `expression` gives; with `endingPeriod`, read as a Period's end (see ``FHIRDates/periodEnd(_:in:)``).
    func dateValue(_ expression: MappingExpression, on item: FHIRPathElementNode, endingPeriod: Bool = false) throws(MappingFailure) -> Date? {
        guard let text = try firstString(expression, on: item) else { return nil }
        guard let date = endingPeriod ? FHIRDates.periodEnd(text, in: zone) : FHIRDateText.date(text, in: zone) else {
            throw MappingFailure(at: key.type, "`\(expression.text)` (\(expression.location)) gives '\(text)', not a date")
        }
        return date
    }

    /// The entity ids of the resources `field` references, which must be of type `expecting`.
    func references(_ field: FieldMapping, item: FHIRPathElementNode, expecting type: String) throws(MappingFailure) -> [String] {
        try referenceKeys(field, item: item).map { target throws(MappingFailure) in
            guard target.type == type else {
                throw MappingFailure(at: key.type, "`\(describe(field))` names a \(target.type) (\(target)), not a \(type)")
            }
            return options.entityID(target)
        }
    }

    /// The keys of the resources `field` references: in the input, or (for `Type/id`) possibly in the store.
    func referenceKeys(_ field: FieldMapping, item: FHIRPathElementNode) throws(MappingFailure) -> [ResourceKey] {
        var keys: [ResourceKey] = []
        for node in try source(field, item: item) {
            if node.element.resourceType != nil, let found = ResourceKey.of(node.element, fullUrl: nil) {
                keys.append(found)
                continue
            }
            guard let text = node.element.childValue("reference") ?? node.element.value else {
                continue  // a Reference with only a display or identifier: nothing to follow
            }
            if text.hasPrefix("#") { continue }
            switch index.resolve(text) {
            case .found(let found), .outside(let found): keys.append(found)
            case .unresolved(let reason):
                throw MappingFailure(at: node.path ?? key.type, "the reference '\(text)' resolves nowhere: \(reason)")
            }
        }
        return keys
    }

    // MARK: - Evaluation

    func truth(_ expression: MappingExpression, on item: FHIRPathElementNode) throws(MappingFailure) -> Bool {
        let result = try evaluate(expression, on: item)
        guard let first = result.first else { return false }
        switch first {
        case .boolean(let value): return value
        case .element(let node) where node.typeName == "boolean": return node.element.value == "true"
        default: return true
        }
    }

    func nodes(_ expression: MappingExpression, on item: FHIRPathElementNode, resource: Element? = nil) throws(MappingFailure) -> [FHIRPathElementNode] {
        try evaluate(expression, on: item, resource: resource).compactMap { value in
            switch value {
            case .element(let node): return node
            case .string(let text): return FHIRPathElementNode(element: Element(name: "value", value: text), typeName: "string", context: nil, path: nil)
            default: return FHIRPathElementNode(element: Element(name: "value", value: value.description), typeName: value.typeName, context: nil, path: nil)
            }
        }
    }

    func strings(_ expression: MappingExpression, on item: FHIRPathElementNode) throws(MappingFailure) -> [String] {
        try evaluate(expression, on: item).map { value throws(MappingFailure) in try text(of: value, from: expression) }
    }

    /// A value of `expression` as text; a complex element has none.
    private func text(of value: FHIRPathValue, from expression: MappingExpression) throws(MappingFailure) -> String {
        switch value {
        case .element(let node):
            guard let text = node.element.value else {
                throw MappingFailure(
                    at: node.path ?? key.type,
                    "`\(expression.text)` (\(expression.location)) gives a \(node.typeName ?? "complex element"), not text")
            }
            return text
        case .string(let text): return text
        case .date(let value), .dateTime(let value): return value.fhirText
        default: return value.description
        }
    }

    /// The text of the first value `expression` gives, as ``strings(_:on:)`` writes it; nil when it gives
    /// none. Every value of the union operand it comes from must be text, as ``strings(_:on:)`` requires of
    /// all; later operands are not evaluated (``FHIRPathExpression/evaluateLeadingOperand(context:resource:rootResource:environment:)``).
    func firstString(_ expression: MappingExpression, on item: FHIRPathElementNode) throws(MappingFailure) -> String? {
        try evaluate(expression, on: item, leadingOperandOnly: true).map { value throws(MappingFailure) in try text(of: value, from: expression) }.first
    }

    /// `expression`'s values on `item`; with `leadingOperandOnly`, those of a union's first operand that
    /// has any (``FHIRPathExpression/evaluateLeadingOperand(context:resource:rootResource:environment:)``).
    func evaluate(
        _ expression: MappingExpression, on item: FHIRPathElementNode, resource: Element? = nil, leadingOperandOnly: Bool = false
    ) throws(MappingFailure) -> [FHIRPathValue] {
        do {
            let owner = resource ?? self.resource
            return leadingOperandOnly
                ? try expression.compiled.evaluateLeadingOperand(context: [.element(item)], resource: owner, rootResource: owner, environment: environment)
                : try expression.compiled.evaluate(context: [.element(item)], resource: owner, rootResource: owner, environment: environment)
        } catch {
            throw MappingFailure(at: item.path ?? key.type, "mapping \(expression.location): `\(expression.text)`: \(error.message)")
        }
    }

    static func referenceText(_ value: FHIRPathValue) -> String? {
        switch value {
        case .element(let node): return node.element.childValue("reference") ?? node.element.value
        case .string(let text): return text
        default: return nil
        }
    }
}
