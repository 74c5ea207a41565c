import FHIRCore

extension FHIRPathExpression {
    /// The resource types the expression's `resolve()` calls can reach, as the `ofType()`, `is` or `as`
    /// applied to each result names them (`subject.resolve() is Patient`). Nil when some `resolve()` is
    /// used without one, or with one that names no R4 resource type: it can then reach any type.
    public var typesReachedByResolve: Set<String>? {
        var types: Set<String> = []
        var anyType = false
        // `narrowedTo`: the type the parent applies to this node's result, if any.
        func visit(_ node: FHIRPathNode?, narrowedTo type: FHIRPathTypeSpecifier?) {
            guard let node else { return }
            switch node.kind {
            case .call(let base, let function, let arguments, let specifier):
                if function == .resolve {
                    let name = type.flatMap { $0.namespace == nil || $0.namespace == "FHIR" ? $0.name : nil }
                    if let name, FHIRMetadata.r4.isResourceType(name) { types.insert(name) } else { anyType = true }
                }
                visit(base, narrowedTo: function.takesTypeSpecifier ? specifier : nil)
                for argument in arguments { visit(argument, narrowedTo: nil) }
            case .typeOperator(_, let operand, let specifier):
                visit(operand, narrowedTo: specifier)
            case .member(let base, _):
                visit(base, narrowedTo: nil)
            case .indexer(let base, let index):
                visit(base, narrowedTo: nil)
                visit(index, narrowedTo: nil)
            case .binary(_, let left, let right):
                visit(left, narrowedTo: nil)
                visit(right, narrowedTo: nil)
            case .unary(_, let operand):
                visit(operand, narrowedTo: nil)
            case .literal, .empty, .identifier, .this, .index, .total, .variable:
                break
            }
        }
        visit(root, narrowedTo: nil)
        return anyType ? nil : types
    }
}
