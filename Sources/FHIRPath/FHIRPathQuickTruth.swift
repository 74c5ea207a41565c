import FHIRCore

extension FHIRPathExpression {
    /// The value of a boolean expression made of existence tests, told without running the evaluator
    /// when the data decides it: `true` or `false` exactly when a full evaluation gives that single
    /// boolean, nil when it needs the evaluator.
    ///
    /// Invariants are mostly such tests (`code.empty() or system.exists()`, `dataAbsentReason.empty() or
    /// value.empty()`), evaluated on every element of their type; the evaluator spends thousands of
    /// instructions building collections for each. This answers them from the tree, following the
    /// evaluator step for step: `and`, `or` and `implies` decide from their left side first, as the
    /// evaluator short-circuits, and any part it does not cover (a comparison, a function with
    /// arguments, a variable, a type name) makes the whole answer nil unless a side already decided.
    /// A path that selects nothing makes `where()`, `select()`, `first()` and the like on it select
    /// nothing too, whatever their arguments.
    ///
    /// - Parameters:
    ///   - element: the focus (`%context`), an element or a resource.
    ///   - context: its metadata context: a type name (`"Quantity"`) or a backbone path
    ///     (`"Observation.component"`); names are resolved in it as the evaluator resolves them.
    ///   - metadata: the FHIR metadata (R4) that `context` and the names are looked up in.
    ///   - trustsSingleCardinality: as ``FHIRPathEnvironment/trustsSingleCardinality``: an element that
    ///     may occur once is taken at its first occurrence.
    public func quickTruth(on element: Element, context: String, metadata: FHIRMetadata, trustsSingleCardinality: Bool) -> Bool? {
        QuickTruth(metadata: metadata, stopsAtFirstSingle: trustsSingleCardinality).truth(of: root, on: (element, context))
    }
}

/// The evaluator-free reading of ``FHIRPathExpression/quickTruth(on:context:metadata:)``.
private struct QuickTruth {
    /// An element a path selected, with the context its own children are resolved in (nil when the
    /// metadata does not know it, where this reading stops).
    typealias Selected = (element: Element, context: String?)

    let metadata: FHIRMetadata
    let stopsAtFirstSingle: Bool

    func truth(of node: FHIRPathNode, on focus: Selected) -> Bool? {
        switch node.kind {
        case .binary(let op, let leftNode, let rightNode) where op == .and || op == .or || op == .implies:
            guard let left = truth(of: leftNode, on: focus) else { return nil }
            if op == .and && !left { return false }
            if op == .or && left { return true }
            if op == .implies && !left { return true }
            guard let right = truth(of: rightNode, on: focus) else { return nil }
            return right  // the left side did not decide: the right side does
        case .binary(let op, let leftNode, let rightNode) where op == .less || op == .greater || op == .lessOrEqual || op == .greaterOrEqual:
            // Two single values compared (per-1's `start <= end`); anything else, or an undecidable
            // comparison (dates of different precision), is the evaluator's.
            guard let left = select(leftNode, from: focus), left.count == 1, left[0].element.value != nil,
                  let right = select(rightNode, from: focus), right.count == 1, right[0].element.value != nil,
                  case .ordered(let order) = FHIRPathComparison.order(value(of: left[0]), value(of: right[0]))
            else { return nil }
            switch op {
            case .less: return order < 0
            case .greater: return order > 0
            case .lessOrEqual: return order <= 0
            default: return order >= 0
            }
        case .call(let base?, let function, let arguments, nil) where arguments.isEmpty:
            switch function {
            case .empty:
                guard let count = count(base, from: focus) else { return nil }
                return count == 0
            case .exists:
                guard let count = count(base, from: focus) else { return nil }
                return count > 0
            case .hasValue:
                if case .identifier(let name) = base.kind, focus.element.resourceType != name {
                    return hasValue(named: name, of: focus)
                }
                guard let selected = select(base, from: focus) else { return nil }
                return selected.count == 1 && selected[0].element.value != nil
            case .not: return truth(of: base, on: focus).map { !$0 }
            default: return nil
            }
        default:
            return nil
        }
    }

    /// A selected element as the evaluator sees it, typed by its context.
    private func value(of selected: Selected) -> FHIRPathValue {
        .element(FHIRPathElementNode(element: selected.element, typeName: selected.context, context: selected.context))
    }

