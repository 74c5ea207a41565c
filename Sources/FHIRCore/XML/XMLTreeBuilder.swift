import CLibXML2
import Foundation

/// Builds the ``Element`` tree straight from libxml2's SAX2 events, applying the FHIR XML mapping:
///
/// - the `value` attribute becomes ``Element/value``; `id`, `url` (and any other unprefixed attribute,
///   so that validation can report it) become children of that name; attributes in other namespaces
///   (`xsi:schemaLocation`) are ignored;
/// - an element whose name starts with an upper-case letter is a resource; the element holding it
///   (`contained`, `resource`, `outcome`...) becomes that resource, named after the holder;
/// - the XHTML `div` becomes an element `div` whose value is the div serialized as XHTML text;
/// - whitespace and comments are ignored; any other text outside a `div` is an error.
///
/// Names come from libxml2's per-parse dictionary, where each distinct name has one address, so each is
/// turned into a Swift `String` once per parse. It is a struct driven through ``XMLParseSession`` so that
/// each SAX event costs one exclusive access, not one per field touched.
struct XMLTreeBuilder {
    /// The parser, while a parse runs: the source of line and column for errors raised here.
    var parserContext: xmlParserCtxtPtr?
    /// The first error of the parse; later ones are consequences of it.
    private(set) var error: FHIRSyntaxError?
    /// The root resource, once its end tag is read.
    private(set) var result: Element?

    private struct Frame {
        var element: Element
        /// This element is a resource just as written (`<Patient>`), not yet moved into its holder.
        var isBareResource: Bool
        /// One of the children is a bare resource, so this element is its holder.
        var holdsBareResource = false
    }

    private enum Namespace { case none, fhir, xhtml, other }

    private var stack: [Frame] = []
    private var names: [UnsafeRawPointer: String] = [:]
    private var namespaces: [UnsafeRawPointer: (kind: Namespace, uri: String)] = [:]
    private var fhirNamespaceKey: UnsafeRawPointer?
    private static let recentSlots = 1024
    private var recentKeys = [UnsafeRawPointer?](repeating: nil, count: recentSlots)
    private var recentNames = [String](repeating: "", count: recentSlots)
    /// Set while inside a narrative `div`.
    private var xhtml: XHTMLSerializer?

    init() {
        stack.reserveCapacity(32)
    }

    // MARK: SAX events

    mutating func startElement(
        localName: UnsafePointer<xmlChar>, prefix: UnsafePointer<xmlChar>?, uri: UnsafePointer<xmlChar>?,
        namespaceCount: Int, namespaces: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?,
        attributeCount: Int, attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) {
        guard error == nil else { return }
        let name = intern(localName)
        let namespace = self.namespace(uri)
        if stack.count + (xhtml?.depth ?? 0) >= XMLReader.maximumDepth {
            failHere("elements nest deeper than \(XMLReader.maximumDepth) levels")
            return
        }
        if let xhtml {
            xhtml.start(name: name, prefix: prefix.map { intern($0) }, namespace: namespace.uri,
                        attributes: xhtmlAttributes(attributeCount, attributes))
            return
        }
        switch namespace.kind {
        case .fhir:
            if name == "div" {
                failHere("the narrative <div> must be in the XHTML namespace \(FHIRXML.xhtmlNamespace)")
                return
            }
        case .xhtml where name == "div" && !stack.isEmpty:
            let serializer = XHTMLSerializer()
            serializer.start(name: name, prefix: prefix.map { intern($0) }, namespace: namespace.uri,
                             attributes: xhtmlAttributes(attributeCount, attributes))
            xhtml = serializer
            return
        case .none:
            failHere("element <\(name)> is in no namespace; FHIR elements must be in \(FHIRXML.fhirNamespace)")
            return
        case .xhtml, .other:
            let qualified = prefix.map { "\(intern($0)):\(name)" } ?? name
            failHere("element <\(qualified)> is in namespace '\(namespace.uri)'; FHIR elements must be in \(FHIRXML.fhirNamespace)")
            return
        }

        let isResource = localName.pointee >= UInt8(ascii: "A") && localName.pointee <= UInt8(ascii: "Z")
        if stack.isEmpty && !isResource {
            failHere("the root element <\(name)> is not a FHIR resource (resource names start with an upper-case letter)")
            return
        }
        var element = Element(name: name, resourceType: isResource ? name : nil)
        if let attributes, attributeCount > 0 {
            for index in 0..<attributeCount {
                let base = index * 5
                // Attributes in a namespace (xsi:schemaLocation, xml:lang) are not FHIR content.
                guard attributes[base + 2] == nil, let attributeName = attributes[base],
                      let start = attributes[base + 3], let end = attributes[base + 4] else { continue }
                let text = Self.attributeText(UnsafeBufferPointer(start: start, count: end - start))
                let key = intern(attributeName)
                if key == "value" {
                    element.value = text
                } else if key == "id" {
                    element.children.insert(Element(name: key, value: text), at: 0)
                } else {
                    element.children.append(Element(name: key, value: text))
                }
            }
        }
        stack.append(Frame(element: element, isBareResource: isResource))
    }

