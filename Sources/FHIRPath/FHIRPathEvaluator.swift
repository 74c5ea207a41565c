import FHIRCore
import Foundation

/// The bindings in effect while evaluating: `$this` (the focus of the enclosing function argument, or
/// the evaluation context at the top), `$index` and `$total`.
struct FHIRPathScope {
    var this: [FHIRPathValue]
    var index: Int?
    var total: [FHIRPathValue]?
}

/// Evaluates one parsed expression against one context. A new evaluator is made per evaluation; the
/// parsed tree it walks is shared and never changes.
final class FHIRPathEvaluator {
    let source: FHIRPathSource
    let environment: FHIRPathEnvironment
    let navigator: FHIRPathNavigator
    let context: [FHIRPathValue]
    /// The resource holding the context (`%resource`) and the top resource (`%rootResource`).
    let resource: Element?
    let rootResource: Element?
    /// Variables made by `defineVariable`, innermost last.
    var definedVariables: [String: [FHIRPathValue]] = [:]
    private var stackGuard = FHIRPathStackGuard()

    init(source: FHIRPathSource, environment: FHIRPathEnvironment, context: [FHIRPathValue], resource: Element?, rootResource: Element?) {
        self.source = source
        self.environment = environment
        self.navigator = FHIRPathNavigator(
            metadata: environment.metadata, stopsAtFirstSingle: environment.trustsSingleCardinality,
            tracksPaths: environment.tracksPaths, observer: environment.observeSelection)
        self.context = context
        self.resource = resource
        self.rootResource = rootResource
    }

    var metadata: FHIRMetadata { environment.metadata }

    func fail(_ message: String, _ node: FHIRPathNode) -> FHIRPathError {
        source.error(.execution, message, at: node.range)
    }

    // MARK: Tree walk

    /// The values of the first operand of union `node` that has any, or all of `node`'s when it is no
    /// union (see ``FHIRPathExpression/evaluateLeadingOperand(context:resource:rootResource:environment:)``).
    func leadingOperand(_ node: FHIRPathNode, _ focus: [FHIRPathValue], _ scope: FHIRPathScope) throws -> [FHIRPathValue] {
        if case .binary(.union, let left, let right) = node.kind {
            let values = try leadingOperand(left, focus, scope)
            return values.isEmpty ? try leadingOperand(right, focus, scope) : values
        }
        return try evaluate(node, focus, scope)
    }

    func evaluate(_ node: FHIRPathNode, _ focus: [FHIRPathValue], _ scope: FHIRPathScope) throws -> [FHIRPathValue] {
        if node.depth > 8 && stackGuard.isExhausted() {
            throw fail("expression nested too deeply to evaluate on this thread's stack", node)
        }
        switch node.kind {
        case .literal(let value):
            return [value]
        case .empty:
            return []
        case .identifier(let name):
            var output: [FHIRPathValue] = []
            for item in focus {
                guard case .element(let element) = item else { continue }
                if let resourceType = element.element.resourceType, resourceType == name {
                    output.append(item)
                } else {
                    navigator.children(of: element, named: name, step: node.resolutions, into: &output)
                }
            }
            return output
        case .member(let base, let name):
            let input = try evaluate(base, focus, scope)
            var output: [FHIRPathValue] = []
            for item in input {
                switch item {
                case .element(let element):
                    navigator.children(of: element, named: name, step: node.resolutions, into: &output)
                case .typeInfo(let namespace, let typeName):
                    if name == "namespace" { output.append(.string(namespace)) }
                    if name == "name" { output.append(.string(typeName)) }
                default:
                    continue
                }
            }
            return output
        case .call(let base, let function, let arguments, let type):
            let input = try base.map { try evaluate($0, focus, scope) } ?? focus
            return try call(function, node: node, input: input, arguments: arguments, type: type, scope: scope)
        case .indexer(let base, let indexNode):
            let input = try evaluate(base, focus, scope)
            let indexValue = try evaluate(indexNode, scope.this, scope)
            guard let index = try integerArgument(indexValue, indexNode) else { return [] }
            return index >= 0 && index < input.count ? [input[index]] : []
        case .binary(let op, let left, let right):
            return try binary(op, left, right, node: node, focus: focus, scope: scope)
        case .unary(let negate, let operandNode):
            let operand = try evaluate(operandNode, focus, scope)
            guard let item = try singleton(operand, operandNode) else { return [] }
            guard let value = item.primitive else { throw fail("unary operator needs a number or quantity", node) }
            switch value {
            case .integer(let number): return [.integer(negate ? -number : number)]
            case .decimal(let number): return [.decimal(negate ? -number : number)]
            case .quantity(var quantity):
                if negate { quantity.value = -quantity.value }
                return [.quantity(quantity)]
            default:
                throw fail("unary \(negate ? "-" : "+") cannot apply to a \(value.typeName)", node)
            }
        case .typeOperator(let isCast, let operandNode, let type):
            let operand = try evaluate(operandNode, focus, scope)
            return try typeTest(isCast ? .as : .is, operand, type, node: node)
        case .this:
            return scope.this
        case .index:
            return scope.index.map { [.integer($0)] } ?? []
        case .total:
            return scope.total ?? []
        case .variable(let name):
            return try variable(name, node: node)
        }
    }

