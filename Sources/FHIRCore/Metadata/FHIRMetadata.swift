/// The R4 (4.0.1) structure metadata every other part of the FHIR layer is driven by: for each resource
/// and datatype, its elements with their types (choice types expanded on lookup), cardinality, primitive
/// kind, XML representation and required-binding codes.
///
/// The data is generated from the official StructureDefinitions by `Scripts/generate-r4-metadata.py`
/// into `R4MetadataData.swift` and decoded once, on first use.
///
/// ## Type contexts
/// Lookups take a *context*: the name of a type (`"Quantity"`, `"CarePlan"`) or, for an inline backbone
/// element, its definition path (`"CarePlan.activity.detail"`). ``ResolvedChild/type`` of a child is the
/// context of that child's own children, so a walk down a tree needs nothing else:
///
/// ```swift
/// let meta = FHIRMetadata.r4
/// let activity = meta.child("activity", of: "CarePlan")        // type "CarePlan.activity"
/// let detail = meta.child("detail", of: activity!.type)         // type "CarePlan.activity.detail"
/// let timing = meta.child("scheduledTiming", of: detail!.type)  // type "Timing", choice of scheduled[x]
/// ```
public final class FHIRMetadata: Sendable {
    /// The R4 metadata, decoded on first use (a static `let` is initialized lazily, once, thread-safely).
    public static let r4 = FHIRMetadata(data: FHIRMetadata.r4Data)

    private let types: NameTable<TypeDefinition>
    /// Definition names per context (`value` for `value[x]`).
    private let elementsByName: NameTable<NameTable<ElementInfo>>
    /// Every context's children and elements, by ``ResolvedChild/contextIndex``: a walk goes from an
    /// element to its children's context by position rather than by hashing its name.
    private let contextsByIndex: [ContextDefinition]
    /// The index in ``contextsByIndex`` of each context, by its name.
    private let contextIndexesByName: NameTable<Int>
    /// The same children as flat tables of plain values, for walks over every element (``childLookup``).
    private let childLookupStorage: ChildLookupStorage
    private let concreteResourceTypes: [String]
    private let invariantsByPath: [String: [Invariant]]

    /// The names of the elements, in any context, whose type is a resource (`contained`, `resource`,
    /// `outcome` in R4): where the JSON reader takes an object with a `resourceType` key for a resource.
    public let resourceElementNames: Set<String>
    /// The `url` paths of the canonical resources (`ValueSet.url`, `Library.url`...): the resource types
    /// with `url`, `version` and `status`, whose url R4 defines as "an absolute URI".
    private let canonicalURLPaths: NameTable<Bool>
    /// How many element definitions there are: every ``ElementInfo/serial`` is below it.
    public let elementCount: Int

    /// Decodes metadata text in the generator's format.
    init(data: String) {
        let decoded = R4MetadataDecoder(data)
        elementCount = decoded.elementCount
        types = NameTable(decoded.types)
        invariantsByPath = decoded.invariants
        concreteResourceTypes = decoded.typeOrder.filter {
            guard let type = decoded.types[$0] else { return false }
            return type.kind == .resource && !type.isAbstract
        }
        var children: [String: [String: ResolvedChild]] = [:]
        var byName: [String: [String: ElementInfo]] = [:]
        let contextNames = decoded.elements.keys.sorted()
        let contextIndexes = Dictionary(uniqueKeysWithValues: contextNames.enumerated().map { ($1, $0) })
        func resolvedChild(_ info: ElementInfo, _ type: String) -> ResolvedChild {
            ResolvedChild(info: info, type: type, contextIndex: contextIndexes[type] ?? -1)
        }
        for (context, elements) in decoded.elements {
            var resolved: [String: ResolvedChild] = [:]
            var names: [String: ElementInfo] = [:]
            for info in elements {
                names[info.name] = info
                if info.isChoice {
                    for type in info.types {
                        resolved[info.name + FHIRMetadata.choiceSuffix(of: type)] = resolvedChild(info, type)
                    }
                } else {
                    let type = info.childContext ?? info.types.first ?? "Element"
                    resolved[info.name] = resolvedChild(info, type)
                }
            }
            children[context] = resolved
            byName[context] = names
        }
        contextsByIndex = contextNames.map { name in
            let elements = decoded.elements[name] ?? []
            return ContextDefinition(children: NameTable(children[name] ?? [:]), elements: elements,
                                     required: elements.filter { $0.min > 0 })
        }
        contextIndexesByName = NameTable(contextIndexes)
        childLookupStorage = ChildLookupStorage(contexts: contextsByIndex)
        elementsByName = NameTable(byName.mapValues(NameTable.init))
        var resourceNames: Set<String> = []
        for elements in decoded.elements.values {
            for info in elements where info.types.contains(where: { decoded.types[$0]?.kind == .resource }) {
                resourceNames.insert(info.name)
            }
        }
        resourceElementNames = resourceNames
        var canonicalPaths: [String: Bool] = [:]
        for type in concreteResourceTypes {
            let names = Set((decoded.elements[type] ?? []).map(\.name))
            if names.isSuperset(of: ["url", "version", "status"]) { canonicalPaths[type + ".url"] = true }
        }
        canonicalURLPaths = NameTable(canonicalPaths)
    }

