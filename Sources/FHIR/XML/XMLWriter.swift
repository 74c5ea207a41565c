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

    /// Finishes the start tag of `element` (attributes, value) and writes its children in definition
    /// order and its end tag, or `/>` when it has no child elements.
    private mutating func writeContent(of element: Element, name: String, context: String?, isResource: Bool, depth: Int) {
        var placements: [Placement] = []
        placements.reserveCapacity(element.children.count)
        var needsSort = false
        var previousOrder = Int.min
        for index in element.children.indices {
            let child = element.children[index]
            let resolved = context.flatMap { metadata.child(child.name, of: $0) }
            if isAttribute(child, resolved: resolved, ownerIsResource: isResource, ownerName: name) {
                writeAttribute(child.name, child.value ?? "")
                continue
            }
            // Unknown elements keep their place after the known ones, in document order.
            let order = resolved?.info.order ?? Int.max
            if order < previousOrder { needsSort = true }
            previousOrder = order
            placements.append(Placement(
                index: index, order: order, isXHTML: isXHTML(child, resolved: resolved), context: resolved?.type
            ))
        }
        if let value = element.value {
            writeAttribute("value", value)
        }
        if placements.isEmpty {
            output.append(contentsOf: "/>".utf8)
            return
        }
        if needsSort {
            placements.sort { ($0.order, $0.index) < ($1.order, $1.index) }
        }
        output.append(UInt8(ascii: ">"))
        for placement in placements {
            writeElement(element.children[placement.index], placement: placement, depth: depth + 1)
        }
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
    /// careless producers), so that the div does not fall into the FHIR namespace.
    private mutating func writeXHTML(_ xhtml: String) {
        let firstTagEnd = xhtml.firstIndex(of: ">") ?? xhtml.endIndex
        let firstTag = xhtml[..<firstTagEnd]
        if xhtml.hasPrefix("<div"), !firstTag.contains("xmlns=") {
            let afterName = xhtml.index(xhtml.startIndex, offsetBy: 4)
            output.append(contentsOf: #"<div xmlns="http://www.w3.org/1999/xhtml""#.utf8)
            output.append(contentsOf: xhtml[afterName...].utf8)
        } else {
            output.append(contentsOf: xhtml.utf8)
        }
    }

    // MARK: Representation

    /// `id` of an element and `url` of an Extension are attributes; so is anything the metadata marks so.
    private func isAttribute(_ child: Element, resolved: ResolvedChild?, ownerIsResource: Bool, ownerName: String) -> Bool {
        guard child.value != nil, child.children.isEmpty, child.resourceType == nil else { return false }
        if let resolved { return resolved.info.representation == .xmlAttribute }
        switch child.name {
        case "id": return !ownerIsResource
        case "url": return ownerName == "extension" || ownerName == "modifierExtension"
        default: return false
        }
    }

    private func isXHTML(_ element: Element, resolved: ResolvedChild?) -> Bool {
        guard element.resourceType == nil else { return false }
        if let resolved { return resolved.info.representation == .xhtml }
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
