/// Turns the SAX events of a narrative `div` back into XHTML text, the form FHIR JSON carries it in:
/// `<div xmlns="http://www.w3.org/1999/xhtml">…</div>`.
///
/// The output is namespace-normalized rather than a copy of the input bytes: XHTML elements are written
/// without a prefix under one default namespace declaration on the `div`, and a declaration appears only
/// where an element or attribute needs one that is not already in scope in the output (the original
/// might have declared it outside the `div`). Empty void elements are written `<br/>`, other empty
/// elements `<p></p>`.
final class XHTMLSerializer {
    struct Attribute {
        let name: String
        let prefix: String?
        /// The attribute's namespace URI, empty for none.
        let namespace: String
        let value: [UInt8]
    }

    private struct Frame {
        let qualifiedName: String
        let defaultNamespace: String
        let prefixCountBefore: Int
        let isVoid: Bool
    }

    private static let voidElements: Set<String> = [
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr",
    ]

    private var output: [UInt8] = []
    private var frames: [Frame] = []
    /// Prefix declarations written so far and still in scope, innermost last.
    private var prefixes: [(prefix: String, namespace: String)] = []
    private var startTagOpen = false

    /// How many elements are open; 0 once the `div` is closed.
    var depth: Int { frames.count }
    var byteCount: Int { output.count }
    var text: String { String(decoding: output, as: UTF8.self) }

    init() {
        output.reserveCapacity(1024)
    }

    /// An element start, `namespace` being its URI (empty for none).
    func start(name: String, prefix: String?, namespace: String, attributes: [Attribute]) {
        closeStartTag()
        let inheritedDefault = frames.last?.defaultNamespace ?? ""
        let prefixCountBefore = prefixes.count
        var declarations: [(prefix: String?, namespace: String)] = []
        var qualifiedName = name
        var defaultNamespace = inheritedDefault
        if let prefix, namespace != FHIRXML.xhtmlNamespace, !namespace.isEmpty {
            qualifiedName = "\(prefix):\(name)"
            declare(prefix, namespace, into: &declarations)
        } else if namespace != inheritedDefault {
            defaultNamespace = namespace
            declarations.append((nil, namespace))
        }
        var attributeNames: [String] = []
        attributeNames.reserveCapacity(attributes.count)
        for attribute in attributes {
            if let prefix = attribute.prefix, !attribute.namespace.isEmpty {
                if prefix != "xml" { declare(prefix, attribute.namespace, into: &declarations) }
                attributeNames.append("\(prefix):\(attribute.name)")
            } else {
                attributeNames.append(attribute.name)
            }
        }

        output.append(UInt8(ascii: "<"))
        output.append(contentsOf: qualifiedName.utf8)
        for declaration in declarations {
            output.append(contentsOf: " xmlns".utf8)
            if let prefix = declaration.prefix {
                output.append(UInt8(ascii: ":"))
                output.append(contentsOf: prefix.utf8)
            }
            output.append(contentsOf: "=\"".utf8)
            XMLEscaping.appendAttribute(declaration.namespace.utf8, to: &output)
            output.append(UInt8(ascii: "\""))
        }
        for (attribute, attributeName) in zip(attributes, attributeNames) {
            output.append(UInt8(ascii: " "))
            output.append(contentsOf: attributeName.utf8)
            output.append(contentsOf: "=\"".utf8)
            XMLEscaping.appendAttribute(attribute.value, to: &output)
            output.append(UInt8(ascii: "\""))
        }
        startTagOpen = true
        frames.append(Frame(
            qualifiedName: qualifiedName, defaultNamespace: defaultNamespace,
            prefixCountBefore: prefixCountBefore,
            isVoid: namespace == FHIRXML.xhtmlNamespace && Self.voidElements.contains(name)
        ))
    }

    func end() {
        guard let frame = frames.popLast() else { return }
        if startTagOpen && frame.isVoid {
            output.append(contentsOf: "/>".utf8)
            startTagOpen = false
        } else {
            closeStartTag()
            output.append(contentsOf: "</".utf8)
            output.append(contentsOf: frame.qualifiedName.utf8)
            output.append(UInt8(ascii: ">"))
        }
        prefixes.removeSubrange(frame.prefixCountBefore...)
    }

    func text(_ characters: UnsafeBufferPointer<UInt8>) {
        closeStartTag()
        XMLEscaping.appendText(characters, to: &output)
    }

    private func closeStartTag() {
        if startTagOpen {
            output.append(UInt8(ascii: ">"))
            startTagOpen = false
        }
    }

    /// Adds a declaration of `prefix` unless the output already has it in scope with the same namespace.
    private func declare(_ prefix: String, _ namespace: String, into declarations: inout [(prefix: String?, namespace: String)]) {
        if let inScope = prefixes.last(where: { $0.prefix == prefix }), inScope.namespace == namespace { return }
        if declarations.contains(where: { $0.prefix == prefix }) { return }
        prefixes.append((prefix, namespace))
        declarations.append((prefix, namespace))
    }
}