    /// The invariants (`ElementDefinition.constraint`) defined at a definition path: a type name
    /// (`"Quantity"`, `"DomainResource"`) or an element path (`"Patient.contact"`). Only those the
    /// definition states itself: a type's instances are also bound by its base types' invariants.
    public func invariants(at path: String) -> [Invariant] { invariantsByPath[path] ?? [] }

    /// Every invariant of the metadata, by definition path.
    public var allInvariants: [String: [Invariant]] { invariantsByPath }

    /// Every concrete resource type name (`"Account"` ... `"VisionPrescription"`).
    public var resourceTypes: [String] { concreteResourceTypes }

    /// Every resource and datatype name, abstract ones included.
    public var typeNames: [String] { types.map(\.key).sorted() }

    /// The definition of a resource or datatype by name.
    public func type(named name: String) -> TypeDefinition? { types[name] }

    /// The element definitions of a context (type name or backbone path), in definition order.
    public func elements(of context: String) -> [ElementInfo] { self.context(named: context)?.elements ?? [] }

    /// The child `name` of a context as it appears in an instance (`"valueQuantity"`, `"given"`),
    /// resolved to its definition and its concrete type. `nil` when the context has no such element.
    public func child(_ name: String, of context: String) -> ResolvedChild? {
        self.context(named: context)?.children[name]
    }

    /// Every instance name a context's children can have, with what it resolves to: for looking up
    /// many children of one element with one lookup of its context.
    public func children(of context: String) -> NameTable<ResolvedChild>? {
        self.context(named: context)?.children
    }

    /// The children and element definitions of the context at `index` (a ``ResolvedChild/contextIndex``);
    /// nil for an index the metadata did not give.
    public func context(at index: Int) -> ContextDefinition? {
        index >= 0 && index < contextsByIndex.count ? contextsByIndex[index] : nil
    }

    /// The index of the context named `name` (as ``ResolvedChild/contextIndex`` gives it), nil when the
    /// metadata has no such context.
    public func contextIndex(named name: String) -> Int? { contextIndexesByName[name] }

    /// Every context's children as flat tables of plain values, looked up without reference counting:
    /// valid only while this metadata is alive (the caller holds it), see ``ChildLookup``.
    public var childLookup: ChildLookup { childLookupStorage.lookup }

    /// The children and element definitions of the context named `name` (a type name or a backbone
    /// element's path); nil when the metadata has no such context.
    public func context(named name: String) -> ContextDefinition? {
        contextIndexesByName[name].map { contextsByIndex[$0] }
    }

    /// The element definition named `name` in a context, by its definition name: `"value"` finds
    /// `Observation.value[x]`. Used to explain a choice element written with a wrong type suffix.
    public func element(named name: String, of context: String) -> ElementInfo? {
        elementsByName[context]?[name]
    }

    /// The suffix a choice element's instance name carries for `type`: `"Quantity"`, `"DateTime"`.
    public static func choiceSuffix(of type: String) -> String {
        guard let first = type.first else { return type }
        return first.uppercased() + type.dropFirst()
    }

    /// Whether `path` is the `url` of a canonical resource (`canonicalURLPaths`): `"ValueSet.url"`.
    public func isCanonicalResourceURL(path: String) -> Bool {
        canonicalURLPaths[path] ?? false
    }

    /// True when `name` is a concrete (non-abstract) resource type.
    public func isResourceType(_ name: String) -> Bool {
        guard let type = types[name] else { return false }
        return type.kind == .resource && !type.isAbstract
    }

    /// The primitive kind of a type name, or `nil` when the type is not primitive.
    public func primitiveType(of typeName: String) -> PrimitiveType? { PrimitiveType(rawValue: typeName) }