    /// Evaluates an argument expression once, against the enclosing `$this`.
    func argument(_ node: FHIRPathNode, _ scope: FHIRPathScope) throws -> [FHIRPathValue] {
        try evaluate(node, scope.this, scope)
    }

    /// Evaluates an argument expression for one input item, binding `$this` and `$index`.
    func lambda(_ node: FHIRPathNode, item: FHIRPathValue, index: Int, scope: FHIRPathScope, total: [FHIRPathValue]? = nil) throws -> [FHIRPathValue] {
        let inner = FHIRPathScope(this: [item], index: index, total: total ?? scope.total)
        return try evaluate(node, [item], inner)
    }

    private func variable(_ name: String, node: FHIRPathNode) throws -> [FHIRPathValue] {
        if let defined = definedVariables[name] { return defined }
        if let value = environment.variables[name] { return value }
        switch name {
        case "context": return context
        case "resource": return resource.map { [.element(FHIRPathElementNode(resource: $0))] } ?? context
        case "rootResource": return rootResource.map { [.element(FHIRPathElementNode(resource: $0))] } ?? context
        case "ucum": return [.string("http://unitsofmeasure.org")]
        case "sct": return [.string("http://snomed.info/sct")]
        case "loinc": return [.string("http://loinc.org")]
        default:
            if name.hasPrefix("vs-") { return [.string("http://hl7.org/fhir/ValueSet/" + name.dropFirst(3))] }
            if name.hasPrefix("ext-") { return [.string("http://hl7.org/fhir/StructureDefinition/" + name.dropFirst(4))] }
            throw source.error(.semantic, "unknown variable '%\(name)'", at: node.range)
        }
    }

    // MARK: Singletons

    /// The single item of a collection, nil when empty; more than one item is an execution error.
    func singleton(_ collection: [FHIRPathValue], _ node: FHIRPathNode) throws -> FHIRPathValue? {
        if collection.count > 1 {
            throw fail("expected a single item, got \(collection.count)", node)
        }
        return collection.first
    }

    /// Singleton evaluation as a Boolean: a Boolean item is itself, any other single item is true,
    /// empty is unknown (nil), several items an error.
    func boolean(_ collection: [FHIRPathValue], _ node: FHIRPathNode) throws -> Bool? {
        guard let item = try singleton(collection, node) else { return nil }
        if case .boolean(let value)? = item.primitive { return value }
        return true
    }

    /// A single String argument (nil when empty).
    func stringValue(_ collection: [FHIRPathValue], _ node: FHIRPathNode) throws -> String? {
        guard let item = try singleton(collection, node) else { return nil }
        guard case .string(let text)? = item.primitive else {
            throw fail("expected a string, got \(item.typeName)", node)
        }
        return text
    }

    func integerArgument(_ collection: [FHIRPathValue], _ node: FHIRPathNode) throws -> Int? {
        guard let item = try singleton(collection, node) else { return nil }
        switch item.primitive {
        case .integer(let value)?: return value
        case .decimal(let value)? where value.value == Decimal(value.integerPart ?? Int.min): return value.integerPart
        default: throw fail("expected an integer, got \(item.typeName)", node)
        }
    }

    // MARK: Type tests

    enum TypeTest { case `is`, `as`, ofType }

    func typeTest(_ test: TypeTest, _ input: [FHIRPathValue], _ type: FHIRPathTypeSpecifier, node: FHIRPathNode) throws -> [FHIRPathValue] {
        // Whether the type exists matters only when nothing matched (a match proves it does).
        func requireKnownType() throws {
            guard FHIRPathTypes.isKnown(type, metadata: metadata) else { throw fail("unknown type '\(type)'", node) }
        }
        switch test {
        case .is:
            guard let item = try singleton(input, node) else { try requireKnownType(); return [] }
            let matches = FHIRPathTypes.matches(item, type, exact: false, metadata: metadata)
            if !matches { try requireKnownType() }
            return [.boolean(matches)]
        case .as:
            guard let item = try singleton(input, node), FHIRPathTypes.matches(item, type, exact: true, metadata: metadata) else {
                try requireKnownType()
                return []
            }
            return [item]
        case .ofType:
            let result = input.filter { FHIRPathTypes.matches($0, type, exact: true, metadata: metadata) }
            if result.isEmpty { try requireKnownType() }
            return result
        }
    }
}
