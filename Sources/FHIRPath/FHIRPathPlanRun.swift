import FHIRCore

/// Raised inside a plan's evaluation where the tree walk would raise an error or decide something
/// plans leave to it: the plan is abandoned and the tree walk evaluates the expression instead.
struct FHIRPathPlanAbandoned: Error {}

/// One evaluation of a ``FHIRPathPlan``: the plan's steps applied to the focus, with the environment
/// the expression is evaluated in. Made per evaluation, on the stack, and handed the plan it runs
/// (borrowed from the expression: a copy stored here was a retain and a release of the plan's arrays
/// for every evaluation): nothing in it changes during the walk (the tree walk's evaluator, made only when a criterion is left to it, is kept in a class of its
/// own), and the steps walked into are recorded in frames on the stack (``TrailFrame``).
///
/// Elements are walked through pointers into their parents' arrays, with their types as pointers too
/// (``FHIRPathNavigator/forEachChildInPlace(of:type:named:step:_:)``, ``FHIRPathPlanType``): passing an
/// `Element` or its type strings by value copies them (a retain of each field), and a walk passes each
/// selected child on to its next step, most never to be yielded.
struct FHIRPathPlanRun {
    /// The environment's `%name` values; nil when it defines none (the common case, kept without
    /// a reference to count).
    let variables: [String: [FHIRPathValue]]?
    let navigator: FHIRPathNavigator
    var metadata: FHIRMetadata { navigator.metadata }
    /// Whether the yielded elements carry their locations (``FHIRPathEnvironment/tracksPaths``).
    let tracksPaths: Bool
    /// The evaluation's inputs, only for plans that leave a criterion to the tree walk (its evaluator
    /// is made from them) or read them (`%resource`, `%context`, `resolve()`): copying the environment
    /// and the resources costs more than most evaluations.
    let treeWalk: TreeWalk?

    /// The evaluation's inputs, and the tree walk's evaluator once made.
    final class TreeWalk {
        let source: FHIRPathSource
        let environment: FHIRPathEnvironment
        let context: [FHIRPathValue]
        let resource: Element?
        let rootResource: Element?
        var evaluator: FHIRPathEvaluator?

        init(source: FHIRPathSource, environment: FHIRPathEnvironment, context: [FHIRPathValue], resource: Element?, rootResource: Element?) {
            self.source = source
            self.environment = environment
            self.context = context
            self.resource = resource
            self.rootResource = rootResource
        }
    }

    /// A child stepped into, while a path whose items are kept is walked with tracked paths: what its
    /// ``ElementLocation`` records, and the frame of the step before (none for the focus item's child).
    /// Made on the stack and read only while the step's walk runs, so plain pointers.
    struct TrailFrame {
        let previous: UnsafePointer<TrailFrame>?
        let child: UnsafePointer<Element>
        let parent: UnsafePointer<Element>
        let place: FHIRPathNavigator.ChildPlace
    }

    /// Where the element being walked sits: the focus item's location (kept alive by the focus item),
    /// and whether the element is the focus item itself or a child stepped into (with its last trail
    /// frame when paths are tracked).
    struct Origin {
        let focusLocation: Unmanaged<ElementLocation>?
        let atFocus: Bool
        let frame: UnsafePointer<TrailFrame>?

        /// For criteria, which keep no items and need no locations.
        static var unlocated: Origin { Origin(focusLocation: nil, atFocus: false, frame: nil) }
    }

    /// Whether a plan may stand for the tree walk in `environment`: nothing observes the walk, and the
    /// metadata is the R4 metadata the plan's `ofType()` steps were checked against. Tracked paths are
    /// made as the tree walk makes them (the navigator's ``FHIRPathNavigator/ChildPlace``).
    static func applies(to environment: FHIRPathEnvironment) -> Bool {
        environment.trace == nil && environment.observeSelection == nil && environment.metadata === FHIRMetadata.r4
    }

