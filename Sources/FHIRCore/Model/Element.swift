/// One node of a FHIR resource tree: the generic, lossless element model that every R4 resource is read
/// into, whatever its type and whichever format (JSON or XML) it came from.
///
/// The model is deliberately format-neutral and metadata-free, so that reading never loses anything the
/// metadata does not know about (unknown elements are kept and reported by validation, not dropped):
///
/// - A **resource** is an element whose ``resourceType`` is set (the root, each `contained` entry, each
///   `Bundle.entry.resource`, `Parameters.parameter.resource`...). Its ``name`` is the name of the field
///   that holds it (`"contained"`, `"resource"`), or the resource type for a root.
/// - A **primitive** keeps its value exactly as written, in ``value``: `1.50` stays `"1.50"`, `1E-245`
///   stays `"1E-245"`. ``valueKind`` records the JSON token it came from, so that validation can reject
///   `"valueInteger": "5"` and writers can reproduce numbers and booleans; XML input yields `.string`
///   and writers rely on the metadata instead.
/// - A primitive's `id` and `extension` (JSON `_given` siblings, XML attributes and children) are
///   ordinary ``children`` named `"id"` and `"extension"`. The same goes for the `id` of a complex
///   element and the `url` of an Extension, which XML writes as attributes.
/// - A repeating element is a run of siblings with the same ``name``, in order. A `null` slot of a JSON
///   primitive array (`"given": ["a", null]` paired with `"_given": [null, {...}]`) is an element with
///   no value whose children carry the id/extension; a slot null in both arrays has neither.
/// - The narrative `div` is a primitive of kind xhtml whose ``value`` is the XHTML text.
/// - Choice elements keep their typed name (`valueQuantity`); the metadata maps it to `value[x]`.
/// - ``jsonArrayItem`` records whether the JSON reader found the element inside a JSON array, so that
///   validation can report a repeating element written as a single value, or the reverse. It is a fact
///   about the source text, not about the content: XML input and trees built in code leave it `false`,
///   and `==` and `hash(into:)` ignore it, so a tree read from JSON equals the same tree read from XML.
///
/// Children are kept in document order; writers put them in definition order using the metadata.
public struct Element: Hashable, Sendable {
    /// How a JSON primitive was written. XML input, which has only text, is read as `.string`.
    public enum ValueKind: UInt8, Hashable, Sendable {
        case string
        case number
        case boolean
    }

    /// The element's field name (`"given"`, `"valueQuantity"`, `"contained"`), or the resource type for
    /// a root resource.
    public var name: String
    /// The primitive value as written, or `nil` for a complex element or a primitive that only carries
    /// an id or extensions.
    public var value: String?
    /// The JSON token kind of ``value``; meaningful only when ``value`` is set.
    public var valueKind: ValueKind
    /// True when the JSON reader read this element as an item of a JSON array (`"name": [{...}]`,
    /// `"given": ["a"]`, `"_given": [{...}]`), false for a single JSON value, XML input and trees built
    /// in code. Not part of equality.
    public var jsonArrayItem: Bool
    /// Set when this element is a resource: `"Patient"`, `"Bundle"`...
    public var resourceType: String?
    /// Child elements in document order (for a resource: its fields; for a primitive: `id`, `extension`).
    public var children: [Element]

    /// A resource element named after its type, as a root resource is.
    public static func resource(_ type: String, children: [Element] = []) -> Element {
        Element(name: type, resourceType: type, children: children)
    }

    /// True when this element is a resource (root, contained or nested).
    @inlinable public var isResource: Bool { resourceType != nil }

    /// The children with the given name, in order.
    public func children(named name: String) -> [Element] {
        children.filter { $0.name.hasSameBytes(as: name) }
    }

    /// The first child with the given name.
    @inlinable
    public func child(named name: String) -> Element? {
        firstChildIndex(named: name).map { children[$0] }
    }

    /// The value of the first child with the given name (`resource.childValue("id")`): read in place,
    /// without copying the child (validation asks for one on almost every complex element).
    @inlinable
    public func childValue(_ name: String) -> String? {
        firstChildIndex(named: name).flatMap { children[$0].value }
    }

    /// The position of the first child with the given name.
    @inlinable
    public func firstChildIndex(named name: String) -> Int? {
        var index = 0
        let count = children.count
        while index < count {
            if children[index].name.hasSameBytes(as: name) { return index }
            index += 1
        }
        return nil
    }

    /// Equal content: name, value, value kind, resource type and children. ``jsonArrayItem`` is left out,
    /// being a detail of the JSON text the element was read from.
    public static func == (lhs: Element, rhs: Element) -> Bool {
        lhs.name == rhs.name && lhs.value == rhs.value && lhs.valueKind == rhs.valueKind
            && lhs.resourceType == rhs.resourceType && lhs.children == rhs.children
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(value)
        hasher.combine(valueKind)
        hasher.combine(resourceType)
        hasher.combine(children)
    }
}

extension Element {
    /// An element from its parts. Declared here, in an extension, so that the struct keeps its implicit
    /// memberwise initializer, which this one calls: Swift 6.3's optimizer, given an explicit
    /// initializer that assigns each stored property, made the element twice and copied one into the
    /// result (a retain, then a release, of each of its strings and its children, every time an element
    /// is made: 1.3 million times in a parse of synthea-r4). The memberwise one builds it in place.
    public init(
        name: String,
        value: String? = nil,
        valueKind: ValueKind = .string,
        resourceType: String? = nil,
        children: [Element] = [],
        jsonArrayItem: Bool = false
    ) {
        self.init(
            name: name, value: value, valueKind: valueKind, jsonArrayItem: jsonArrayItem,
            resourceType: resourceType, children: children)
    }
}
