import FHIRCore
import Foundation

/// A compiled FHIRPath expression: parse once, evaluate many times, from any thread.
///
/// ```swift
/// let weight = try FHIRPathExpression("Observation.value.ofType(Quantity).value")
/// for observation in observations {
///     let values = try weight.evaluate(on: observation)   // [FHIRPathValue]
/// }
/// ```
///
/// ### Members
/// - ``init(_:)`` compiles, throwing a ``FHIRPathError`` of kind `syntax` (with the column) or
///   `semantic` (an unknown function, a wrong number of arguments).
/// - ``evaluate(on:environment:)`` evaluates against a resource; ``evaluate(context:resource:rootResource:environment:)``
///   against any focus (an element inside a resource, or System values).
/// - `check(startingType:options:)` type-checks against the R4 metadata without data
///   (see ``FHIRPathStaticChecker``).
public struct FHIRPathExpression: Sendable, CustomStringConvertible {
    public let text: String
    let source: FHIRPathSource
    let root: FHIRPathNode
    /// The compiled plan of the whole expression, when it is of the mapping-style kind plans cover.
    let plan: FHIRPathPlan?
    /// For ``evaluateLeadingOperand(context:resource:rootResource:environment:)``: the operands of the
    /// root's unions, left to right, each with its plan (the root alone when it is no union).
    let leadingOperands: [(node: FHIRPathNode, plan: FHIRPathPlan?)]

    public init(_ text: String) throws(FHIRPathError) {
        self.text = text
        self.source = FHIRPathSource(text)
        let root = try FHIRPathParser.parse(source)
        let plan = FHIRPathPlan.compile(root)
        self.root = root
        self.plan = plan
        self.leadingOperands = Self.unionOperands(of: root).map { ($0, $0 === root ? plan : FHIRPathPlan.compile($0)) }
    }

    /// The operands of the unions at the top of `node`, left to right; `node` alone when it is no union.
    private static func unionOperands(of node: FHIRPathNode) -> [FHIRPathNode] {
        guard case .binary(.union, let left, let right) = node.kind else { return [node] }
        return unionOperands(of: left) + unionOperands(of: right)
    }

    public var description: String { text }

    /// Evaluates against `resource`, which is also `%resource`, `%rootResource` and `%context`.
    public func evaluate(on resource: Element, environment: FHIRPathEnvironment = FHIRPathEnvironment()) throws(FHIRPathError) -> [FHIRPathValue] {
        let location = environment.tracksPaths ? resource.resourceType.map(ElementLocation.init(root:)) : nil
        // A plan that needs no tree walk needs no context collection either, and reads the resource in
        // place.
        if let plan, !plan.usesTreeWalk, !plan.needsInputs, FHIRPathPlanRun.applies(to: environment) {
            let run = FHIRPathPlanRun(plan: plan, source: source, environment: environment, context: [], resource: nil, rootResource: nil)
            if let values = run.run(plan, resource: resource, location: location) { return values }
        }
        let root = FHIRPathElementNode(resource: resource, location: location)
        return try evaluate(context: [.element(root)], resource: resource, rootResource: resource, environment: environment)
    }

    /// The plan's value of `node` on `context`, or nil when it has none or abandoned it (the tree walk
    /// then evaluates `node`, and raises what it raises).
    private func planned(_ plan: FHIRPathPlan?, context: [FHIRPathValue], resource: Element?, rootResource: Element?,
                         environment: FHIRPathEnvironment) -> [FHIRPathValue]? {
        guard let plan, FHIRPathPlanRun.applies(to: environment) else { return nil }
        let run = FHIRPathPlanRun(plan: plan, source: source, environment: environment, context: context,
                                  resource: resource, rootResource: rootResource)
        return run.run(plan, focus: context)
    }

    /// Evaluates against an arbitrary focus; `resource` and `rootResource` give `%resource`,
    /// `%rootResource` and what `resolve()` searches.
    public func evaluate(context: [FHIRPathValue], resource: Element?, rootResource: Element?,
                         environment: FHIRPathEnvironment = FHIRPathEnvironment()) throws(FHIRPathError) -> [FHIRPathValue] {
        if let values = planned(plan, context: context, resource: resource, rootResource: rootResource, environment: environment) {
            return values
        }
        // Only when every operand has a plan: one left to the tree walk would have the whole union
        // evaluated twice.
        if plan == nil, leadingOperands.count > 1, root.depth <= FHIRPathPlan.maximumDepth, leadingOperands.allSatisfy({ $0.plan != nil }),
           let values = plannedUnion(root, context: context, resource: resource, rootResource: rootResource, environment: environment) {
            return values
        }
        return try walk(context: context, resource: resource, rootResource: rootResource, environment: environment) { evaluator in
            try evaluator.evaluate(root, context, FHIRPathScope(this: context))
        }
    }

    /// A union of planned operands (`title | description | category.text`, the mappings' fallbacks)
    /// evaluated as the tree walk evaluates it, operand by operand: the left side's values and the
    /// right side's, then `distinct` of the two, nested as the expression nests them. Nil when an
    /// operand has no plan or abandons it: the tree walk then evaluates the whole expression, and
    /// raises what it raises. (Depth is bounded by the caller: this recurses once per union.)
    private func plannedUnion(_ node: FHIRPathNode, context: [FHIRPathValue], resource: Element?, rootResource: Element?,
                              environment: FHIRPathEnvironment) -> [FHIRPathValue]? {
        if case .binary(.union, let left, let right) = node.kind {
            guard let leftValues = plannedUnion(left, context: context, resource: resource, rootResource: rootResource, environment: environment),
                  let rightValues = plannedUnion(right, context: context, resource: resource, rootResource: rootResource, environment: environment)
            else { return nil }
            return FHIRPathComparison.distinct(leftValues + rightValues)
        }
        guard let operand = leadingOperands.first(where: { $0.node === node }) else { return nil }
        return planned(operand.plan, context: context, resource: resource, rootResource: rootResource, environment: environment)
    }

