import FHIR

extension ResourceMapping {
    /// Every FHIRPath expression of the mapping.
    var allExpressions: [MappingExpression] {
        var all = [filter, deleteWhen].compactMap { $0 } + reports.map(\.condition)
        for entity in entities {
            all += [entity.each, entity.filter, entity.key].compactMap { $0 }
            for rule in entity.members { all += [rule.on, rule.filter, rule.from, rule.seen].compactMap { $0 } }
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
    /// it (``FHIRPathExpression/typesReachedByResolve``). Nil when some `resolve()` is followed by none
    /// of them, so that any type can be reached. An import keeps only these resources.
    public var readableTypes: Set<String>? {
        var types = Set(byType.keys)
        for mapping in byType.values {
            for entity in mapping.entities {
                for field in entity.fields {
                    if case .reverse(let type, _, _) = field.source { types.insert(type) }
                }
                // A care team's members: the resources its rules read, the practitioners they name and
                // the roles (`%roles`) those practitioners have.
                if !entity.members.isEmpty { types.formUnion(["Practitioner", "PractitionerRole"]) }
                for rule in entity.members { if let type = rule.reverseType { types.insert(type) } }
            }
            for expression in mapping.allExpressions {
                guard let reached = expression.compiled.typesReachedByResolve else { return nil }
                types.formUnion(reached)
            }
        }
        return types
    }
}