    /// True when `type` is `base` or derives from it (`Age` from `Quantity`, `Patient` from
    /// `DomainResource` and `Resource`, every datatype from `Element`).
    public func isType(_ type: String, derivedFrom base: String) -> Bool {
        var current: String? = type
        var steps = 0
        while let name = current, steps < 32 {
            if name == base { return true }
            current = types[name]?.baseType
            steps += 1
        }
        return false
    }
}

/// A resource or datatype definition.
public struct TypeDefinition: Sendable {
    public enum Kind: String, Sendable { case primitive, complex, resource }

    public let name: String
    public let kind: Kind
    public let isAbstract: Bool
    /// The type this one specializes (`"DomainResource"` for Patient, `"Quantity"` for Age), if any.
    public let baseType: String?

    public init(name: String, kind: Kind, isAbstract: Bool, baseType: String?) {
        self.name = name
        self.kind = kind
        self.isAbstract = isAbstract
        self.baseType = baseType
    }
}

/// One element definition of a context.
///
/// A class: validation and the writers pass definitions around per element, and a copy of a struct of
/// this many references costs a retain and a release each.
public final class ElementInfo: Sendable {
    /// How XML writes the element.
    public enum Representation: Sendable { case element, xmlAttribute, xhtml }

    /// The definition path: `"Observation.value[x]"`, `"CarePlan.activity.detail.status"`.
    public let path: String
    /// The instance name without `[x]`: `"value"`, `"status"`.
    public let name: String
    /// The allowed type codes, normalized to FHIR type names (`Resource.id` is `"id"`, `Element.id`
    /// `"string"`, `Extension.url` `"uri"`). A backbone element has `["BackboneElement"]` or `["Element"]`.
    public let types: [String]
    public let min: Int
    /// The maximum cardinality, `nil` for `*`.
    public let max: Int?
    /// True for `[x]` elements, whose instance name carries the type (`valueQuantity`).
    public let isChoice: Bool
    public let isModifier: Bool
    public let isSummary: Bool
    public let representation: Representation
    /// The codes allowed by a required binding whose value set can be expanded from the package alone.
    public let requiredBinding: RequiredBinding?
    /// The context holding this element's children when it is an inline backbone element or a
    /// `contentReference` (`"Questionnaire.item"` for `Questionnaire.item.item`); `nil` otherwise.
    public let childContext: String?
    /// Position among the context's elements, for writing in definition order.
    public let order: Int
    /// Position among every element of its metadata (from 0, below ``FHIRMetadata/elementCount``), for
    /// tables indexed by definition; -1 for a definition made outside the metadata.
    public let serial: Int

    /// True when instances hold a list (JSON array): max is not 1.
    public var isArray: Bool { max != 1 }

    public init(
        path: String, name: String, types: [String], min: Int, max: Int?, isChoice: Bool,
        isModifier: Bool, isSummary: Bool, representation: Representation,
        requiredBinding: RequiredBinding?, childContext: String?, order: Int, serial: Int = -1
    ) {
        self.path = path
        self.name = name
        self.types = types
        self.min = min
        self.max = max
        self.isChoice = isChoice
        self.isModifier = isModifier
        self.isSummary = isSummary
        self.representation = representation
        self.requiredBinding = requiredBinding
        self.childContext = childContext
        self.order = order
        self.serial = serial
    }
}

/// A required binding whose value set the package can expand.
public struct RequiredBinding: Sendable {
    public let valueSet: String
    /// The allowed codes (system-independent, as structural validation checks them).
    public let codes: Set<String>
    /// The same codes in a byte-hashed table: ``allows(_:)`` runs for every bound code validated, and
    /// a `Set<String>` hashes with the standard library's seeded hasher.
    private let codeTable: NameTable<Bool>

    public init(valueSet: String, codes: Set<String>) {
        self.valueSet = valueSet
        self.codes = codes
        codeTable = NameTable(Dictionary(uniqueKeysWithValues: codes.map { ($0, true) }))
    }

    /// Whether `code` is one of ``codes``.
    public func allows(_ code: String) -> Bool { codeTable[code] != nil }
}

/// An R4 invariant (`ElementDefinition.constraint`): a FHIRPath expression every instance of the
/// element at `path` must satisfy, evaluated by validation.
public struct Invariant: Sendable, Hashable {
    public enum Severity: String, Sendable { case error, warning }

