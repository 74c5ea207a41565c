/// Writes an ``Element`` tree as FHIR XML bytes.
///
/// Children go out in definition order (``ElementInfo/order``), elements of one name staying together in
/// their own order; `id` of an element and `url` of an Extension become attributes, a primitive's value
/// the `value` attribute, the narrative `div` its XHTML text unchanged, and a resource held by an element
/// is wrapped in it (`<contained><Patient>…</Patient></contained>`). Where the metadata does not know an
/// element, document order and the FHIR naming rules decide.
struct XMLWriter {
    private(set) var output: [UInt8] = []
    private let pretty: Bool
    private let metadata = FHIRMetadata.r4

    init(pretty: Bool) {
        self.pretty = pretty
        output.reserveCapacity(16 * 1024)
    }

    /// The XML declaration and the root resource, in the FHIR namespace.
    mutating func writeDocument(_ root: Element) {
        output.append(contentsOf: #"<?xml version="1.0" encoding="UTF-8"?>"#.utf8)
        writeResource(root, depth: 0, declareNamespace: true)
        if pretty { output.append(0x0A) }
    }

    /// `element` alone, as a child whose own children are defined under `context` (`Bundle.entry`).
    mutating func writeChild(_ element: Element, in context: String) {
        openTag(element.name)
        writeContent(of: element, name: element.name, context: context, isResource: false, depth: 1)
        if pretty { output.append(0x0A) }
    }

    // MARK: Elements

    private mutating func writeResource(_ resource: Element, depth: Int, declareNamespace: Bool) {
        let type = resource.resourceType ?? resource.name
        newline(depth)
        output.append(UInt8(ascii: "<"))
        output.append(contentsOf: type.utf8)
        if declareNamespace {
            output.append(contentsOf: #" xmlns="http://hl7.org/fhir""#.utf8)
        }
        writeContent(of: resource, name: type, context: type, isResource: true, depth: depth)
    }

    private mutating func writeElement(_ element: Element, placement: Placement, depth: Int) {
        if element.resourceType != nil {
            newline(depth)
            openTag(element.name)
            output.append(UInt8(ascii: ">"))
            writeResource(element, depth: depth + 1, declareNamespace: false)
            newline(depth)
            closeTag(element.name)
            return
        }
        newline(depth)
        if placement.isXHTML {
            writeXHTML(element.value ?? "")
            return
        }
        openTag(element.name)
        writeContent(of: element, name: element.name, context: placement.context, isResource: false, depth: depth)
    }

    /// Where a child goes, as the metadata (or the naming rules) say.
    private struct Placement {
        let index: Int
        let order: Int
        let isXHTML: Bool
        /// The context of the child's own children, when the metadata knows the child.
        let context: String?
    }

    /// What the writer needs of a child's definition, looked up once per context and name.
    private struct ChildInfo {
        let order: Int
        let representation: ElementInfo.Representation
        let type: String
    }

    private struct ContextAndName: Hashable {
        let context: String
        let name: String
    }

    private var infoCache: [ContextAndName: ChildInfo?] = [:]
    /// Placements of the elements being written, innermost last (reused: no allocation per element).
    private var placements: [Placement] = []

    private mutating func info(_ name: String, of context: String?) -> ChildInfo? {
        guard let context else { return nil }
        let key = ContextAndName(context: context, name: name)
        if let cached = infoCache[key] { return cached }
        let info = metadata.child(name, of: context).map {
            ChildInfo(order: $0.info.order, representation: $0.info.representation, type: $0.type)
        }
        infoCache[key] = info
        return info
    }

    /// Finishes the start tag of `element` (attributes, value) and writes its children in definition
    /// order and its end tag, or `/>` when it has no child elements.
    private mutating func writeContent(of element: Element, name: String, context: String?, isResource: Bool, depth: Int) {
        let base = placements.count
        var needsSort = false
        var previousOrder = Int.min
        var previousName: String?
        var childInfo: ChildInfo?
        // Through the buffer, children are read in place rather than copied out one by one.
        element.children.withUnsafeBufferPointer { children in
            for index in children.indices {
                // Repeated elements are siblings: one lookup serves the whole run.
                if children[index].name != previousName {
                    childInfo = info(children[index].name, of: context)
                    previousName = children[index].name
                }
                if isAttribute(children[index], info: childInfo, ownerIsResource: isResource, ownerName: name) {
                    writeAttribute(children[index].name, children[index].value ?? "")
                    continue
                }
                // Unknown elements keep their place after the known ones, in document order.
                let order = childInfo?.order ?? Int.max
                if order < previousOrder { needsSort = true }
                previousOrder = order
                placements.append(Placement(
                    index: index, order: order, isXHTML: isXHTML(children[index], info: childInfo), context: childInfo?.type
                ))
            }
        }
        if let value = element.value {
            writeAttribute("value", value)
        }
        if placements.count == base {
            output.append(contentsOf: "/>".utf8)
            return
        }
        if needsSort {
            placements[base...].sort { ($0.order, $0.index) < ($1.order, $1.index) }
        }
        output.append(UInt8(ascii: ">"))
        element.children.withUnsafeBufferPointer { children in
            for position in base..<placements.count {
                let placement = placements[position]
                writeElement(children[placement.index], placement: placement, depth: depth + 1)
            }
        }
        placements.removeSubrange(base...)
        newline(depth)
        closeTag(name)
    }

    private mutating func writeAttribute(_ name: String, _ value: String) {
        output.append(UInt8(ascii: " "))
        output.append(contentsOf: name.utf8)
        output.append(contentsOf: "=\"".utf8)
        XMLEscaping.appendAttribute(value, to: &output)
        output.append(UInt8(ascii: "\""))
    }

    /// The narrative as written, with the XHTML namespace declared if the text lacks it (JSON from
    /// careless producers), so that the div does not fall into the FHIR namespace. Whitespace before the
    /// div is not part of it and is dropped. The text is embedded unchanged, so it must be well-formed:
    /// `FHIRFormat.convert` checks that first (``XHTMLChecker/xmlProblem(in:)``).
    private mutating func writeXHTML(_ text: String) {
        let xhtml = text.utf8.drop { Self.isXMLSpace($0) }
        if xhtml.starts(with: "<div".utf8), !Self.declaresDefaultNamespace(startTag: xhtml) {
            output.append(contentsOf: #"<div xmlns="http://www.w3.org/1999/xhtml""#.utf8)
            output.append(contentsOf: xhtml.dropFirst(4))
        } else {
            output.append(contentsOf: xhtml)
        }
    }

    /// True when the start tag at the beginning of `tag` has an `xmlns` attribute (`xmlns="…"`,
    /// `xmlns = '…'`); prefixed declarations (`xmlns:x`) and text inside attribute values do not count.
    private static func declaresDefaultNamespace(startTag tag: Substring.UTF8View) -> Bool {
        var rest = tag.drop { !isXMLSpace($0) && $0 != UInt8(ascii: ">") && $0 != UInt8(ascii: "/") }
        while true {
            rest = rest.drop { isXMLSpace($0) }
            guard let first = rest.first, first != UInt8(ascii: ">"), first != UInt8(ascii: "/") else { return false }
            let name = rest.prefix { !isXMLSpace($0) && $0 != UInt8(ascii: "=") && $0 != UInt8(ascii: ">") }
            if name.elementsEqual("xmlns".utf8) { return true }
            rest = rest.dropFirst(name.count).drop { isXMLSpace($0) }
            guard rest.first == UInt8(ascii: "=") else { return false }
            rest = rest.dropFirst().drop { isXMLSpace($0) }
            guard let quote = rest.first, quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else { return false }
            rest = rest.dropFirst().drop { $0 != quote }.dropFirst()
        }
    }

    private static func isXMLSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    // MARK: Representation

    /// `id` of an element and `url` of an Extension are attributes; so is anything the metadata marks so.
    private func isAttribute(_ child: Element, info: ChildInfo?, ownerIsResource: Bool, ownerName: String) -> Bool {
        guard child.value != nil, child.children.isEmpty, child.resourceType == nil else { return false }
        if let info { return info.representation == .xmlAttribute }
        switch child.name {
        case "id": return !ownerIsResource
        case "url": return ownerName == "extension" || ownerName == "modifierExtension"
        default: return false
        }
    }

    private func isXHTML(_ element: Element, info: ChildInfo?) -> Bool {
        guard element.resourceType == nil else { return false }
        if let info { return info.representation == .xhtml }
        return element.name == "div" && element.children.isEmpty && (element.value?.hasPrefix("<") ?? false)
    }

    // MARK: Bytes

    private mutating func openTag(_ name: String) {
        output.append(UInt8(ascii: "<"))
        output.append(contentsOf: name.utf8)
    }

    private mutating func closeTag(_ name: String) {
        output.append(contentsOf: "</".utf8)
        output.append(contentsOf: name.utf8)
        output.append(UInt8(ascii: ">"))
    }

    private mutating func newline(_ depth: Int) {
        guard pretty else { return }
        output.append(0x0A)
        output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: depth * 2))
    }
}