    init(plan: FHIRPathPlan, source: FHIRPathSource, environment: FHIRPathEnvironment, context: [FHIRPathValue],
         resource: Element?, rootResource: Element?) {
        self.variables = environment.variables.isEmpty ? nil : environment.variables
        self.navigator = FHIRPathNavigator(metadata: environment.metadata, stopsAtFirstSingle: environment.trustsSingleCardinality)
        self.tracksPaths = environment.tracksPaths
        self.treeWalk = plan.usesTreeWalk || plan.needsInputs
            ? TreeWalk(source: source, environment: environment, context: context, resource: resource, rootResource: rootResource)
            : nil
    }

    /// The value of `plan` (the one this run was made for) on `focus` (the context), or nil when the
    /// plan was abandoned.
    func run<Focus: Collection<FHIRPathValue>>(_ plan: FHIRPathPlan, focus: Focus) -> [FHIRPathValue]? {
        do {
            switch plan.body {
            case .path(let path, let terminal):
                return Self.result(of: try collect(path, from: focus, limit: Self.limit(terminal), mode: Self.mode(terminal)), terminal)
            case .predicate(let predicate):
                // One element (a mapping's `when` on its resource or item): read in place once, rather
                // than copied out of the focus for each path of the criterion. A criterion's value
                // does not depend on where its items sit, so none are located.
                if focus.count == 1, case .element(let node)? = focus.first {
                    return try withUnsafePointer(to: FHIRPathPlanType(typeName: node.typeName, context: node.context)) {
                        (type) throws(FHIRPathPlanAbandoned) -> [FHIRPathValue] in
                        try withUnsafePointer(to: node.element) { (element) throws(FHIRPathPlanAbandoned) -> [FHIRPathValue] in
                            try test(predicate, element: element, type: type).map(Self.booleanResult) ?? []
                        }
                    }
                }
                return try test(predicate, focus: focus).map(Self.booleanResult) ?? []
            }
        } catch {
            return nil
        }
    }

    /// ``run(_:focus:)`` on a resource (the context), located at `location`: no node is made of it
    /// unless the plan yields it.
    func run(_ plan: FHIRPathPlan, resource: Element, location: ElementLocation?) -> [FHIRPathValue]? {
        let type = FHIRPathPlanType(resourceType: resource.resourceType)
        let origin = Origin(focusLocation: location.map(Unmanaged.passUnretained), atFocus: true, frame: nil)
        return withExtendedLifetime(location) {
            withUnsafePointer(to: type) { type in
                withUnsafePointer(to: resource) { resource in
                    do {
                        switch plan.body {
                        case .path(let path, let terminal):
                            let collector = try collect(path, element: resource, type: type, origin: origin,
                                                        limit: Self.limit(terminal), mode: Self.mode(terminal))
                            return Self.result(of: collector, terminal)
                        case .predicate(let predicate):
                            return try test(predicate, element: resource, type: type).map(Self.booleanResult) ?? []
                        }
                    } catch {
                        return nil
                    }
                }
            }
        }
    }

    /// The one-item results `[true]` and `[false]`, made once: a new array for every evaluation of a
    /// criterion or `exists()` is an allocation, where handing out these is a retain.
    private static let trueResult: [FHIRPathValue] = [.boolean(true)]
    private static let falseResult: [FHIRPathValue] = [.boolean(false)]

    private static func booleanResult(_ value: Bool) -> [FHIRPathValue] {
        value ? trueResult : falseResult
    }

    /// How many items of its path a terminal needs.
    private static func limit(_ terminal: FHIRPathPlan.Terminal) -> Int {
        switch terminal {
        case .all, .count: return .max
        case .first, .exists, .empty: return 1
        }
    }

    /// What a terminal collects: `exists()`, `empty()` and `count()` only count what the path yields.
    private static func mode(_ terminal: FHIRPathPlan.Terminal) -> FHIRPathPlanCollector.Mode {
        switch terminal {
        case .all, .first: return .keep
        case .exists, .empty, .count: return .count
        }
    }

