import FHIRCore
/// The type a FHIRPath (sub-)expression can produce, as inferred without data: the set of possible
/// types (FHIR type contexts such as `Quantity` or `CarePlan.activity`, or `System.String`...), whether
/// it is at most one item, and whether its order is meaningful.
public struct FHIRPathStaticType: Sendable, CustomStringConvertible {
    /// Possible types; nil when unknown (anything).
    public var types: Set<String>?
    public var isSingleton: Bool
    /// True for `children()`/`descendants()` results, whose order the specification leaves open.
    public var isUnordered = false

    public static let any = FHIRPathStaticType(types: nil, isSingleton: false)
    static func system(_ name: String) -> FHIRPathStaticType { FHIRPathStaticType(types: ["System." + name], isSingleton: true) }
    static let boolean = system("Boolean")

    /// `HumanName*`, `System.Boolean`, `Quantity | string`, `CarePlan.activity*`, `any*`; `*` marks a
    /// collection.
    public var description: String {
        let names = types.map { $0.isEmpty ? "empty" : $0.sorted().map(Self.displayName).joined(separator: " | ") } ?? "any"
        return names + (isSingleton ? "" : "*")
    }

    /// A type as shown in messages: a backbone element by its definition path (`CarePlan.activity`).
    static func displayName(_ type: String) -> String { type }

    func union(_ other: FHIRPathStaticType) -> FHIRPathStaticType {
        guard let mine = types, let theirs = other.types else { return FHIRPathStaticType(types: nil, isSingleton: false) }
        return FHIRPathStaticType(types: mine.union(theirs), isSingleton: false)
    }
}

/// Type-checks a FHIRPath expression against the R4 metadata, from a starting type, without data.
///
/// Errors (each with its line, column and sub-expression):
/// - an element the type does not have (`Patient.name.given1`), or a path that starts with another
///   resource type (`Encounter.name` on a Patient) — strict mode;
/// - a choice element named with its type suffix (`Observation.valueQuantity`: FHIRPath writes
///   `Observation.value.ofType(Quantity)`) — always;
/// - a type test that can never succeed (`Observation.value.ofType(Attachment)`,
///   `Patient.gender.ofType(id)`) — strict mode;
/// - an `iif` criterion that cannot be a Boolean, a date plus a plain number — strict mode;
/// - an order-dependent function after `children()`/`descendants()` — with ``Options/checkOrderedFunctions``;
/// - an unknown `%variable` — always.
///
/// Unknown functions and wrong argument counts are found earlier, when the expression is compiled.
public struct FHIRPathStaticChecker {
    public struct Options: Sendable {
        /// Report what is an error only in strict evaluation (unknown elements, impossible type tests).
        public var strict: Bool
        public var checkOrderedFunctions: Bool
        /// Names of user-supplied `%variables` (their types are unknown).
        public var variables: Set<String>
        /// `%variables` whose items are of a known FHIR type (a mapping's `%roles`: PractitionerRoles),
        /// checked as a collection of that type.
        public var typedVariables: [String: String] = [:]

        public init(strict: Bool = true, checkOrderedFunctions: Bool = false, variables: Set<String> = []) {
            self.strict = strict
            self.checkOrderedFunctions = checkOrderedFunctions
            self.variables = variables
        }
    }

    public struct Report: Sendable {
        /// The inferred type of the whole expression.
        public let resultType: FHIRPathStaticType
        public let errors: [FHIRPathError]
    }

    let metadata: FHIRMetadata
    let options: Options
    let source: FHIRPathSource
    let startType: String
    /// The type of `%resource` and `%rootResource` when it differs from the start (an expression
    /// evaluated on an element inside a resource); the start type otherwise.
    var resourceType: String?
    private(set) var errors: [FHIRPathError] = []
    private var stackGuard = FHIRPathStackGuard()

    init(metadata: FHIRMetadata, options: Options, source: FHIRPathSource, startType: String) {
        self.metadata = metadata
        self.options = options
        self.source = source
        self.startType = startType
    }

