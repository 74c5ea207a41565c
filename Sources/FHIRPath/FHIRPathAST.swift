import FHIRCore
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
