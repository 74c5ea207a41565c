import FHIR

extension ResourceMapping {
    /// Every FHIRPath expression of the mapping.
    var allExpressions: [MappingExpression] {
        var all = [filter, deleteWhen].compactMap { $0 } + reports.map(\.condition)
        for entity in entities {
            all += [entity.each, entity.filter, entity.key].compactMap { $0 }
            for field in entity.fields {
                switch field.source {
                case .expression(let expression): all.append(expression)
                case .transform(_, let from, let options): all += [from].compactMap { $0 } + options.expressions.values
                case .reverse(_, let on, let value): all += [on, value]
                case .literal: break
                }
            }
        }
        return all
    }
}

extension MappingSet {
    /// The resource types whose content a mapping can read: the mapped types, the types a `reverse:` field
    /// reads, and the types a `resolve()` can reach, named by the `ofType()`, `is` or `as` that follows
    /// it. Nil when some `resolve()` is followed by none of them, so that any type can be reached. An
    /// import that streams its input keeps only these resources.
    public var readableTypes: Set<String>? {
        var types = Set(byType.keys)
        for mapping in byType.values {
            for entity in mapping.entities {
                for field in entity.fields {
                    if case .reverse(let type, _, _) = field.source { types.insert(type) }
                }
            }
            for expression in mapping.allExpressions {
                guard let reached = Self.typesReached(byResolveIn: expression.text) else { return nil }
                types.formUnion(reached)
            }
        }
        return types
    }

    /// The types named after each `resolve()` of `text`; nil when one is followed by no type.
    static func typesReached(byResolveIn text: String) -> Set<String>? {
        var types: Set<String> = []
        var rest = text[...]
        while let call = rest.range(of: "resolve()") {
            var after = rest[call.upperBound...].drop { $0.isWhitespace }
            let name: Substring
            if after.hasPrefix(".ofType(") {
                after = after.dropFirst(".ofType(".count).drop { $0.isWhitespace }
                name = after.prefix { $0 != ")" && !$0.isWhitespace }
            } else if after.hasPrefix("is ") || after.hasPrefix("as ") {
                name = after.dropFirst(3).drop { $0.isWhitespace }.prefix { $0.isLetter || $0.isNumber || $0 == "." }
            } else {
                return nil
            }
            let type = name.hasPrefix("FHIR.") ? String(name.dropFirst(5)) : String(name)
            guard FHIRMetadata.r4.isResourceType(type) else { return nil }
            types.insert(type)
            rest = rest[call.upperBound...]
        }
        return types
    }
}
