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

    /// Steps applied to each item of the focus in turn.
    struct Path: Sendable {
        let steps: [Step]
        /// Whether a step may abandon the plan (then the path runs to its end, never stops early).
        let canFail: Bool
        /// Ended by `first()`: only the first item the steps yield.
        var firstOnly = false

        init(steps: [Step], canFail: Bool) {
            self.steps = steps
            self.canFail = canFail
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
    }

    /// A criterion evaluated on one item (the focus and `$this`).
    indirect enum Predicate: Sendable {
        /// `path op constant`, for `=`, `!=`, `<`, `>`, `<=`, `>=`.
        case compare(FHIRPathNode.BinaryOperator, Path, Constant)
        /// `and`, `or`, with the operators' three-valued logic and short circuits.
        case logic(FHIRPathNode.BinaryOperator, Predicate, Predicate)
        /// `path.exists()` (true) or `path.empty()` (false).
        case existence(Path, whenAny: Bool)
        /// Any other criterion, left to the tree walk (`node`'s singleton Boolean).
        case tree(FHIRPathNode)

        var usesTreeWalk: Bool {
            switch self {
            case .compare(_, let path, _), .existence(let path, _): return path.usesTreeWalk
            case .logic(_, let left, let right): return left.usesTreeWalk || right.usesTreeWalk
            case .tree: return true
            }
        }

        var canFail: Bool {
            switch self {
            case .compare(let op, let path, _): return path.canFail || !(op == .equal || op == .notEqual)
            case .logic(_, let left, let right): return left.canFail || right.canFail
            case .existence(let path, _): return path.canFail
            case .tree: return true
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

    init(body: Body) {
        self.body = body
        switch body {
        case .path(let path, _): usesTreeWalk = path.usesTreeWalk
        case .predicate(let predicate): usesTreeWalk = predicate.usesTreeWalk
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
        return FHIRPathPlan.Path(steps: steps + [step], canFail: canFail || stepCanFail)
    }
}
