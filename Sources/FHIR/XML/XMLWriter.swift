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
        let children = arranged(resource.children, context: type, ownerIsResource: true, ownerName: type)
        // A resource's id is an element, but unknown attribute-like children still follow the rules.
        writeAttributes(children.attributes)
        writeBody(children.elements, of: type, depth: depth)
    }

    private mutating func writeElement(_ element: Element, resolved: ResolvedChild?, depth: Int) {
        if element.resourceType != nil {
            newline(depth)
            openTag(element.name)
            output.append(UInt8(ascii: ">"))
            writeResource(element, depth: depth + 1, declareNamespace: false)
            newline(depth)
            closeTag(element.name)
            return
        }
        if isXHTML(element, resolved: resolved) {
            newline(depth)
            writeXHTML(element.value ?? "")
            return
        }
        newline(depth)
        openTag(element.name)
        let children = arranged(element.children, context: resolved?.type, ownerIsResource: false, ownerName: element.name)
        writeAttributes(children.attributes)
        if let value = element.value {
            output.append(contentsOf: #" value=""#.utf8)
            XMLEscaping.appendAttribute(value, to: &output)
            output.append(UInt8(ascii: "\""))
        }
        writeBody(children.elements, of: element.name, depth: depth)
    }

    /// Closes the start tag and writes the children and end tag, or `/>` when there are none.
    private mutating func writeBody(_ children: [(Element, ResolvedChild?)], of name: String, depth: Int) {
        if children.isEmpty {
            output.append(contentsOf: "/>".utf8)
            return
        }
        output.append(UInt8(ascii: ">"))
        for (child, resolved) in children {
            writeElement(child, resolved: resolved, depth: depth + 1)
        }
        newline(depth)
        closeTag(name)
    }

    private mutating func writeAttributes(_ attributes: [Element]) {
        for attribute in attributes {
            guard let value = attribute.value else { continue }
            output.append(UInt8(ascii: " "))
            output.append(contentsOf: attribute.name.utf8)
            output.append(contentsOf: "=\"".utf8)
            XMLEscaping.appendAttribute(value, to: &output)
            output.append(UInt8(ascii: "\""))
        }
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

    // MARK: Order and representation

    /// Splits children into XML attributes and elements, the elements in definition order.
    private func arranged(
        _ children: [Element], context: String?, ownerIsResource: Bool, ownerName: String
    ) -> (attributes: [Element], elements: [(Element, ResolvedChild?)]) {
        var attributes: [Element] = []
        var elements: [(order: Int, position: Int, element: Element, resolved: ResolvedChild?)] = []
        elements.reserveCapacity(children.count)
        var needsSort = false
        var previousOrder = Int.min
        for (position, child) in children.enumerated() {
            let resolved = context.flatMap { metadata.child(child.name, of: $0) }
            if isAttribute(child, resolved: resolved, ownerIsResource: ownerIsResource, ownerName: ownerName) {
                attributes.append(child)
                continue
            }
            // Unknown elements keep their place after the known ones, in document order.
            let order = resolved?.info.order ?? Int.max
            if order < previousOrder { needsSort = true }
            previousOrder = order
            elements.append((order, position, child, resolved))
        }
        if needsSort {
            elements.sort { ($0.order, $0.position) < ($1.order, $1.position) }
        }
        return (attributes, elements.map { ($0.element, $0.resolved) })
    }

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
