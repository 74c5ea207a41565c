import FHIRCore

/// Raised inside a plan's evaluation where the tree walk would raise an error or decide something
/// plans leave to it: the plan is abandoned and the tree walk evaluates the expression instead.
struct FHIRPathPlanAbandoned: Error {}

/// Collects what a path yields, keeping the first item inline (a criterion's path yields one item,
/// usually, and needs no array for it) and stopping at `limit` items.
struct FHIRPathPlanCollector {
    let limit: Int
    private(set) var count = 0
    private(set) var first: FHIRPathValue?
    private var rest: [FHIRPathValue] = []

    init(limit: Int) { self.limit = limit }

    /// Adds `value`; false when the collector is full.
    mutating func add(_ value: FHIRPathValue) -> Bool {
        if count == 0 { first = value } else { rest.append(value) }
        count += 1
        return count < limit
    }

    var values: [FHIRPathValue] {
        guard let first else { return [] }
        if rest.isEmpty { return [first] }
        return [first] + rest
    }
}

/// One evaluation of a ``FHIRPathPlan``: the plan's steps applied to the focus, with the environment
/// the expression is evaluated in. Made per evaluation; the tree walk's evaluator is made only when a
/// criterion is left to it.
struct FHIRPathPlanRun {
    let plan: FHIRPathPlan
    let expression: FHIRPathExpression
    let environment: FHIRPathEnvironment
    let navigator: FHIRPathNavigator
    let context: [FHIRPathValue]
    let resource: Element?
    let rootResource: Element?
    private var evaluator: FHIRPathEvaluator?

    /// Whether a plan may stand for the tree walk in `environment`: nothing observes the walk, and the
    /// metadata is the R4 metadata the plan's `ofType()` steps were checked against.
    static func applies(to environment: FHIRPathEnvironment) -> Bool {
        environment.trace == nil && environment.observeSelection == nil && !environment.tracksPaths
            && environment.metadata === FHIRMetadata.r4
    }

    init(plan: FHIRPathPlan, expression: FHIRPathExpression, environment: FHIRPathEnvironment, context: [FHIRPathValue],
         resource: Element?, rootResource: Element?) {
        self.plan = plan
        self.expression = expression
        self.environment = environment
        self.navigator = FHIRPathNavigator(metadata: environment.metadata, stopsAtFirstSingle: environment.trustsSingleCardinality)
        self.context = context
        self.resource = resource
        self.rootResource = rootResource
    }