    /// The constraint key: `"pat-1"`, `"ras-2"`.
    public let key: String
    public let severity: Severity
    /// What the constraint requires, in words (the `human` of the definition).
    public let human: String
    /// The FHIRPath expression, evaluated with the element as its focus.
    public let expression: String
    /// The definition path the invariant is defined at (`"Patient.contact"`, `"Quantity"`).
    public let path: String
    /// A best-practice recommendation (`dom-6`, `con-3`) rather than a rule of the specification.
    public let isBestPractice: Bool

    public init(key: String, severity: Severity, human: String, expression: String, path: String, isBestPractice: Bool = false) {
        self.key = key
        self.severity = severity
        self.human = human
        self.expression = expression
        self.path = path
        self.isBestPractice = isBestPractice
    }
}

/// What a walk needs of one context (a type, or a backbone element's path): the instance names its
/// children can have, its element definitions in order (an ``ElementInfo/order`` is a position here),
/// and those of them with a minimum cardinality above 0. A class: a walk takes one for every complex
/// element, and a reference is one retain where a struct of these tables is five.
public final class ContextDefinition: Sendable {
    /// The instance names children can have, choice elements expanded (`valueQuantity`, `valueString`...).
    public let children: NameTable<ResolvedChild>
    public let elements: [ElementInfo]
    /// The definitions that must occur (min > 0), in definition order: a cardinality check reads these
    /// rather than every definition of the context.
    public let required: [ElementInfo]

    init(children: NameTable<ResolvedChild>, elements: [ElementInfo], required: [ElementInfo]) {
        self.children = children
        self.elements = elements
        self.required = required
    }
}

/// A child name resolved in a context. A class: a lookup hands one out for every element parsed,
/// navigated or validated, and a reference is one retain where a copy of these fields is two.
public final class ResolvedChild: Sendable {
    public let info: ElementInfo
    /// The concrete type of this instance element and the context of its children: `"Quantity"` for
    /// `valueQuantity`, `"CarePlan.activity"` for a backbone, `"Resource"` for `contained` (the actual
    /// type is then the child's `resourceType`).
    public let type: String
    /// The primitive kind of `type`, or `nil` when it is not primitive (worked out once, here).
    public let primitive: PrimitiveType?
    /// Whether `type` is a backbone path (`"CarePlan.activity"`) rather than a type name (worked out
    /// once, here).
    public let isBackbone: Bool
    /// `type` when it is one of the few types walkers treat apart (worked out once, here, so that a
    /// walk tests a tag rather than comparing type names for every element).
    public let notableType: NotableType

    /// Where `type`'s children are defined in the metadata that made this (``FHIRMetadata/context(at:)``);
    /// -1 when unknown, and the context is then looked up by name.
    public let contextIndex: Int

    public init(info: ElementInfo, type: String, contextIndex: Int = -1) {
        self.info = info
        self.type = type
        self.contextIndex = contextIndex
        primitive = PrimitiveType(rawValue: type)
        isBackbone = type.utf8.contains(UInt8(ascii: "."))
        notableType = NotableType(typeName: type)
    }
}

/// The types whose instances validation and the writers treat apart from the rest (`Resource` for a
/// contained or entry resource, `Extension`, `Reference`...), and `other` for every other type.
public enum NotableType: Sendable {
    case resource, `extension`, reference, attachment, identifier, coding, codeableConcept
    /// Timing: its numbers are checked against what CareGate's schedules take (``TimingLimits``).
    case timing
    /// Quantity and the types that specialize it (Age, Count, Distance, Duration, and the
    /// SimpleQuantity and MoneyQuantity profiles).
    case quantity
    case other

    public init(typeName: String) {
        switch typeName {
        case "Resource": self = .resource
        case "Extension": self = .extension
        case "Reference": self = .reference
        case "Attachment": self = .attachment
        case "Identifier": self = .identifier
        case "Coding": self = .coding
        case "CodeableConcept": self = .codeableConcept
        case "Timing": self = .timing
        case "Quantity", "Age", "Count", "Distance", "Duration", "SimpleQuantity", "MoneyQuantity": self = .quantity
        default: self = .other
        }
    }
}

/// The R4 primitive types.
public enum PrimitiveType: String, Sendable, CaseIterable {
    case base64Binary, boolean, canonical, code, date, dateTime, decimal, id, instant, integer,
        markdown, oid, positiveInt, string, time, unsignedInt, uri, url, uuid, xhtml

    /// How JSON writes this primitive: numbers and booleans unquoted, everything else as a string.
    public var jsonKind: Element.ValueKind {
        switch self {
        case .boolean: .boolean
        case .integer, .decimal, .positiveInt, .unsignedInt: .number
        default: .string
        }
    }
}
