import FHIRCore

/// The compiled form of the mapping-style part of FHIRPath: paths of member steps, `ofType()` and
/// `where()` over the focus, ended by `first()`, `exists()`, `empty()` or `count()`, and comparisons of
/// such paths with a literal joined by `and`/`or`. ``FHIRPathExpression`` compiles it once, beside the
/// parsed tree, and evaluates it by ``FHIRPathPlanRun`` when it can.
///
/// Why: the tree walk boxes every step's result into a new collection, copies each node's payload to
/// switch on it, and evaluates a `where` criterion through a fresh one-item collection and scope per
/// item. A plan streams each item through all its steps depth first (the order of a step-by-step walk:
/// the children of the first item before those of the second) and keeps a criterion's one value
/// inline, so that `Observation.code.coding.where(system = 'http://loinc.org').code` allocates only its
/// result.
///
/// A plan never decides an error: whatever would raise one (several items where one is expected, an
/// operator on incompatible types, a criterion left to the tree walk) abandons the plan, and the
/// expression is evaluated again by the tree walk, which raises exactly what it always did. Nothing is
/// observed in between (a plan is used only without `trace()` output or selection observers); with
/// tracked paths, what a plan yields carries the location the tree walk would give it.
/// A plan stops early (`first()`, `exists()`, a comparison's one value) only where no step can fail, so
/// that no error the tree walk would raise on a later item is skipped.
struct FHIRPathPlan: Sendable {
    /// What the plan yields.
    enum Body: Sendable {
        /// The path's items, or what its ``Terminal`` makes of them.
        case path(Path, Terminal)
        /// `[true]`, `[false]` or `[]` (unknown), as the operators yield.
        case predicate(Predicate)
    }

    /// What a path ends with.
    enum Terminal: Sendable {
        case all, first, exists, empty, count
    }

    /// Where a path starts: the focus, or a standard variable (`%resource`, `%rootResource`,
    /// `%context`), which the tree walk reads from the evaluation's inputs unless the environment
    /// defines a variable of that name (then the plan is abandoned).
    enum Start: Sendable, Equatable {
        case focus, resource, rootResource, context
    }

    /// Steps applied to each item of the focus in turn.
    struct Path: Sendable {
        let steps: [Step]
        /// Whether a step may abandon the plan (then the path runs to its end, never stops early).
        let canFail: Bool
        /// Ended by `first()`: only the first item the steps yield.
        var firstOnly = false
        /// What the steps start from.
        var start: Start = .focus

        init(steps: [Step], canFail: Bool, start: Start = .focus) {
            self.steps = steps
            self.canFail = canFail
            self.start = start
        }

        /// Whether the path reads the evaluation's inputs (a variable, or the resolver of `resolve()`).
        var needsInputs: Bool {
            start != .focus || steps.contains { step in
                switch step {
                case .resolve: return true
                case .filter(let criterion): return criterion.needsInputs
                case .child, .ofType: return false
                }
            }
        }

        var usesTreeWalk: Bool {
            steps.contains { step in
                if case .filter(let criterion) = step { return criterion.usesTreeWalk }
                return false
            }
        }
    }

    enum Step: Sendable {
        /// Children named `name` (a choice element's typed children included); `isIdentifier` for a
        /// name starting a path, which also selects a resource of that type itself.
        ///
        /// The resolutions are unretained, so that reading the step (which a walk does for every item
        /// at every step) retains nothing but the name: they belong to the parsed node the step was
        /// compiled from (``FHIRPathNode/resolutions``), and a plan is evaluated only through the
        /// ``FHIRPathExpression`` that holds both its plan and that tree. (Holding them in the plan as
        /// well would change the layout of the public `FHIRPathExpression`, which the modules that
        /// store one are not always rebuilt for.)
        case child(name: String, resolutions: Unmanaged<StepResolutions>, isIdentifier: Bool)
        /// `ofType(type)`: items of exactly that type. Only types the R4 metadata knows are compiled,
        /// so that the step never fails.
        case ofType(FHIRPathTypeSpecifier)
        /// `where(criterion)`: items for which the criterion is true.
        case filter(Predicate)
        /// `resolve()`: the resource each Reference (or uri) names, found by the environment's
        /// resolver; a contained reference (`#id`) or a Bundle as `%rootResource` abandons the plan
        /// (the tree walk searches those).
        case resolve
    }