    /// The plan's value on `focus` (the context), or nil when the plan was abandoned.
    mutating func run(focus: [FHIRPathValue]) -> [FHIRPathValue]? {
        do {
            switch plan.body {
            case .path(let path, let terminal):
                let limit: Int
                switch terminal {
                case .all, .count: limit = .max
                case .first, .exists, .empty: limit = path.canFail ? .max : 1
                }
                var collector = FHIRPathPlanCollector(limit: limit)
                for item in focus {
                    guard try walk(path.steps, from: 0, item: item, into: &collector) else { break }
                }
                switch terminal {
                case .all: return collector.values
                case .first: return collector.first.map { [$0] } ?? []
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

    /// Applies `steps[index...]` to `item`, adding what they yield to `collector`; false once it is full.
    private mutating func walk(_ steps: [FHIRPathPlan.Step], from index: Int, item: FHIRPathValue,
                               into collector: inout FHIRPathPlanCollector) throws(FHIRPathPlanAbandoned) -> Bool {
        guard index < steps.count else { return collector.add(item) }
        switch steps[index] {
        case .child(let name, let resolutions, let isIdentifier):
            guard case .element(let node) = item else {
                // A member of `type()`'s result is the tree walk's business; other System values have no children.
                if case .typeInfo = item, !isIdentifier { throw FHIRPathPlanAbandoned() }
                return true
            }
            if isIdentifier, let resourceType = node.element.resourceType, resourceType == name {
                return try walk(steps, from: index + 1, item: item, into: &collector)
            }
            return try navigator.forEachChild(of: node, named: name, step: resolutions) { (child) throws(FHIRPathPlanAbandoned) -> Bool in
                try walk(steps, from: index + 1, item: .element(child), into: &collector)
            }
        case .ofType(let type):
            guard FHIRPathTypes.matches(item, type, exact: true, metadata: environment.metadata) else { return true }
            return try walk(steps, from: index + 1, item: item, into: &collector)
        case .filter(let criterion):
            guard try test(criterion, focus: CollectionOfOne(item)) == true else { return true }
            return try walk(steps, from: index + 1, item: item, into: &collector)
        }
    }

    /// What `path` yields from `focus`, up to `limit` items (all when the path may fail).
    private mutating func collect<Focus: Collection<FHIRPathValue>>(_ path: FHIRPathPlan.Path, from focus: Focus, limit: Int)
        throws(FHIRPathPlanAbandoned) -> FHIRPathPlanCollector {
        var collector = FHIRPathPlanCollector(limit: path.canFail ? .max : limit)
        for item in focus {
            guard try walk(path.steps, from: 0, item: item, into: &collector) else { break }
        }
        return collector
    }

    // MARK: Criteria

    /// The criterion's value on `focus` (which is also `$this`): true, false or nil (unknown).
    private mutating func test<Focus: Collection<FHIRPathValue>>(_ predicate: FHIRPathPlan.Predicate, focus: Focus)
        throws(FHIRPathPlanAbandoned) -> Bool? {
        switch predicate {
        case .compare(let op, let path, let constant):
            let right = try value(of: constant)
            let left = try collect(path, from: focus, limit: 2)
            guard let a = left.first else { return nil }
            switch op {
            case .equal, .notEqual:
                // Collection `=`: pairwise; different sizes are unequal.
                guard left.count == 1 else {
                    return FHIRPathComparison.equalCollections(left.values, [right]).map { op == .equal ? $0 : !$0 }
                }
                return FHIRPathComparison.equal(a, right).map { op == .equal ? $0 : !$0 }
            default:
                // Singleton operands of a System type, which the tree walk enforces with its errors.
                guard left.count == 1, let x = a.primitive, let y = right.primitive else { throw FHIRPathPlanAbandoned() }
                switch FHIRPathComparison.order(x, y) {
                case .ordered(let order):
                    switch op {
                    case .less: return order < 0
                    case .greater: return order > 0
                    case .lessOrEqual: return order <= 0
                    default: return order >= 0
                    }
                case .unknown: return nil
                case .incompatible: throw FHIRPathPlanAbandoned()
                }
            }
        case .logic(let op, let leftPredicate, let rightPredicate):
            let left = try test(leftPredicate, focus: focus)
            if op == .and && left == false { return false }
            if op == .or && left == true { return true }
            let right = try test(rightPredicate, focus: focus)
            if op == .and {
                if right == false { return false }
                return left == true && right == true ? true : nil
            }
            if right == true { return true }
            return left == false && right == false ? false : nil
        case .existence(let path, let whenAny):
            let found = try collect(path, from: focus, limit: 1).count > 0
            return found == whenAny
        case .tree(let node):
            return try treeTest(node, focus: Array(focus))
        }
    }

    /// A constant's value; the environment's variables come first, as in the tree walk.
    private func value(of constant: FHIRPathPlan.Constant) throws(FHIRPathPlanAbandoned) -> FHIRPathValue {
        switch constant {
        case .literal(let value):
            return value
        case .variable(let name, let standard):
            guard !environment.variables.isEmpty, let defined = environment.variables[name] else { return standard }
            // A redefinition of another size than one is the tree walk's to compare.
            guard defined.count == 1 else { throw FHIRPathPlanAbandoned() }
            return defined[0]
        }
    }

    /// The tree walk's singleton Boolean of `node` on `focus`; any error abandons the plan.
    private mutating func treeTest(_ node: FHIRPathNode, focus: [FHIRPathValue]) throws(FHIRPathPlanAbandoned) -> Bool? {
        let evaluator = self.evaluator ?? FHIRPathEvaluator(source: expression.source, environment: environment, context: context,
                                                           resource: resource, rootResource: rootResource)
        self.evaluator = evaluator
        do {
            return try evaluator.boolean(evaluator.evaluate(node, focus, FHIRPathScope(this: focus)), node)
        } catch {
            throw FHIRPathPlanAbandoned()
        }
    }
}
