import FHIRCore
/// Type knowledge FHIRPath needs beyond the metadata: the System types, how FHIR primitives map onto
/// them, the primitive specializations (`code` is a `string`, `uuid` a `uri`), and the `is`/`as` test.
enum FHIRPathTypes {
    static let systemTypes: Set<String> = ["Boolean", "Integer", "Long", "Decimal", "String", "Date", "DateTime", "Time", "Quantity"]

    static let quantityTypes: Set<String> = ["Quantity", "Age", "Duration", "Distance", "Count", "SimpleQuantity", "MoneyQuantity"]

    /// The System type a FHIR primitive type reads as.
    static func systemType(ofPrimitive type: String) -> String? {
        // No primitive type name is longer than 12 bytes or starts with a capital: most complex types
        // are told apart without comparing with each name below. The names are told apart by length
        // first, so that a name is compared with one or two others, not twenty (a navigation step and
        // a criterion ask this of every element they meet).
        guard let first = type.utf8.first, first >= UInt8(ascii: "a"), type.utf8.count <= 12 else { return nil }
        switch type.utf8.count {
        case 2: return type == "id" ? "String" : nil
        case 3: return type == "uri" || type == "url" || type == "oid" ? "String" : nil
        case 4:
            switch first {
            case UInt8(ascii: "c"): return type == "code" ? "String" : nil
            case UInt8(ascii: "u"): return type == "uuid" ? "String" : nil
            case UInt8(ascii: "d"): return type == "date" ? "Date" : nil
            case UInt8(ascii: "t"): return type == "time" ? "Time" : nil
            default: return nil
            }
        case 5: return type == "xhtml" ? "String" : nil
        case 6: return type == "string" ? "String" : nil
        case 7:
            switch first {
            case UInt8(ascii: "b"): return type == "boolean" ? "Boolean" : nil
            case UInt8(ascii: "d"): return type == "decimal" ? "Decimal" : nil
            case UInt8(ascii: "i"): return type == "integer" ? "Integer" : type == "instant" ? "DateTime" : nil
            default: return nil
            }
        case 8: return type == "dateTime" ? "DateTime" : type == "markdown" ? "String" : nil
        case 9: return type == "canonical" ? "String" : type == "integer64" ? "Integer" : nil
        case 11: return type == "positiveInt" || type == "unsignedInt" ? "Integer" : nil
        case 12: return type == "base64Binary" ? "String" : nil
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
        matches(typeName: node.typeName, type, exact: exact, metadata: metadata)
    }

    /// ``matches(_:_:exact:metadata:)`` for an element of type `typeName` (nil when unknown).
    static func matches(typeName: String?, _ type: FHIRPathTypeSpecifier, exact: Bool, metadata: FHIRMetadata) -> Bool {
        if type.namespace == "System" { return false }
        guard let typeName else { return false }
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