    private mutating func report(_ message: String, _ node: FHIRPathNode) {
        let (line, column) = source.lineAndColumn(of: focusRange(of: node).lowerBound)
        errors.append(FHIRPathError(kind: .semantic, message: message, line: line, column: column,
                                    subexpression: source.quote(node.range)))
    }

    /// Where an error about `node` should point: at the member name of `a.b`, at the function name of
    /// `a.f()`, else at the node's start; the quoted sub-expression is the whole node.
    private func focusRange(of node: FHIRPathNode) -> Range<Int> {
        let text = source.text(node.range)
        switch node.kind {
        case .member(_, let name):
            let length = name.unicodeScalars.count
            let start = node.range.upperBound - length - (text.hasSuffix("`") ? 1 : 0)
            return max(node.range.lowerBound, start)..<node.range.upperBound
        case .call(.some, let function, _, _):
            let scalars = Array(text.unicodeScalars), name = Array((function.rawValue + "(").unicodeScalars)
            var index = scalars.count - name.count
            while index >= 0 {
                if Array(scalars[index..<index + name.count]) == name { return (node.range.lowerBound + index)..<node.range.upperBound }
                index -= 1
            }
            return node.range
        default:
            return node.range
        }
    }

    // MARK: Tree walk

    mutating func check(_ node: FHIRPathNode, input: FHIRPathStaticType, this: FHIRPathStaticType) -> FHIRPathStaticType {
        if node.depth > 8 && stackGuard.isExhausted() {
            report("expression nested too deeply to check on this thread's stack", node)
            return .any
        }
        switch node.kind {
        case .literal(let value):
            return .system(value.systemTypeName ?? "Any")
        case .empty:
            return FHIRPathStaticType(types: [], isSingleton: true)
        case .identifier(let name):
            return navigate(input, name, node: node, atRoot: true)
        case .member(let base, let name):
            let baseType = check(base, input: input, this: this)
            return navigate(baseType, name, node: node, atRoot: false)
        case .call(let base, let function, let arguments, let type):
            let inputType = base.map { check($0, input: input, this: this) } ?? input
            return call(function, node: node, input: inputType, arguments: arguments, type: type, this: this)
        case .indexer(let base, let index):
            var baseType = check(base, input: input, this: this)
            _ = check(index, input: this, this: this)
            if options.checkOrderedFunctions && baseType.isUnordered {
                report("indexing depends on order, but the collection's order is undefined", node)
            }
            baseType.isSingleton = true
            return baseType
        case .binary(let op, let left, let right):
            let leftType = check(left, input: input, this: this)
            let rightType = check(right, input: input, this: this)
            return binary(op, leftType, rightType, node: node)
        case .unary(_, let operand):
            return check(operand, input: input, this: this)
        case .typeOperator(let isCast, let operand, let type):
            let operandType = check(operand, input: input, this: this)
            return typeTest(operandType, type, node: node, result: isCast ? .cast : .boolean)
        case .this:
            return this
        case .index:
            return .system("Integer")
        case .total:
            return .any
        case .variable(let name):
            switch name {
            case "resource", "rootResource":
                return FHIRPathStaticType(types: [resourceType ?? startType], isSingleton: true)
            case "context":
                return FHIRPathStaticType(types: [startType], isSingleton: true)
            case "ucum", "sct", "loinc":
                return .system("String")
            default:
                if let type = options.typedVariables[name] { return FHIRPathStaticType(types: [type], isSingleton: false) }
                if options.variables.contains(name) { return .any }
                if name.hasPrefix("vs-") || name.hasPrefix("ext-") { return .system("String") }
                report("unknown variable '%\(name)'", node)
                return .any
            }
        }
    }

    // MARK: Navigation