    mutating func endElement(localName: UnsafePointer<xmlChar>, prefix: UnsafePointer<xmlChar>?, uri: UnsafePointer<xmlChar>?) {
        guard error == nil else { return }
        if let xhtml {
            xhtml.end()
            if xhtml.depth == 0 {
                self.xhtml = nil
                append(Element(name: "div", value: xhtml.text), isBareResource: false)
            }
            return
        }
        guard var frame = stack.popLast() else { return }
        if frame.holdsBareResource {
            guard let holder = resourceHolder(frame) else { return }
            frame.element = holder
        }
        if stack.isEmpty {
            result = frame.element
        } else {
            append(frame.element, isBareResource: frame.isBareResource)
        }
    }

    mutating func text(_ characters: UnsafeBufferPointer<xmlChar>) {
        guard error == nil else { return }
        if let xhtml {
            xhtml.text(characters)
            if xhtml.byteCount > XMLReader.maximumXHTMLLength {
                failHere("the narrative <div> is longer than \(XMLReader.maximumXHTMLLength) bytes")
            }
            return
        }
        guard let offending = characters.firstIndex(where: { !Self.isWhitespace($0) }) else { return }
        let sample = String(decoding: characters[offending...].prefix(24), as: UTF8.self)
        let owner = stack.last.map { "<\($0.element.name)>" } ?? "the document"
        failHere("text \"\(sample)\" is not allowed in \(owner): FHIR XML carries values in the value attribute")
    }

    // MARK: Errors

    /// Records an error at the parser's current position and stops the parse.
    mutating func failHere(_ message: String) {
        guard let parserContext else {
            fail(message, line: 1, column: 1)
            return
        }
        fail(message, line: Int(xmlSAX2GetLineNumber(parserContext)),
             column: Int(xmlSAX2GetColumnNumber(parserContext)))
        xmlStopParser(parserContext)
    }

    /// Records an error unless an earlier one is already recorded.
    mutating func fail(_ message: String, line: Int, column: Int) {
        guard error == nil else { return }
        error = FHIRSyntaxError(format: .xml, line: max(line, 1), column: max(column, 1), message: message)
    }

    /// An error or warning reported by libxml2 through the per-parse structured error callback.
    mutating func libraryError(_ report: xmlError) {
        guard report.level != XML_ERR_WARNING, error == nil else { return }
        var message = report.message.map { String(cString: $0) } ?? "malformed XML (libxml2 error \(report.code))"
        message = message.split(whereSeparator: \.isNewline).joined(separator: "; ")
            .trimmingCharacters(in: .whitespaces)
        fail(message, line: Int(report.line), column: Int(report.int2))
    }

    // MARK: Helpers

    private mutating func append(_ element: Element, isBareResource: Bool) {
        let last = stack.count - 1
        guard last >= 0 else { return }
        if isBareResource { stack[last].holdsBareResource = true }
        stack[last].element.children.append(element)
    }

