import FHIRCore
import Foundation
/// A node of a parsed FHIRPath expression; `range` locates it in the source for error messages.
final class FHIRPathNode: Sendable {
    enum BinaryOperator: String, Sendable {
        case multiply = "*", divide = "/", div, mod
        case add = "+", subtract = "-", concatenate = "&"
        case union = "|"
        case less = "<", greater = ">", lessOrEqual = "<=", greaterOrEqual = ">="
        case equal = "=", equivalent = "~", notEqual = "!=", notEquivalent = "!~"
        case `in`, contains
        case and, or, xor, implies
    }

    enum Kind: Sendable {
        case literal(FHIRPathValue)
        /// `{}`
        case empty
        /// A name at the start of a path, navigated from the focus (or a type name matching the root).
        case identifier(String)
        /// `base.name`
        case member(FHIRPathNode, String)
        /// `base.function(args)`, or `function(args)` on the focus when `base` is nil. `type` is set for
        /// `is`, `as` and `ofType`, whose argument is a type specifier.
        case call(FHIRPathNode?, FHIRPathFunction, [FHIRPathNode], FHIRPathTypeSpecifier?)
        /// `base[index]`
        case indexer(FHIRPathNode, FHIRPathNode)
        case binary(BinaryOperator, FHIRPathNode, FHIRPathNode)
        /// Unary `-` (negate true) or `+`.
        case unary(negate: Bool, FHIRPathNode)
        /// `operand is T` (isAs false) or `operand as T`.
        case typeOperator(isCast: Bool, FHIRPathNode, FHIRPathTypeSpecifier)
        case this
        case index
        case total
        /// `%name`
        case variable(String)
    }

    let kind: Kind
    let range: Range<Int>
    let depth: Int
    /// For a navigation step (`identifier`, `member`): what its name resolves to in the element types it
    /// has met.
    let resolutions: StepResolutions?

    init(_ kind: Kind, range: Range<Int>, depth: Int = 1) {
        self.kind = kind
        self.range = range
        self.depth = depth
        switch kind {
        case .identifier, .member: resolutions = StepResolutions()
        default: resolutions = nil
        }
    }
}

/// What a navigation step's name resolves to in each element type (metadata context) it meets. A
/// compiled expression runs on thousands of resources and each of its steps meets the same one or two
/// types every time, while looking the pair up in the metadata hashes both strings; this remembers
/// the first few. Shared by the threads that evaluate the expression, hence the lock.
final class StepResolutions: @unchecked Sendable {
    /// A class, so that handing one out takes a retain rather than a copy of the definition.
    final class Resolution: Sendable {
        /// The child's definition, when the context defines the name.
        let resolved: ResolvedChild?
        /// Whether children named the step's name plus a type suffix can be what it selects.
        let mayBeChoice: Bool

        init(resolved: ResolvedChild?, mayBeChoice: Bool) {
            self.resolved = resolved
            self.mayBeChoice = mayBeChoice
        }
    }

    /// More contexts than this are looked up each time (a step over `descendants()`, say).
    private static let capacity = 8
    private let lock = NSLock()
    // Only touched under the lock: the dynamic exclusivity checks would cost as much as the lookup.
    @exclusivity(unchecked) private var contexts: [String] = []
    @exclusivity(unchecked) private var known: [Resolution] = []

    /// The resolution in `context`, worked out by `resolve` the first time.
    func resolution(in context: String, _ resolve: () -> Resolution) -> Resolution {
        lock.lock()
        if let index = contexts.firstIndex(of: context) {
            defer { lock.unlock() }
            return known[index]
        }
        lock.unlock()
        let resolution = resolve()
        lock.lock()
        if contexts.count < Self.capacity, !contexts.contains(context) {
            contexts.append(context)
            known.append(resolution)
        }
        lock.unlock()
        return resolution
    }
}

/// A type named in `is`, `as` or `ofType`: `Quantity`, `FHIR.Patient`, `System.String`.
public struct FHIRPathTypeSpecifier: Hashable, Sendable, CustomStringConvertible {
    /// `"FHIR"`, `"System"`, or nil when unqualified.
    public let namespace: String?
    public let name: String

    public init(namespace: String?, name: String) {
        self.namespace = namespace
        self.name = name
    }

    public var description: String { namespace.map { "\($0).\(name)" } ?? name }
}