    /// The terminal's value; a path ended by `first()` kept one item at most.
    private static func result(of collector: FHIRPathPlanCollector, _ terminal: FHIRPathPlan.Terminal) -> [FHIRPathValue] {
        switch terminal {
        case .all, .first: return collector.values
        case .exists: return booleanResult(collector.count > 0)
        case .empty: return booleanResult(collector.count == 0)
        case .count: return [.integer(collector.count)]
        }
    }

    // MARK: Paths

    /// What `path` yields from `focus`, up to `limit` items (all when the path may fail: no item may be
    /// skipped on which the tree walk would fail). A path ended by `first()` yields its first item.
    func collect<Focus: Collection<FHIRPathValue>>(_ path: FHIRPathPlan.Path, from focus: Focus, limit: Int,
                                                           mode: FHIRPathPlanCollector.Mode)
        throws(FHIRPathPlanAbandoned) -> FHIRPathPlanCollector {
        if path.start != .focus { return try collectFromStart(path, limit: limit, mode: mode) }
        let wanted = path.firstOnly ? 1 : limit
        var collector = FHIRPathPlanCollector(limit: path.canFail ? .max : wanted, mode: mode)
        for item in focus {
            guard try walk(path.steps, from: 0, value: item, into: &collector) else { break }
        }
        if path.firstOnly { collector.keepOnlyFirst() }
        return collector
    }

    /// ``collect(_:from:limit:mode:)`` from one element read in place, which sits at `origin`.
    func collect(_ path: FHIRPathPlan.Path, element: UnsafePointer<Element>, type: UnsafePointer<FHIRPathPlanType>,
                         origin: Origin, limit: Int, mode: FHIRPathPlanCollector.Mode)
        throws(FHIRPathPlanAbandoned) -> FHIRPathPlanCollector {
        if path.start != .focus { return try collectFromStart(path, limit: limit, mode: mode) }
        let wanted = path.firstOnly ? 1 : limit
        var collector = FHIRPathPlanCollector(limit: path.canFail ? .max : wanted, mode: mode)
        _ = try walk(path.steps, from: 0, element: element, type: type, origin: origin, into: &collector)
        if path.firstOnly { collector.keepOnlyFirst() }
        return collector
    }