    /// A criterion evaluated on one item (the focus and `$this`).
    indirect enum Predicate: Sendable {
        /// `path op constant`, for `=`, `!=`, `<`, `>`, `<=`, `>=`.
        case compare(FHIRPathNode.BinaryOperator, Path, Constant)
        /// `and`, `or`, with the operators' three-valued logic and short circuits.
        case logic(FHIRPathNode.BinaryOperator, Predicate, Predicate)
        /// `path.exists()` (true) or `path.empty()` (false).
        case existence(Path, whenAny: Bool)
        /// `criterion.not()`.
        case not(Predicate)
        /// `path is type` (a type the R4 metadata knows): the path's single item is of that type or
        /// one derived from it.
        case isType(Path, FHIRPathTypeSpecifier)
        /// `path.startsWith('prefix')`: the path's single item, a string, starts with the literal.
        case startsWith(Path, String)
        /// Any other criterion, left to the tree walk (`node`'s singleton Boolean).
        case tree(FHIRPathNode)

        var usesTreeWalk: Bool {
            switch self {
            case .compare(_, let path, _), .existence(let path, _), .isType(let path, _), .startsWith(let path, _):
                return path.usesTreeWalk
            case .logic(_, let left, let right): return left.usesTreeWalk || right.usesTreeWalk
            case .not(let operand): return operand.usesTreeWalk
            case .tree: return true
            }
        }

        var canFail: Bool {
            switch self {
            case .compare(let op, let path, _): return path.canFail || !(op == .equal || op == .notEqual)
            case .logic(_, let left, let right): return left.canFail || right.canFail
            case .existence(let path, _): return path.canFail
            case .not(let operand): return operand.canFail
            // Several items, or an item that is no string, are errors of the tree walk.
            case .isType, .startsWith: return true
            case .tree: return true
            }
        }

        var needsInputs: Bool {
            switch self {
            case .compare(_, let path, _), .existence(let path, _), .isType(let path, _), .startsWith(let path, _):
                return path.needsInputs
            case .logic(_, let left, let right): return left.needsInputs || right.needsInputs
            case .not(let operand): return operand.needsInputs
            case .tree: return false
            }
        }
    }

    /// The right side of a comparison: a literal, or `%ucum`, `%sct`, `%loinc` (which the environment's
    /// variables may redefine, looked up at each evaluation as the tree walk does).
    enum Constant: Sendable {
        case literal(FHIRPathPlanOperand)
        case variable(name: String, standard: FHIRPathPlanOperand)
    }

    let body: Body
    /// Whether a criterion is left to the tree walk, which then needs `%resource` and `%rootResource`
    /// (copying them for every evaluation costs a generic copy of each optional field).
    let usesTreeWalk: Bool
    /// Whether the plan reads the evaluation's inputs (`%resource`, `%rootResource`, `%context`, the
    /// resolver of `resolve()`), which the run then keeps.
    let needsInputs: Bool

    init(body: Body) {
        self.body = body
        switch body {
        case .path(let path, _):
            usesTreeWalk = path.usesTreeWalk
            needsInputs = path.needsInputs
        case .predicate(let predicate):
            usesTreeWalk = predicate.usesTreeWalk
            needsInputs = predicate.needsInputs
        }
    }

    /// The deepest expression compiled into a plan.
    static let maximumDepth = 24

    /// The plan of `node`, or nil when part of it is beyond what plans do.
    static func compile(_ node: FHIRPathNode) -> FHIRPathPlan? {
        // A plan's walk recurses once per step: deep expressions stay with the tree walk, which guards
        // its stack.
        guard node.depth <= maximumDepth else { return nil }
        if let path = compilePath(node) { return FHIRPathPlan(body: .path(path, path.firstOnly ? .first : .all)) }
        if case .call(let base, let function, let arguments, nil) = node.kind, arguments.isEmpty {
            let terminal: Terminal?
            switch function {
            case .exists: terminal = .exists
            case .empty: terminal = .empty
            case .count: terminal = .count
            default: terminal = nil
            }
            if let terminal, let path = base.map(compilePath) ?? Path(steps: [], canFail: false) {
                return FHIRPathPlan(body: .path(path, terminal))
            }
        }
        if let predicate = compilePredicate(node, allowsTree: false) { return FHIRPathPlan(body: .predicate(predicate)) }
        return nil
    }