    /// For a union (`a | b | c`), the values of the first operand that has any; for any other
    /// expression, all its values. Their first is the first of ``evaluate(context:resource:rootResource:environment:)``:
    /// a union keeps its left operand's values first (`distinct` keeps first occurrences).
    ///
    /// For callers that use one value (a date, a key): a mapping's
    /// `effective.ofType(dateTime) | effective.ofType(Period).start | issued` evaluates one operand for
    /// most Observations, not all of them. The later operands are not evaluated, so what only they would
    /// raise is not raised. When selections are observed (coverage) or traced, every operand is
    /// evaluated and all values returned, so that those see what `evaluate` shows them.
    public func evaluateLeadingOperand(context: [FHIRPathValue], resource: Element?, rootResource: Element?,
                                       environment: FHIRPathEnvironment = FHIRPathEnvironment()) throws(FHIRPathError) -> [FHIRPathValue] {
        guard environment.observeSelection == nil, environment.trace == nil else {
            return try evaluate(context: context, resource: resource, rootResource: rootResource, environment: environment)
        }
        for (index, operand) in leadingOperands.enumerated() {
            let values: [FHIRPathValue]
            if let planned = planned(operand.plan, context: context, resource: resource, rootResource: rootResource, environment: environment) {
                values = planned
            } else {
                values = try walk(context: context, resource: resource, rootResource: rootResource, environment: environment) { evaluator in
                    try evaluator.evaluate(operand.node, context, FHIRPathScope(this: context))
                }
            }
            if !values.isEmpty || index == leadingOperands.count - 1 { return values }
        }
        return []
    }

    /// Runs `body` with an evaluator of this expression; what it throws that is not a ``FHIRPathError``
    /// becomes one of kind `execution`.
    private func walk<Result>(
        context: [FHIRPathValue], resource: Element?, rootResource: Element?, environment: FHIRPathEnvironment,
        _ body: (FHIRPathEvaluator) throws -> Result
    ) throws(FHIRPathError) -> Result {
        let evaluator = FHIRPathEvaluator(source: source, environment: environment, context: context, resource: resource,
                                          rootResource: rootResource)
        do {
            return try body(evaluator)
        } catch let error as FHIRPathError {
            throw error
        } catch {
            throw FHIRPathError(kind: .execution, message: "\(error)", column: 1, subexpression: text)
        }
    }
}

/// What an evaluation may use besides its context: user variables (`%name`), the metadata, the clock
/// behind `now()`/`today()`, and where `trace()` output goes.
public struct FHIRPathEnvironment: Sendable {
    /// `%name` values; a plain string becomes a one-item String collection.
    public var variables: [String: [FHIRPathValue]]
    public var metadata: FHIRMetadata
    /// The instant `now()`, `today()` and `timeOfDay()` report; fixed for one evaluation.
    public var now: Date
    /// Receives `trace(name)` output; nil discards it.
    public var trace: (@Sendable (String, [FHIRPathValue]) -> Void)?
    /// Trust that the data keeps max-1 cardinality: navigating to an element that may occur once stops
    /// at its first occurrence instead of scanning every sibling (which makes `%resource.type` inside a
    /// Bundle's entries quadratic). Only for callers that report cardinality themselves, as validation
    /// does; off by default, so that an invalid document's duplicated elements are all seen.
    public var trustsSingleCardinality: Bool
    /// Finds what `resolve()` cannot find in the resource itself (contained resources) or its Bundle:
    /// given the reference text and the resource it appears in, the resource it names, or nil. An
    /// importer fills it from the whole input and the store (`urn:uuid:`, `Type/id`, absolute and
    /// conditional references).
    public var resolveReference: (@Sendable (_ reference: String, _ from: Element?) -> Element?)?
    /// Give every selected element its location (``FHIRPathElementNode/path``), such as
    /// `CarePlan.activity[0].detail.scheduledTiming`, so that a report can say where data sits. Off by
    /// default: it costs a string per step.
    public var tracksPaths: Bool
    /// Sees every element a navigation step selects (with its path when ``tracksPaths`` is on): how
    /// the importer learns which source elements its mappings read (`caregate import --coverage`).
    public var observeSelection: (@Sendable (FHIRPathElementNode) -> Void)?

    public init(variables: [String: [FHIRPathValue]] = [:], metadata: FHIRMetadata = .r4, now: Date = Date(),
                trace: (@Sendable (String, [FHIRPathValue]) -> Void)? = nil, trustsSingleCardinality: Bool = false,
                resolveReference: (@Sendable (_ reference: String, _ from: Element?) -> Element?)? = nil,
                tracksPaths: Bool = false) {
        self.variables = variables
        self.metadata = metadata
        self.now = now
        self.trace = trace
        self.trustsSingleCardinality = trustsSingleCardinality
        self.resolveReference = resolveReference
        self.tracksPaths = tracksPaths
    }

    /// Environment with string variables (`--var name=value` on the command line).
    public init(stringVariables: [String: String]) {
        self.init(variables: stringVariables.mapValues { [.string($0)] })
    }
}
