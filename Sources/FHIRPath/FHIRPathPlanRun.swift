import FHIRCore

/// Raised inside a plan's evaluation where the tree walk would raise an error or decide something
/// plans leave to it: the plan is abandoned and the tree walk evaluates the expression instead.
struct FHIRPathPlanAbandoned: Error {}

/// Collects what a path yields and stops at `limit` items. It keeps the items (a path's value), or
/// only counts them (`exists()`), or compares the first with a constant as it passes (a criterion
/// such as `system = 'http://loinc.org'`), which copies no element node at all. The first item is
/// kept without an optional: copying an optional of ``FHIRPathValue`` goes through the runtime's
/// generic copy.
struct FHIRPathPlanCollector {
    enum Mode {
        case keep
        case count
        /// `first op constant`, for `=`, `!=`, `<`, `>`, `<=`, `>=`.
        case compare(FHIRPathNode.BinaryOperator, FHIRPathValue)
    }

    let limit: Int
    let mode: Mode
    private(set) var count = 0
    /// The first item when ``count`` is positive and the mode keeps items (a placeholder otherwise).
    private(set) var first: FHIRPathValue = .boolean(false)
    private var rest: [FHIRPathValue] = []
    /// In compare mode, once an item passed: the comparison of the first item with the constant.
    private(set) var verdict: Bool?
    /// In compare mode: the first item cannot be ordered against the constant (the tree walk raises
    /// an error there).
    private(set) var incomparable = false

    init(limit: Int, mode: Mode = .keep) {
        self.limit = limit
        self.mode = mode
    }

    /// Adds `value`; false when the collector is full.
    mutating func add(_ value: FHIRPathValue) -> Bool {
        switch mode {
        case .keep: if count == 0 { first = value } else { rest.append(value) }
        case .count: break
        case .compare(let op, let constant): if count == 0 { judge(op, value, constant) }
        }
        count += 1
        return count < limit
    }

    /// ``add(_:)`` for an element node, copied only when the collector keeps items.
    mutating func add(node: FHIRPathElementNode) -> Bool {
        switch mode {
        case .keep:
            return add(.element(node))
        case .count:
            break
        case .compare(let op, let constant):
            if count == 0 {
                // A string-typed element against a string: its text is compared in place.
                if op == .equal || op == .notEqual, case .string(let text) = constant, let value = node.element.value,
                   let typeName = node.typeName, FHIRPathTypes.systemType(ofPrimitive: typeName) == "String" {
                    verdict = (value == text) == (op == .equal)
                } else {
                    judge(op, .element(node), constant)
                }
            }
        }
        count += 1
        return count < limit
    }

    private mutating func judge(_ op: FHIRPathNode.BinaryOperator, _ value: FHIRPathValue, _ constant: FHIRPathValue) {
        switch op {
        case .equal, .notEqual:
            verdict = FHIRPathComparison.equal(value, constant).map { $0 == (op == .equal) }
        default:
            guard let x = value.primitive, let y = constant.primitive else { incomparable = true; return }
            switch FHIRPathComparison.order(x, y) {
            case .ordered(let order):
                switch op {
                case .less: verdict = order < 0
                case .greater: verdict = order > 0
                case .lessOrEqual: verdict = order <= 0
                default: verdict = order >= 0
                }
            case .unknown: verdict = nil
            case .incompatible: incomparable = true
            }
        }
    }

    /// Forgets every item but the first (a path ended by `first()`); a comparison's verdict is the
    /// first item's already.
    mutating func keepOnlyFirst() {
        count = min(count, 1)
        rest = []
    }

    var values: [FHIRPathValue] {
        guard count > 0 else { return [] }
        if rest.isEmpty { return [first] }
        return [first] + rest
    }
}

/// One evaluation of a ``FHIRPathPlan``: the plan's steps applied to the focus, with the environment
/// the expression is evaluated in. Made per evaluation; the tree walk's evaluator is made only when a
/// criterion is left to it. A class: the navigation closures call back into it, and a struct would
/// be copied whole at each step to keep its accesses exclusive.
final class FHIRPathPlanRun {
    let plan: FHIRPathPlan
    let metadata: FHIRMetadata
    /// The environment's `%name` values.
    let variables: [String: [FHIRPathValue]]
    let navigator: FHIRPathNavigator
    /// What the tree walk's evaluator is made from, kept only for plans that leave a criterion to it
    /// (copying the environment and the resources costs more than most evaluations).
    private let treeWalk: TreeWalkInputs?
    private var evaluator: FHIRPathEvaluator?

    private struct TreeWalkInputs {
        let source: FHIRPathSource
        let environment: FHIRPathEnvironment
        let context: [FHIRPathValue]
        let resource: Element?
        let rootResource: Element?
    }