    /// `node` as a path from the focus, or nil.
    private static func compilePath(_ node: FHIRPathNode) -> Path? {
        switch node.kind {
        case .call(let base, .first, let arguments, nil):
            guard arguments.isEmpty, var path = base.map(compilePath) ?? Path(steps: [], canFail: false), !path.firstOnly else { return nil }
            path.firstOnly = true
            return path
        case .identifier(let name):
            guard let resolutions = node.resolutions else { return nil }
            return Path(steps: [.child(name: name, resolutions: Unmanaged.passUnretained(resolutions), isIdentifier: true)], canFail: false)
        case .this:
            return Path(steps: [], canFail: false)
        case .variable(let name):
            switch name {
            case "resource": return Path(steps: [], canFail: false, start: .resource)
            case "rootResource": return Path(steps: [], canFail: false, start: .rootResource)
            case "context": return Path(steps: [], canFail: false, start: .context)
            default: return nil
            }
        case .call(let base, .resolve, let arguments, nil):
            guard arguments.isEmpty, let path = base.map(compilePath) ?? Path(steps: [], canFail: false) else { return nil }
            return path.appending(.resolve, canFail: false)
        case .member(let base, let name):
            guard let resolutions = node.resolutions, let path = compilePath(base) else { return nil }
            return path.appending(.child(name: name, resolutions: Unmanaged.passUnretained(resolutions), isIdentifier: false), canFail: false)
        case .call(let base, .ofType, let arguments, let type?):
            guard arguments.isEmpty, FHIRPathTypes.isKnown(type, metadata: .r4),
                  let path = base.map(compilePath) ?? Path(steps: [], canFail: false) else { return nil }
            return path.appending(.ofType(type), canFail: false)
        case .call(let base, .where, let arguments, nil):
            guard arguments.count == 1, let criterion = compilePredicate(arguments[0], allowsTree: true),
                  let path = base.map(compilePath) ?? Path(steps: [], canFail: false) else { return nil }
            return path.appending(.filter(criterion), canFail: criterion.canFail)
        default:
            return nil
        }
    }

    /// `node` as a criterion; with `allowsTree`, what plans do not cover is left to the tree walk
    /// (except what reads `$index` or `$total`, which a plan does not track).
    private static func compilePredicate(_ node: FHIRPathNode, allowsTree: Bool) -> Predicate? {
        let tree: Predicate? = allowsTree && !readsIndex(node) ? .tree(node) : nil
        switch node.kind {
        case .binary(let op, let left, let right):
            switch op {
            case .and, .or:
                guard let a = compilePredicate(left, allowsTree: allowsTree),
                      let b = compilePredicate(right, allowsTree: allowsTree) else { return tree }
                return .logic(op, a, b)
            case .equal, .notEqual, .less, .greater, .lessOrEqual, .greaterOrEqual:
                guard let path = compilePath(left), let constant = compileConstant(right) else { return tree }
                return .compare(op, path, constant)
            default:
                return tree
            }
        case .call(let base, let function, let arguments, nil) where (function == .exists || function == .empty) && arguments.isEmpty:
            guard let path = base.map(compilePath) ?? Path(steps: [], canFail: false) else { return tree }
            return .existence(path, whenAny: function == .exists)
        case .call(let base?, .not, let arguments, nil) where arguments.isEmpty:
            // Only a criterion (whose value is a Boolean or nothing) is negated here; `not()` of
            // anything else is the tree walk's.
            guard let operand = compilePredicate(base, allowsTree: false) else { return tree }
            return .not(operand)
        case .call(let base?, .startsWith, let arguments, nil):
            guard arguments.count == 1, case .literal(.string(let prefix)) = arguments[0].kind,
                  let path = compilePath(base) else { return tree }
            return .startsWith(path, prefix)
        case .typeOperator(false, let operand, let type):
            guard FHIRPathTypes.isKnown(type, metadata: .r4), let path = compilePath(operand) else { return tree }
            return .isType(path, type)
        default:
            return tree
        }
    }

    private static func compileConstant(_ node: FHIRPathNode) -> Constant? {
        switch node.kind {
        case .literal(let value):
            return .literal(FHIRPathPlanOperand(value))
        case .variable(let name):
            switch name {
            case "ucum": return .variable(name: name, standard: FHIRPathPlanOperand(.string("http://unitsofmeasure.org")))
            case "sct": return .variable(name: name, standard: FHIRPathPlanOperand(.string("http://snomed.info/sct")))
            case "loinc": return .variable(name: name, standard: FHIRPathPlanOperand(.string("http://loinc.org")))
            default: return nil
            }
        default:
            return nil
        }
    }

    /// Whether `node` or what it contains reads `$index` or `$total`.
    private static func readsIndex(_ node: FHIRPathNode) -> Bool {
        switch node.kind {
        case .index, .total: return true
        case .literal, .empty, .identifier, .this, .variable: return false
        case .member(let base, _): return readsIndex(base)
        case .call(let base, _, let arguments, _): return (base.map(readsIndex) ?? false) || arguments.contains(where: readsIndex)
        case .indexer(let base, let index): return readsIndex(base) || readsIndex(index)
        case .binary(_, let left, let right): return readsIndex(left) || readsIndex(right)
        case .unary(_, let operand), .typeOperator(_, let operand, _): return readsIndex(operand)
        }
    }
}

extension FHIRPathPlan.Path {
    /// The path followed by `step`; nil after `first()`, which only ends a path.
    func appending(_ step: FHIRPathPlan.Step, canFail stepCanFail: Bool) -> FHIRPathPlan.Path? {
        guard !firstOnly else { return nil }
        return FHIRPathPlan.Path(steps: steps + [step], canFail: canFail || stepCanFail, start: start)
    }
}