    private mutating func navigate(_ input: FHIRPathStaticType, _ name: String, node: FHIRPathNode, atRoot: Bool) -> FHIRPathStaticType {
        guard let types = input.types else { return .any }
        var result = Set<String>()
        var singleton = input.isSingleton
        var unknown = false
        for type in types {
            if atRoot, !type.hasPrefix("System."), name == type || (metadata.type(named: name) != nil && metadata.isType(type, derivedFrom: name)) {
                result.insert(type)
                continue
            }
            guard !type.hasPrefix("System.") else { continue }
            if let resolved = metadata.child(name, of: type) {
                if resolved.info.isChoice && resolved.info.name != name {
                    report("'\(name)' is a choice element's instance name; FHIRPath writes \(resolved.info.name).ofType(\(resolved.type))", node)
                    return .any
                }
                result.insert(resolved.type)
                if resolved.info.isArray { singleton = false }
            } else if let info = metadata.element(named: name, of: type), info.isChoice {
                result.formUnion(info.types)
                if info.isArray { singleton = false }
            } else if type == "Resource" || type == "DomainResource" || metadata.elements(of: type).isEmpty && !FHIRPathTypes.isPrimitive(type) {
                // An abstract or unknown context: its concrete type is only known at run time.
                unknown = true
            }
        }
        if unknown { return .any }
        if result.isEmpty && !types.isEmpty && !types.allSatisfy({ $0.hasPrefix("System.") }) && options.strict {
            let described = types.sorted().map(FHIRPathStaticType.displayName).joined(separator: " | ")
            if atRoot, metadata.type(named: name) != nil {
                report("the expression starts with '\(name)' but the context is \(described)", node)
            } else {
                report("\(described) has no element '\(name)'", node)
            }
        }
        return FHIRPathStaticType(types: result, isSingleton: singleton)
    }

    // MARK: Type tests

    private enum TypeTestResult { case boolean, cast, filter }

    private mutating func typeTest(_ input: FHIRPathStaticType, _ type: FHIRPathTypeSpecifier, node: FHIRPathNode,
                                   result: TypeTestResult) -> FHIRPathStaticType {
        let target = type.namespace == "System" || (type.namespace == nil && FHIRPathTypes.systemTypes.contains(type.name)
            && metadata.type(named: type.name) == nil) ? "System." + type.name : type.name
        if !FHIRPathTypes.isKnown(type, metadata: metadata) {
            report("unknown type '\(type)'", node)
        } else if options.strict, let types = input.types, !types.isEmpty,
                  !types.contains(where: { canBe($0, target) }) {
            let described = types.sorted().map(FHIRPathStaticType.displayName).joined(separator: " | ")
            report("impossible type test: a value of type \(described) is never a \(type)", node)
        }
        switch result {
        case .boolean: return .boolean
        case .cast: return FHIRPathStaticType(types: [target], isSingleton: input.isSingleton)
        case .filter: return FHIRPathStaticType(types: [target], isSingleton: input.isSingleton)
        }
    }

    /// True when a value statically typed `type` may at run time be a `target`.
    private func canBe(_ type: String, _ target: String) -> Bool {
        if type == target { return true }
        if type.hasPrefix("System.") || target.hasPrefix("System.") {
            // FHIR primitives are not System values, but a System type test on them is merely false.
            return type.hasPrefix("System.") && target.hasPrefix("System.") ? type == target : false
        }
        let concrete = type.contains(".") ? "BackboneElement" : type
        return FHIRPathTypes.isType(concrete, derivedFrom: target, metadata: metadata)
            || FHIRPathTypes.isType(target, derivedFrom: concrete, metadata: metadata)
    }

    // MARK: Functions