    /// Whether a plan may stand for the tree walk in `environment`: nothing observes the walk, and the
    /// metadata is the R4 metadata the plan's `ofType()` steps were checked against.
    static func applies(to environment: FHIRPathEnvironment) -> Bool {
        environment.trace == nil && environment.observeSelection == nil && !environment.tracksPaths
            && environment.metadata === FHIRMetadata.r4
    }

    init(plan: FHIRPathPlan, source: FHIRPathSource, environment: FHIRPathEnvironment, context: [FHIRPathValue],
         resource: Element?, rootResource: Element?) {
        self.plan = plan
        self.metadata = environment.metadata
        self.variables = environment.variables
        self.navigator = FHIRPathNavigator(metadata: environment.metadata, stopsAtFirstSingle: environment.trustsSingleCardinality)
        self.treeWalk = plan.usesTreeWalk
            ? TreeWalkInputs(source: source, environment: environment, context: context, resource: resource, rootResource: rootResource)
            : nil
    }

    /// The plan's value on `focus` (the context), or nil when the plan was abandoned.
    func run<Focus: Collection<FHIRPathValue>>(focus: Focus) -> [FHIRPathValue]? {
        do {
            switch plan.body {
            case .path(let path, let terminal):
                let limit: Int
                switch terminal {
                case .all, .count: limit = .max
                case .first, .exists, .empty: limit = 1
                }
                let collector = try collect(path, from: focus, limit: limit)
                switch terminal {
                case .all: return collector.values
                case .first: return collector.count > 0 ? [collector.first] : []
                case .exists: return [.boolean(collector.count > 0)]
                case .empty: return [.boolean(collector.count == 0)]
                case .count: return [.integer(collector.count)]
                }
            case .predicate(let predicate):
                return try test(predicate, focus: focus).map { [.boolean($0)] } ?? []
            }
        } catch {
            return nil
        }
    }

    // MARK: Paths

    /// What `path` yields from `focus`, up to `limit` items (all when the path may fail: no item may be
    /// skipped on which the tree walk would fail). A path ended by `first()` yields its first item.
    private func collect<Focus: Collection<FHIRPathValue>>(_ path: FHIRPathPlan.Path, from focus: Focus, limit: Int,
                                                           mode: FHIRPathPlanCollector.Mode = .keep)
        throws(FHIRPathPlanAbandoned) -> FHIRPathPlanCollector {
        let wanted = path.firstOnly ? 1 : limit
        var collector = FHIRPathPlanCollector(limit: path.canFail ? .max : wanted, mode: mode)
        for item in focus {
            guard try walk(path.steps, from: 0, value: item, into: &collector) else { break }
        }
        if path.firstOnly { collector.keepOnlyFirst() }
        return collector
    }

    /// ``collect(_:from:limit:)`` from one element node.
    private func collect(_ path: FHIRPathPlan.Path, from node: FHIRPathElementNode, limit: Int,
                         mode: FHIRPathPlanCollector.Mode)
        throws(FHIRPathPlanAbandoned) -> FHIRPathPlanCollector {
        let wanted = path.firstOnly ? 1 : limit
        var collector = FHIRPathPlanCollector(limit: path.canFail ? .max : wanted, mode: mode)
        _ = try walk(path.steps, from: 0, node: node, into: &collector)
        if path.firstOnly { collector.keepOnlyFirst() }
        return collector
    }

    /// Applies `steps[index...]` to `value`, adding what they yield to `collector`; false once it is full.
    private func walk(_ steps: [FHIRPathPlan.Step], from index: Int, value: FHIRPathValue,
                               into collector: inout FHIRPathPlanCollector) throws(FHIRPathPlanAbandoned) -> Bool {
        if case .element(let node) = value { return try walk(steps, from: index, node: node, into: &collector) }
        guard index < steps.count else { return collector.add(value) }
        switch steps[index] {
        case .child(_, _, let isIdentifier):
            // A member of `type()`'s result is the tree walk's business; other System values have no children.
            if case .typeInfo = value, !isIdentifier { throw FHIRPathPlanAbandoned() }
            return true
        case .ofType(let type):
            guard FHIRPathTypes.matches(value, type, exact: true, metadata: metadata) else { return true }
            return try walk(steps, from: index + 1, value: value, into: &collector)
        case .filter(let criterion):
            guard try test(criterion, focus: CollectionOfOne(value)) == true else { return true }
            return try walk(steps, from: index + 1, value: value, into: &collector)
        }
    }