    /// Applies `steps[index...]` to `value`, adding what they yield to `collector`; false once it is full.
    private func walk(_ steps: [FHIRPathPlan.Step], from index: Int, value: FHIRPathValue,
                      into collector: inout FHIRPathPlanCollector) throws(FHIRPathPlanAbandoned) -> Bool {
        if case .element(let node) = value {
            let origin = Origin(focusLocation: node.location.map(Unmanaged.passUnretained), atFocus: true, frame: nil)
            return try withUnsafePointer(to: FHIRPathPlanType(typeName: node.typeName, context: node.context)) {
                (type) throws(FHIRPathPlanAbandoned) -> Bool in
                try withUnsafePointer(to: node.element) { (element) throws(FHIRPathPlanAbandoned) -> Bool in
                    try walk(steps, from: index, element: element, type: type, origin: origin, into: &collector)
                }
            }
        }
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
        case .resolve:
            // A string names a reference too: the tree walk's to look up.
            if case .string = value { throw FHIRPathPlanAbandoned() }
            return true
        }
    }

    /// ``walk(_:from:value:into:)`` for an element read in place (of the type `type` points at: its
    /// type name, and the metadata context of its children), which sits at `origin`: a node is made
    /// only of what the path yields.
    func walk(_ steps: [FHIRPathPlan.Step], from index: Int, element: UnsafePointer<Element>, type: UnsafePointer<FHIRPathPlanType>,
                      origin: Origin, into collector: inout FHIRPathPlanCollector) throws(FHIRPathPlanAbandoned) -> Bool {
        guard index < steps.count else {
            return collector.add(element: element, type: type, location: location(of: origin))
        }
        switch steps[index] {
        case .child(let name, let resolutions, let isIdentifier):
            if isIdentifier, let resourceType = element.pointee.resourceType, resourceType == name {
                return try walk(steps, from: index + 1, element: element, type: type, origin: origin, into: &collector)
            }
            if tracksPaths && collector.keepsItems && origin.focusLocation != nil {
                return try navigator.forEachChildInPlace(of: element, type: type, named: name, step: resolutions) {
                    (child, childType, place) throws(FHIRPathPlanAbandoned) -> Bool in
                    let frame = TrailFrame(previous: origin.frame, child: child, parent: element, place: place)
                    return try withUnsafePointer(to: frame) { (frame) throws(FHIRPathPlanAbandoned) -> Bool in
                        let childOrigin = Origin(focusLocation: origin.focusLocation, atFocus: false, frame: frame)
                        return try walk(steps, from: index + 1, element: child, type: childType, origin: childOrigin, into: &collector)
                    }
                }
            }
            let childOrigin = Origin(focusLocation: origin.focusLocation, atFocus: false, frame: nil)
            return try navigator.forEachChildInPlace(of: element, type: type, named: name, step: resolutions) {
                (child, childType, _) throws(FHIRPathPlanAbandoned) -> Bool in
                try walk(steps, from: index + 1, element: child, type: childType, origin: childOrigin, into: &collector)
            }
        case .ofType(let specifier):
            guard FHIRPathTypes.matches(typeName: type.pointee.typeName, specifier, exact: true, metadata: metadata) else { return true }
            return try walk(steps, from: index + 1, element: element, type: type, origin: origin, into: &collector)
        case .filter(let criterion):
            guard try test(criterion, element: element, type: type) == true else { return true }
            return try walk(steps, from: index + 1, element: element, type: type, origin: origin, into: &collector)
        case .resolve:
            return try resolve(element, then: steps, from: index + 1, into: &collector)
        }
    }

    /// The location the tree walk gives an item yielded at `origin`: the focus item's own, or (with
    /// tracked paths) the trail's steps from it; none when the focus item has none.
    private func location(of origin: Origin) -> ElementLocation? {
        guard let focusLocation = origin.focusLocation?.takeUnretainedValue() else { return nil }
        if origin.atFocus { return focusLocation }
        guard tracksPaths, var frame = origin.frame else { return nil }
        var frames = [frame]
        while let previous = frame.pointee.previous {
            frames.append(previous)
            frame = previous
        }
        var location = focusLocation
        for frame in frames.reversed() {
            let step = frame.pointee
            location = ElementLocation(child: step.child.pointee.name, of: location, position: step.place.position,
                                       isArray: step.place.isArray, siblings: step.parent.pointee.children)
        }
        return location
    }

    // MARK: Criteria

    /// The criterion's value on one element read in place (the focus and `$this`).
    private func test(_ predicate: FHIRPathPlan.Predicate, element: UnsafePointer<Element>, type: UnsafePointer<FHIRPathPlanType>)
        throws(FHIRPathPlanAbandoned) -> Bool? {
        switch predicate {
        case .compare(let op, let path, let constant):
            let (mode, made) = try comparison(op, constant)
            return try withExtendedLifetime(made) { () throws(FHIRPathPlanAbandoned) -> Bool? in
                try compare(op, try collect(path, element: element, type: type, origin: .unlocated, limit: 2, mode: mode))
            }
        case .logic(let op, let leftPredicate, let rightPredicate):
            let left = try test(leftPredicate, element: element, type: type)
            if op == .and && left == false { return false }
            if op == .or && left == true { return true }
            return combine(op, left, try test(rightPredicate, element: element, type: type))
        case .existence(let path, let whenAny):
            let collector = try collect(path, element: element, type: type, origin: .unlocated, limit: 1, mode: .count)
            return (collector.count > 0) == whenAny
        case .not(let operand):
            return try test(operand, element: element, type: type).map { !$0 }
        case .isType(let path, let specifier):
            return try isType(try collect(path, element: element, type: type, origin: .unlocated, limit: 2, mode: .keep), specifier)
        case .startsWith(let path, let prefix):
            return try startsWith(try collect(path, element: element, type: type, origin: .unlocated, limit: 2, mode: .keep), prefix)
        case .tree(let node):
            let item = FHIRPathElementNode(element: element.pointee, typeName: type.pointee.typeName, context: type.pointee.context, location: nil)
            return try treeTest(node, focus: [.element(item)])
        }
    }

    /// The criterion's value on `focus` (which is also `$this`): true, false or nil (unknown).
    private func test<Focus: Collection<FHIRPathValue>>(_ predicate: FHIRPathPlan.Predicate, focus: Focus)
        throws(FHIRPathPlanAbandoned) -> Bool? {
        switch predicate {
        case .compare(let op, let path, let constant):
            let (mode, made) = try comparison(op, constant)
            return try withExtendedLifetime(made) { () throws(FHIRPathPlanAbandoned) -> Bool? in
                try compare(op, try collect(path, from: focus, limit: 2, mode: mode))
            }
        case .logic(let op, let leftPredicate, let rightPredicate):
            let left = try test(leftPredicate, focus: focus)
            if op == .and && left == false { return false }
            if op == .or && left == true { return true }
            return combine(op, left, try test(rightPredicate, focus: focus))
        case .existence(let path, let whenAny):
            return (try collect(path, from: focus, limit: 1, mode: .count).count > 0) == whenAny
        case .not(let operand):
            return try test(operand, focus: focus).map { !$0 }
        case .isType(let path, let specifier):
            return try isType(try collect(path, from: focus, limit: 2, mode: .keep), specifier)
        case .startsWith(let path, let prefix):
            return try startsWith(try collect(path, from: focus, limit: 2, mode: .keep), prefix)
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

    /// The collector mode comparing a path's first item with `constant`; the environment's variables
    /// come first, as in the tree walk.
    /// The mode holds the constant unretained: a constant of the plan lives as long as the plan, and
    /// one made here from a redefined variable is returned as `made`, for the caller to keep alive
    /// while the collector runs.
    private func comparison(_ op: FHIRPathNode.BinaryOperator, _ constant: FHIRPathPlan.Constant)
        throws(FHIRPathPlanAbandoned) -> (mode: FHIRPathPlanCollector.Mode, made: FHIRPathPlanOperand?) {
        switch constant {
        case .literal(let operand):
            return (.compare(op, Unmanaged.passUnretained(operand)), nil)
        case .variable(let name, let standard):
            guard let defined = variables?[name] else { return (.compare(op, Unmanaged.passUnretained(standard)), nil) }
            // A redefinition of another size than one is the tree walk's to compare.
            guard defined.count == 1 else { throw FHIRPathPlanAbandoned() }
            let made = FHIRPathPlanOperand(defined[0])
            return (.compare(op, Unmanaged.passUnretained(made)), made)
        }
    }

    /// The tree walk's singleton Boolean of `node` on `focus`; any error abandons the plan.
    private func treeTest(_ node: FHIRPathNode, focus: [FHIRPathValue]) throws(FHIRPathPlanAbandoned) -> Bool? {
        guard let inputs = treeWalk else { throw FHIRPathPlanAbandoned() }
        let evaluator = inputs.evaluator ?? FHIRPathEvaluator(source: inputs.source, environment: inputs.environment, context: inputs.context,
                                                             resource: inputs.resource, rootResource: inputs.rootResource)
        inputs.evaluator = evaluator
        do {
            return try evaluator.boolean(evaluator.evaluate(node, focus, FHIRPathScope(this: focus)), node)
        } catch {
            throw FHIRPathPlanAbandoned()
        }
    }
}