    private mutating func call(_ function: FHIRPathFunction, node: FHIRPathNode, input: FHIRPathStaticType,
                               arguments: [FHIRPathNode], type: FHIRPathTypeSpecifier?, this: FHIRPathStaticType) -> FHIRPathStaticType {
        // Lambda arguments see each input item as $this; the others see the enclosing $this.
        var item = input
        item.isSingleton = true
        item.isUnordered = false
        var argumentTypes: [FHIRPathStaticType] = []
        for argument in arguments {
            if function.takesLambda || function == .iif {
                let focus = function == .iif && base(of: node) == nil ? this : item
                argumentTypes.append(check(argument, input: focus, this: focus))
            } else {
                argumentTypes.append(check(argument, input: this, this: this))
            }
        }
        let ordered: Set<FHIRPathFunction> = [.first, .last, .tail, .skip, .take, .single]
        if options.checkOrderedFunctions && input.isUnordered && ordered.contains(function) {
            report("\(function.rawValue)() depends on order, but the collection's order is undefined", node)
        }
        let stringFunctions: Set<FHIRPathFunction> = [.indexOf, .lastIndexOf, .substring, .startsWith, .endsWith, .contains,
            .upper, .lower, .replace, .matches, .matchesFull, .replaceMatches, .length, .toChars, .encode, .decode,
            .escape, .unescape, .trim, .split]
        if options.strict, stringFunctions.contains(function), let types = input.types, !types.isEmpty,
           !types.contains(where: isStringLike) {
            report("\(function.rawValue)() needs a string, but the input is \(input)", node)
        }
        switch function {
        case .empty, .exists, .all, .allTrue, .anyTrue, .allFalse, .anyFalse, .subsetOf, .supersetOf, .isDistinct,
             .not, .hasValue, .convertsToBoolean, .convertsToInteger, .convertsToDecimal, .convertsToString,
             .convertsToDate, .convertsToDateTime, .convertsToTime, .convertsToQuantity, .startsWith, .endsWith,
             .contains, .matches, .matchesFull, .comparable, .conformsTo, .memberOf, .htmlChecks:
            return .boolean
        case .is:
            guard let type else { return .boolean }
            return typeTest(input, type, node: node, result: .boolean)
        case .as, .ofType:
            guard let type else { return .any }
            var result = typeTest(input, type, node: node, result: function == .as ? .cast : .filter)
            if function == .ofType { result.isSingleton = input.isSingleton }
            return result
        case .count, .indexOf, .lastIndexOf, .length, .toInteger, .precision, .yearOf, .monthOf, .dayOf, .hourOf,
             .minuteOf, .secondOf, .millisecondOf:
            return .system("Integer")
        case .where, .distinct, .intersect, .exclude, .trace, .sort, .skip, .take, .tail:
            var result = input
            result.isSingleton = input.isSingleton
            if function == .skip || function == .take || function == .tail || function == .sort { result.isUnordered = false }
            return result
        case .first, .last, .single:
            var result = input
            result.isSingleton = true
            result.isUnordered = false
            return result
        case .select:
            var result = argumentTypes.first ?? .any
            result.isSingleton = false
            return result
        case .repeat, .repeatAll:
            return .any
        case .union, .combine:
            return input.union(argumentTypes.first ?? .any)
        case .coalesce:
            return argumentTypes.dropFirst().reduce(argumentTypes.first ?? .any) { $0.union($1) }
        case .iif:
            if options.strict, let criterion = argumentTypes.first, let types = criterion.types, !types.isEmpty,
               !types.contains(where: { $0 == "System.Boolean" || $0 == "boolean" }) {
                report("iif() criterion must be a Boolean, but it is \(criterion)", arguments[0])
            }
            let branches = argumentTypes.dropFirst()
            return branches.dropFirst().reduce(branches.first ?? .any) { $0.union($1) }
        case .toBoolean: return .boolean
        case .toDecimal, .avg, .exp, .ln, .log, .power, .sqrt, .timezoneOffsetOf: return .system("Decimal")
        case .toString, .upper, .lower, .replace, .replaceMatches, .substring, .encode, .decode, .escape, .unescape,
             .trim, .join:
            return .system("String")
        case .toChars, .split:
            return FHIRPathStaticType(types: ["System.String"], isSingleton: false)
        case .toDate, .today, .dateOf: return .system("Date")
        case .toDateTime, .now: return .system("DateTime")
        case .toTime, .timeOfDay, .timeOf: return .system("Time")
        case .toQuantity: return .system("Quantity")
        case .abs, .ceiling, .floor, .round, .truncate, .sum, .min, .max, .lowBoundary, .highBoundary:
            var result = input
            result.isSingleton = true
            return result
        case .children, .descendants:
            var result = FHIRPathStaticType.any
            result.isUnordered = true
            return result
        case .extension:
            return FHIRPathStaticType(types: ["Extension"], isSingleton: false)
        case .resolve, .aggregate, .type, .getValue:
            return .any
        case .weight, .ordinal:
            return FHIRPathStaticType(types: ["System.Decimal"], isSingleton: false)
        case .answers:
            return .any
        }
    }

