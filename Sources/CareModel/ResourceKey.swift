/// A FHIR resource's type and id: the one type/id pair of CareGate. The mappings key source resources
/// by it, provenance and the store's resource links name their resource with it (``Provenance/resource``),
/// and the FHIR linkage of entities (``FHIRLinkage``) holds it.
public struct ResourceKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let type: String
    public let id: String

    public init(type: String, id: String) {
        self.type = type
        self.id = id
    }

    /// `Type/id`.
    public var description: String { "\(type)/\(id)" }

    /// The key a ``description`` (`Type/id`) names; nil without a `/`.
    public init?<Text: StringProtocol>(description text: Text) {
        guard let slash = text.firstIndex(of: "/") else { return nil }
        self.init(type: String(text[..<slash]), id: String(text[text.index(after: slash)...]))
    }

    public static func < (lhs: ResourceKey, rhs: ResourceKey) -> Bool { (lhs.type, lhs.id) < (rhs.type, rhs.id) }
}

extension Provenance {
    /// The resource the entity was made from.
    public var resource: ResourceKey { ResourceKey(type: fhirType, id: fhirID) }
}