    /// How many elements a path selects from the focus, or nil when this reading cannot tell; a name
    /// on the focus is counted in place, without collecting what it selects.
    func count(_ node: FHIRPathNode, from focus: Selected) -> Int? {
        if case .identifier(let name) = node.kind, focus.element.resourceType != name {
            guard let (resolution, table) = resolve(name, in: focus) else { return nil }
            var count = 0
            forEachChild(named: name, of: focus.element, resolution: resolution, table: table) { _, _ in count += 1 }
            return count
        }
        return select(node, from: focus)?.count
    }

    /// `name.hasValue()` on the focus: one child selected, with a value.
    private func hasValue(named name: String, of focus: Selected) -> Bool? {
        guard let (resolution, table) = resolve(name, in: focus) else { return nil }
        var count = 0
        var valued = false
        forEachChild(named: name, of: focus.element, resolution: resolution, table: table) { position, _ in
            count += 1
            valued = focus.element.children[position].value != nil
        }
        return count == 1 && valued
    }

    /// What a path selects from the focus, or nil when this reading cannot tell.
    func select(_ node: FHIRPathNode, from focus: Selected) -> [Selected]? {
        switch node.kind {
        case .identifier(let name):
            if let type = focus.element.resourceType, type == name { return [focus] }
            return children(named: name, of: focus)
        case .member(let baseNode, let name):
            guard let base = select(baseNode, from: focus) else { return nil }
            var selected: [Selected] = []
            for item in base {
                guard let children = children(named: name, of: item) else { return nil }
                selected += children
            }
            return selected
        case .call(let base?, let function, _, _) where Self.emptyOnEmpty.contains(function):
            // Whatever the arguments, these select nothing from nothing; from something, the evaluator decides.
            guard let selected = select(base, from: focus), selected.isEmpty else { return nil }
            return []
        default:
            return nil
        }
    }

    /// The functions whose result on an empty collection is empty.
    private static let emptyOnEmpty: Set<FHIRPathFunction> = [.where, .select, .first, .last, .tail, .ofType, .distinct, .single]

    /// How a name resolves in a context: its definition there, whether children named it plus a type
    /// suffix are choices of it, and whether it may occur only once.
    private struct Resolution {
        let exact: ResolvedChild?
        let mayBeChoice: Bool
        let single: Bool
    }

    /// The resolution of `name` in the focus's context, with the context's children; nil when the
    /// metadata does not know the context.
    private func resolve(_ name: String, in focus: Selected) -> (Resolution, NameTable<ResolvedChild>)? {
        guard let context = focus.context, let table = metadata.children(of: context) else { return nil }
        let exact = table[name]
        let mayBeChoice = exact.map { $0.info.isChoice } ?? metadata.element(named: name, of: context)?.isChoice ?? true
        let single = stopsAtFirstSingle && exact.map { !$0.info.isArray && !$0.info.isChoice } ?? false
        return (Resolution(exact: exact, mayBeChoice: mayBeChoice, single: single), table)
    }

    /// Calls `body` with the position of each child `name` selects and the context of its children, as
    /// the evaluator's navigator selects them: those of that name, and where the context defines `name`
    /// as a choice (or does not define it), those named `name` plus the type suffix of one of its types.
    /// Names are read in place: a copy of an Element is a retain per field.
    private func forEachChild(named name: String, of element: Element, resolution: Resolution, table: NameTable<ResolvedChild>,
                              _ body: (Int, String?) -> Void) {
        let children = element.children
        let nameLength = name.utf8.count
        for position in children.indices {
            let childName = children[position].name
            if childName.hasSameBytes(as: name) {
                body(position, children[position].resourceType ?? resolution.exact?.type)
                if resolution.single { return }
            } else if resolution.mayBeChoice, childName.utf8.count > nameLength, childName.hasBytePrefix(name),
                      let suffixStart = childName.utf8.dropFirst(nameLength).first,
                      suffixStart >= UInt8(ascii: "A") && suffixStart <= UInt8(ascii: "Z"),
                      let resolved = table[childName], resolved.info.isChoice, resolved.info.name == name {
                body(position, resolved.type)
            }
        }
    }

    /// The children `name` selects, typed.
    private func children(named name: String, of parent: Selected) -> [Selected]? {
        guard let (resolution, table) = resolve(name, in: parent) else { return nil }
        var selected: [Selected] = []
        forEachChild(named: name, of: parent.element, resolution: resolution, table: table) { position, context in
            selected.append((parent.element.children[position], context))
        }
        return selected
    }
}