    private func base(of node: FHIRPathNode) -> FHIRPathNode? {
        if case .call(let base, _, _, _) = node.kind { return base }
        return nil
    }

    private func isStringLike(_ type: String) -> Bool {
        type == "System.String" || FHIRPathTypes.systemType(ofPrimitive: type) == "String"
    }

    // MARK: Operators

    private mutating func binary(_ op: FHIRPathNode.BinaryOperator, _ left: FHIRPathStaticType, _ right: FHIRPathStaticType,
                                 node: FHIRPathNode) -> FHIRPathStaticType {
        switch op {
        case .and, .or, .xor, .implies, .equal, .notEqual, .equivalent, .notEquivalent, .less, .greater, .lessOrEqual,
             .greaterOrEqual, .in, .contains:
            return .boolean
        case .union:
            return left.union(right)
        case .concatenate:
            return .system("String")
        default:
            guard let l = single(left), let r = single(right) else { return .any }
            let numbers: Set<String> = ["Integer", "Decimal"]
            let temporal: Set<String> = ["Date", "DateTime", "Time"]
            if temporal.contains(l) && numbers.contains(r) && options.strict {
                report("a \(l) can only be moved by a quantity with a time unit, not by a plain number", node)
                return .any
            }
            if temporal.contains(l) && r == "Quantity" { return .system(l) }
            if l == "Quantity" || r == "Quantity" { return .system("Quantity") }
            if l == "String" && r == "String" && op == .add { return .system("String") }
            if numbers.contains(l) && numbers.contains(r) {
                if op == .divide || l == "Decimal" || r == "Decimal" { return .system(op == .div ? "Integer" : "Decimal") }
                return .system("Integer")
            }
            return .any
        }
    }

    /// The System type of a statically single-typed operand.
    private func single(_ type: FHIRPathStaticType) -> String? {
        guard let types = type.types, types.count == 1, let only = types.first else { return nil }
        if only.hasPrefix("System.") { return String(only.dropFirst(7)) }
        if FHIRPathTypes.quantityTypes.contains(only) { return "Quantity" }
        return FHIRPathTypes.systemType(ofPrimitive: only)
    }
}

extension FHIRPathExpression {
    /// Type-checks this expression from `startingType` (`"CarePlan"`, `"Observation"`, or a datatype)
    /// against the metadata, without data.
    ///
    /// `resourceType` types `%resource` and `%rootResource` when the expression starts inside a resource
    /// (from `CarePlan.activity`, `%resource` is a `CarePlan`).
    public func check(startingType: String, resourceType: String? = nil, options: FHIRPathStaticChecker.Options = .init(),
                      metadata: FHIRMetadata = .r4) -> FHIRPathStaticChecker.Report {
        var checker = FHIRPathStaticChecker(metadata: metadata, options: options, source: source, startType: startingType)
        checker.resourceType = resourceType
        let start = FHIRPathStaticType(types: [startingType], isSingleton: true)
        let result = checker.check(root, input: start, this: start)
        return FHIRPathStaticChecker.Report(resultType: result, errors: checker.errors)
    }
}