    /// The holder of a resource (`<contained><Patient>…`) turned into the resource itself, named after
    /// the holder; `nil` (with an error) when the holder is a resource or holds anything else.
    private mutating func resourceHolder(_ frame: Frame) -> Element? {
        let holder = frame.element
        let resource = holder.children.last(where: \.isResource)
        let type = resource?.resourceType ?? "?"
        if holder.isResource {
            failHere("resource <\(type)> cannot sit directly inside <\(holder.name)>; it must be held by an element such as <contained> or <resource>")
            return nil
        }
        guard let resource, holder.children.count == 1, holder.value == nil else {
            failHere("<\(holder.name)> holds the resource <\(type)> and must hold nothing else")
            return nil
        }
        return Element(name: holder.name, resourceType: resource.resourceType, children: resource.children)
    }

    private mutating func xhtmlAttributes(
        _ count: Int, _ attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) -> [XHTMLSerializer.Attribute] {
        guard let attributes, count > 0 else { return [] }
        var result: [XHTMLSerializer.Attribute] = []
        result.reserveCapacity(count)
        for index in 0..<count {
            let base = index * 5
            guard let name = attributes[base], let start = attributes[base + 3], let end = attributes[base + 4]
            else { continue }
            result.append(XHTMLSerializer.Attribute(
                name: intern(name), prefix: attributes[base + 1].map { intern($0) },
                namespace: attributes[base + 2].map { namespace($0).uri } ?? "",
                value: Array(Self.attributeText(UnsafeBufferPointer(start: start, count: end - start)).utf8)
            ))
        }
        return result
    }

    /// The Swift string of a libxml2 dictionary name, made once per parse. A small direct-mapped cache
    /// in front of the dictionary spares hashing for the few dozen names a document repeats.
    private mutating func intern(_ pointer: UnsafePointer<xmlChar>) -> String {
        let key = UnsafeRawPointer(pointer)
        let slot = Int(truncatingIfNeeded: (UInt(bitPattern: key).multipliedReportingOverflow(by: 0x9E37_79B9_7F4A_7C15).partialValue) >> 54)
        if recentKeys[slot] == key { return recentNames[slot] }
        let name: String
        if let known = names[key] {
            name = known
        } else {
            name = String(cString: pointer)
            names[key] = name
        }
        recentKeys[slot] = key
        recentNames[slot] = name
        return name
    }

    private mutating func namespace(_ pointer: UnsafePointer<xmlChar>?) -> (kind: Namespace, uri: String) {
        guard let pointer else { return (.none, "") }
        let key = UnsafeRawPointer(pointer)
        if key == fhirNamespaceKey { return (.fhir, FHIRXML.fhirNamespace) }
        if let known = namespaces[key] { return known }
        let uri = String(cString: pointer)
        let kind: Namespace = switch uri {
        case FHIRXML.fhirNamespace: .fhir
        case FHIRXML.xhtmlNamespace: .xhtml
        default: .other
        }
        namespaces[key] = (kind, uri)
        if kind == .fhir { fhirNamespaceKey = key }
        return (kind, uri)
    }

    /// An attribute value as libxml2 hands it over. Without entity substitution (deliberately off) it
    /// passes `&amp;` and `&#38;` on as the text `&#38;`; any other `&` would have been a
    /// well-formedness error, so each `&` starts exactly that sequence.
    private static func attributeText(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let ampersand = UInt8(ascii: "&")
        guard bytes.contains(ampersand) else { return String(decoding: bytes, as: UTF8.self) }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            decoded.append(bytes[index])
            if bytes[index] == ampersand, index + 4 < bytes.count, bytes[index + 1] == UInt8(ascii: "#"),
               bytes[index + 2] == UInt8(ascii: "3"), bytes[index + 3] == UInt8(ascii: "8"),
               bytes[index + 4] == UInt8(ascii: ";") {
                index += 5
            } else {
                index += 1
            }
        }
        return String(decoding: decoded, as: UTF8.self)
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
    }
}

/// The object behind the SAX callbacks' user-data pointer, holding the builder for one parse.
final class XMLParseSession {
    var builder = XMLTreeBuilder()
}