    /// ``walk(_:from:value:into:)`` for an element node, which is copied into a value only when it is
    /// what the path yields.
    private func walk(_ steps: [FHIRPathPlan.Step], from index: Int, node: FHIRPathElementNode,
                               into collector: inout FHIRPathPlanCollector) throws(FHIRPathPlanAbandoned) -> Bool {
        guard index < steps.count else { return collector.add(node: node) }
        switch steps[index] {
        case .child(let name, let resolutions, let isIdentifier):
            if isIdentifier, let resourceType = node.element.resourceType, resourceType == name {
                return try walk(steps, from: index + 1, node: node, into: &collector)
            }
            return try navigator.forEachChild(of: node, named: name, step: resolutions) { (child) throws(FHIRPathPlanAbandoned) -> Bool in
                try walk(steps, from: index + 1, node: child, into: &collector)
            }
        case .ofType(let type):
            guard FHIRPathTypes.matches(node, type, exact: true, metadata: metadata) else { return true }
            return try walk(steps, from: index + 1, node: node, into: &collector)
        case .filter(let criterion):
            guard try test(criterion, node: node) == true else { return true }
            return try walk(steps, from: index + 1, node: node, into: &collector)
        }
    }

    // MARK: Criteria

    /// The criterion's value on one element node (the focus and `$this`).
    private func test(_ predicate: FHIRPathPlan.Predicate, node: FHIRPathElementNode) throws(FHIRPathPlanAbandoned) -> Bool? {
        switch predicate {
        case .compare(let op, let path, let constant):
            return try compare(op, try collect(path, from: node, limit: 2, mode: .compare(op, try value(of: constant))))
        case .logic(let op, let leftPredicate, let rightPredicate):
            let left = try test(leftPredicate, node: node)
            if op == .and && left == false { return false }
            if op == .or && left == true { return true }
            return combine(op, left, try test(rightPredicate, node: node))
        case .existence(let path, let whenAny):
            return (try collect(path, from: node, limit: 1, mode: .count).count > 0) == whenAny
        case .tree(let node2):
            return try treeTest(node2, focus: [.element(node)])
        }
    }

    /// The criterion's value on `focus` (which is also `$this`): true, false or nil (unknown).
    private func test<Focus: Collection<FHIRPathValue>>(_ predicate: FHIRPathPlan.Predicate, focus: Focus)
        throws(FHIRPathPlanAbandoned) -> Bool? {
        switch predicate {
        case .compare(let op, let path, let constant):
            return try compare(op, try collect(path, from: focus, limit: 2, mode: .compare(op, try value(of: constant))))
        case .logic(let op, let leftPredicate, let rightPredicate):
            let left = try test(leftPredicate, focus: focus)
            if op == .and && left == false { return false }
            if op == .or && left == true { return true }
            return combine(op, left, try test(rightPredicate, focus: focus))
        case .existence(let path, let whenAny):
            return (try collect(path, from: focus, limit: 1, mode: .count).count > 0) == whenAny
        case .tree(let node):
            return try treeTest(node, focus: Array(focus))
        }
    }

    /// `and`/`or` of two known-or-unknown values, the left one not deciding alone.
    private func combine(_ op: FHIRPathNode.BinaryOperator, _ left: Bool?, _ right: Bool?) -> Bool? {
        if op == .and {
            if right == false { return false }
            return left == true && right == true ? true : nil
        }
        if right == true { return true }
        return left == false && right == false ? false : nil
    }

    /// `path op constant` for the operator's collection rules, from the collector that compared the
    /// path's first item with the constant.
    private func compare(_ op: FHIRPathNode.BinaryOperator, _ left: FHIRPathPlanCollector) throws(FHIRPathPlanAbandoned) -> Bool? {
        guard left.count > 0 else { return nil }
        switch op {
        case .equal, .notEqual:
            // Collection `=`: pairwise; different sizes are unequal.
            return left.count == 1 ? left.verdict : op == .notEqual
        default:
            // Singleton operands of a System type, which the tree walk enforces with its errors.
            guard left.count == 1, !left.incomparable else { throw FHIRPathPlanAbandoned() }
            return left.verdict
        }
    }

    /// A constant's value; the environment's variables come first, as in the tree walk.
    private func value(of constant: FHIRPathPlan.Constant) throws(FHIRPathPlanAbandoned) -> FHIRPathValue {
        switch constant {
        case .literal(let value):
            return value
        case .variable(let name, let standard):
            guard !variables.isEmpty, let defined = variables[name] else { return standard }
            // A redefinition of another size than one is the tree walk's to compare.
            guard defined.count == 1 else { throw FHIRPathPlanAbandoned() }
            return defined[0]
        }
    }

    /// The tree walk's singleton Boolean of `node` on `focus`; any error abandons the plan.
    private func treeTest(_ node: FHIRPathNode, focus: [FHIRPathValue]) throws(FHIRPathPlanAbandoned) -> Bool? {
        guard let inputs = treeWalk else { throw FHIRPathPlanAbandoned() }
        let evaluator = self.evaluator ?? FHIRPathEvaluator(source: inputs.source, environment: inputs.environment, context: inputs.context,
                                                           resource: inputs.resource, rootResource: inputs.rootResource)
        self.evaluator = evaluator
        do {
            return try evaluator.boolean(evaluator.evaluate(node, focus, FHIRPathScope(this: focus)), node)
        } catch {
            throw FHIRPathPlanAbandoned()
        }
    }
}
