import FHIRCore
/// Type knowledge FHIRPath needs beyond the metadata: the System types, how FHIR primitives map onto
/// them, the primitive specializations (`code` is a `string`, `uuid` a `uri`), and the `is`/`as` test.
enum FHIRPathTypes {
    static let systemTypes: Set<String> = ["Boolean", "Integer", "Long", "Decimal", "String", "Date", "DateTime", "Time", "Quantity"]

    static let quantityTypes: Set<String> = ["Quantity", "Age", "Duration", "Distance", "Count", "SimpleQuantity", "MoneyQuantity"]

    /// The System type a FHIR primitive type reads as.
    static func systemType(ofPrimitive type: String) -> String? {
        // No primitive type name is longer than 12 bytes or starts with a capital: most complex types
        // are told apart without comparing with each name below.
        guard let first = type.utf8.first, first >= UInt8(ascii: "a"), type.utf8.count <= 12 else { return nil }
        switch type {
        case "boolean": return "Boolean"
        case "integer", "positiveInt", "unsignedInt", "integer64": return "Integer"
        case "decimal": return "Decimal"
        case "date": return "Date"
        case "dateTime", "instant": return "DateTime"
        case "time": return "Time"
        case "string", "code", "id", "markdown", "uri", "url", "canonical", "oid", "uuid", "base64Binary", "xhtml":
            return "String"
        default: return nil
        }
    }

    static func isPrimitive(_ type: String) -> Bool { systemType(ofPrimitive: type) != nil }

    /// The type a primitive specializes, per the R4 definitions.
    private static let primitiveParent: [String: String] = [
        "code": "string", "id": "string", "markdown": "string", "url": "uri", "canonical": "uri", "oid": "uri",
        "uuid": "uri", "positiveInt": "integer", "unsignedInt": "integer",
    ]

    /// True when `type` is `base` or a specialization of it.
    static func isType(_ type: String, derivedFrom base: String, metadata: FHIRMetadata) -> Bool {
        if type == base { return true }
        if base == "Element" || base == "Base" { return !metadata.isResourceType(type) }
        if let parent = primitiveParent[type] { return isType(parent, derivedFrom: base, metadata: metadata) }
        if isPrimitive(type) { return false }
        if base == "Quantity" && quantityTypes.contains(type) { return true }
        if base == "BackboneElement" && type.utf8.contains(UInt8(ascii: ".")) { return true }
        if metadata.isType(type, derivedFrom: base) { return true }
        if base == "Resource" || base == "DomainResource" {
            return metadata.isResourceType(type) && (base == "Resource" || !["Bundle", "Parameters", "Binary"].contains(type))
        }
        return false
    }

    /// True when `value` is of the named type. `exact` (for `as` and `ofType`) does not accept a
    /// primitive specialization for its parent (`code` is not `as(string)`), as the R4 suite requires.
    static func matches(_ value: FHIRPathValue, _ type: FHIRPathTypeSpecifier, exact: Bool, metadata: FHIRMetadata) -> Bool {
        if case .element(let node) = value { return matches(node, type, exact: exact, metadata: metadata) }
        if type.namespace == "FHIR" { return false }
        return value.systemTypeName == type.name
    }

    /// ``matches(_:_:exact:metadata:)`` for an element node.
    static func matches(_ node: FHIRPathElementNode, _ type: FHIRPathTypeSpecifier, exact: Bool, metadata: FHIRMetadata) -> Bool {
        if type.namespace == "System" { return false }
        guard let typeName = node.typeName else { return false }
        if typeName == type.name { return true }
        if exact && isPrimitive(typeName) { return false }
        return isType(typeName, derivedFrom: type.name, metadata: metadata)
    }

    /// True when the type name is one FHIRPath can test for.
    static func isKnown(_ type: FHIRPathTypeSpecifier, metadata: FHIRMetadata) -> Bool {
        let system = systemTypes.contains(type.name)
        let fhir = isPrimitive(type.name) || quantityTypes.contains(type.name) || metadata.type(named: type.name) != nil
            || ["Element", "BackboneElement", "Resource", "DomainResource", "Base"].contains(type.name)
        // Until the metadata is available, any capitalised FHIR type name is accepted.
        let lenient = metadata.resourceTypes.isEmpty && (type.name.first?.isUppercase ?? false)
        switch type.namespace {
        case "System": return true // an unknown System type is simply never matched
        case "FHIR": return fhir || lenient
        case nil: return system || fhir || lenient
        default: return false
        }
    }
}
