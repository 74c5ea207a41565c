/// Checks a narrative `div` (the xhtml datatype) without an XHTML schema, in two layers:
///
/// - **XML**: the text must be one well-formed, namespace-well-formed XML element — a `div` in the XHTML
///   namespace (or with no namespace declared, which the XML writer then supplies) — since the XML writer
///   embeds it as it is. Tags balance and match, attributes are quoted and not repeated, prefixes are
///   declared, references are the XML entities (`&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`) or character
///   references of XML characters, and no character is outside XML's range. ``xmlProblem(in:)`` gives the
///   first failure; `FHIRFormat.convert` refuses JSON whose narrative fails it rather than write XML that
///   does not parse. (Text read from XML always passes: the XML reader writes it.)
/// - **FHIR rules** (R4 Narrative, txt-1 and txt-2, and the xhtml datatype notes): some non-whitespace
///   content, no active content (script, forms, frames, event attributes), links only with web schemes.
///
/// ``problems(in:)`` gives both, as validation reports them.
package enum XHTMLChecker {
    private static let xmlEntities: Set<String> = ["amp", "lt", "gt", "quot", "apos"]
    private static let forbiddenElements: Set<String> = [
        "script", "form", "input", "button", "select", "textarea", "iframe", "frame", "frameset", "object",
        "embed", "applet", "base", "link", "meta", "style",
    ]
    private static let linkSchemes: Set<String> = ["http", "https", "ftp", "mailto", "tel", "data"]

    /// Every problem of a narrative div's XHTML text, each a message: the first XML problem (if any),
    /// then the FHIR rules broken in the part that could be read.
    package static func problems(in xhtml: String) -> [String] {
        let scan = Scan(xhtml)
        return (scan.xmlProblem.map { [$0] } ?? []) + scan.ruleProblems
    }

    /// The narrative's internal links (the `#...` values of `href` and `src` attributes) and the ids it
    /// defines itself (`id` and `name` attributes), as far as the text can be read.
    package static func internalLinks(in xhtml: String) -> (targets: [String], ids: [String]) {
        let scan = Scan(xhtml)
        return (scan.localTargets, scan.definedIDs)
    }

    /// Why the text cannot be written into an XML document as the narrative div (it is not one
    /// well-formed XHTML `div` element), or `nil` when it can.
    package static func xmlProblem(in xhtml: String) -> String? {
        Scan(xhtml).xmlProblem
    }

    /// One pass over the UTF-8 bytes of the text.
    private struct Scan {
        private let bytes: [UInt8]
        private var index = 0
        private(set) var xmlProblem: String?
        private(set) var ruleProblems: [String] = []
        private var hasContent = false
        /// `href`/`src` values that start with `#`, and `id`/`name` values: for ``internalLinks(in:)``.
        private(set) var localTargets: [String] = []
        private(set) var definedIDs: [String] = []
        /// Open elements, innermost last: qualified name and how many prefixes were declared before it.
        private var open: [(name: String, prefixCount: Int)] = []
        /// Declared namespace prefixes in scope, innermost last.
        private var prefixes: [(prefix: String, uri: String)] = []

        init(_ xhtml: String) {
            bytes = Array(xhtml.utf8)
            run()
        }

        private mutating func run() {
            if let bad = Self.firstNonXMLCharacter(bytes) {
                xmlProblem = "the narrative contains \(bad), which XML does not allow"
                return
            }
            skipWhitespace()
            guard startsWith("<"), index + 1 < bytes.count, Self.isNameStart(bytes[index + 1]) else {
                xmlProblem = "the narrative must be a single xhtml <div> element"
                return
            }
            while xmlProblem == nil, index < bytes.count {
                if bytes[index] == UInt8(ascii: "<") {
                    markup()
                } else if bytes[index] == UInt8(ascii: "&") {
                    reference()
                } else {
                    text()
                }
                if xmlProblem == nil, open.isEmpty { break }  // the root element is closed
            }
            guard xmlProblem == nil else { return }
            if let unclosed = open.last {
                xmlProblem = "the narrative ends before <\(unclosed.name)> is closed (unbalanced tags)"
                return
            }
            skipWhitespace()
            if index < bytes.count {
                xmlProblem = "the narrative must be a single xhtml <div> element: content follows its end tag"
                return
            }
            if !hasContent {
                ruleProblems.append("the narrative SHALL have some non-whitespace content (txt-2)")
            }
        }

        // MARK: Content

        private mutating func text() {
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "<"), bytes[index] != UInt8(ascii: "&") {
                if bytes[index] == UInt8(ascii: ">"), index - start >= 2, bytes[index - 1] == UInt8(ascii: "]"),
                   bytes[index - 2] == UInt8(ascii: "]") {
                    fail("']]>' may not appear in the narrative's text")
                    return
                }
                if !Self.isWhitespace(bytes[index]) { hasContent = true }
                index += 1
            }
        }

        private mutating func reference() {
            if readReference() != nil { hasContent = true }
        }

        /// Reads the reference at `index` (an `&`); returns its name, or `nil` after failing.
        private mutating func readReference() -> String? {
            let start = index + 1
            var end = start
            while end < bytes.count, end - start <= 32, bytes[end] != UInt8(ascii: ";"),
                  Self.isNameCharacter(bytes[end]) || bytes[end] == UInt8(ascii: "#") {
                end += 1
            }
            guard end < bytes.count, bytes[end] == UInt8(ascii: ";"), end > start else {
                fail("a bare '&' in the narrative must be written &amp;")
                return nil
            }
            let name = String(decoding: bytes[start..<end], as: UTF8.self)
            index = end + 1
            if name.hasPrefix("#") {
                let digits = name.dropFirst()
                let scalar = digits.hasPrefix("x") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
                guard let scalar, Self.isXMLCharacter(scalar) else {
                    fail("'&\(name);' in the narrative is not a reference to an XML character")
                    return nil
                }
            } else if !xmlEntities.contains(name) {
                fail("undefined entity '&\(name);' in the narrative: XHTML in FHIR knows only the XML entities (&amp; &lt; &gt; &quot; &apos;); write the character itself or a character reference")
                return nil
            }
            return name
        }

        private mutating func markup() {
            if startsWith("<!--") {
                guard let end = find("-->", from: index + 4) else { return fail("unterminated comment in the narrative") }
                if find("--", from: index + 4).map({ $0 < end }) == true {
                    return fail("'--' may not appear inside a comment in the narrative")
                }
                index = end + 3
            } else if startsWith("<![CDATA[") {
                guard let end = find("]]>", from: index + 9) else { return fail("unterminated CDATA section in the narrative") }
                if bytes[(index + 9)..<end].contains(where: { !Self.isWhitespace($0) }) { hasContent = true }
                index = end + 3
            } else if startsWith("<!") {
                fail("a DOCTYPE or other declaration is not allowed in the narrative")
            } else if startsWith("<?") {
                guard let end = find("?>", from: index + 2) else { return fail("unterminated processing instruction in the narrative") }
                index += 2
                let target = readName()
                if target.isEmpty || target.lowercased() == "xml" {
                    return fail("invalid processing instruction in the narrative")
                }
                index = end + 2
            } else if startsWith("</") {
                endTag()
            } else {
                startTag()
            }
        }

        private mutating func endTag() {
            index += 2
            let name = readName()
            skipWhitespace()
            guard !name.isEmpty, startsWith(">") else { return fail("malformed end tag in the narrative") }
            index += 1
            guard let top = open.popLast() else { return fail("end tag </\(name)> without a start tag in the narrative") }
            guard top.name == name else {
                return fail("end tag </\(name)> does not match <\(top.name)> in the narrative (unbalanced tags)")
            }
            prefixes.removeSubrange(top.prefixCount...)
        }

        private mutating func startTag() {
            let isRoot = open.isEmpty
            index += 1
            let name = readName()
            guard !name.isEmpty else { return fail("a bare '<' in the narrative must be written &lt;") }
            let prefixCount = prefixes.count
            var attributes: [(name: String, value: String)] = []
            var selfClosing = false
            while true {
                let hadSpace = skipWhitespace()
                guard index < bytes.count else { return fail("unterminated tag <\(name)> in the narrative") }
                if startsWith("/>") {
                    index += 2
                    selfClosing = true
                    break
                }
                if startsWith(">") {
                    index += 1
                    break
                }
                guard hadSpace else { return fail("malformed attributes in <\(name)> in the narrative") }
                guard let attribute = readAttribute(in: name) else { return }
                if attributes.contains(where: { $0.name == attribute.name }) {
                    return fail("attribute '\(attribute.name)' appears twice on <\(name)> in the narrative")
                }
                attributes.append(attribute)
            }
            // Namespaces: declarations first, then every prefix used must be in scope.
            for (attribute, value) in attributes where attribute.hasPrefix("xmlns:") {
                let prefix = String(attribute.dropFirst(6))
                guard !value.isEmpty, prefix != "xmlns", !prefix.contains(":") else {
                    return fail("invalid namespace declaration '\(attribute)' in the narrative")
                }
                prefixes.append((prefix, value))
            }
            guard let elementNamespace = resolve(name, isAttribute: false) else { return }
            for attribute in attributes where attribute.name != "xmlns" && !attribute.name.hasPrefix("xmlns:") {
                guard resolve(attribute.name, isAttribute: true) != nil else { return }
            }
            let localName = String(name.split(separator: ":").last ?? Substring(name))
            if isRoot {
                let declared = attributes.first { $0.name == "xmlns" }?.value
                let namespace = name.contains(":") ? elementNamespace : declared
                guard localName == "div", namespace == nil || namespace == FHIRXML.xhtmlNamespace else {
                    return fail("the narrative must be a single xhtml <div> element (in the namespace \(FHIRXML.xhtmlNamespace))")
                }
            }
            checkRules(localName: localName.lowercased(), attributes: attributes)
            if !selfClosing { open.append((name, prefixCount)) } else { prefixes.removeSubrange(prefixCount...) }
        }

        /// The namespace URI of a qualified name's prefix (`""` for none); `nil` after failing when the
        /// prefix is not declared.
        private mutating func resolve(_ qualifiedName: String, isAttribute: Bool) -> String? {
            let parts = qualifiedName.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, parts.allSatisfy({ !$0.isEmpty }) else {
                fail("'\(qualifiedName)' is not a valid qualified name in the narrative")
                return nil
            }
            guard parts.count == 2 else { return "" }
            let prefix = String(parts[0])
            if prefix == "xml" { return "http://www.w3.org/XML/1998/namespace" }
            guard let binding = prefixes.last(where: { $0.prefix == prefix }) else {
                fail("namespace prefix '\(prefix)' of '\(qualifiedName)' is not declared in the narrative")
                return nil
            }
            return binding.uri
        }

        /// `name="value"` (or single quotes) at `index`; `nil` after failing.
        private mutating func readAttribute(in element: String) -> (name: String, value: String)? {
            let name = readName()
            guard !name.isEmpty else {
                fail("malformed attributes in <\(element)> in the narrative")
                return nil
            }
            skipWhitespace()
            guard startsWith("=") else {
                fail("attribute '\(name)' on <\(element)> has no value (XHTML attributes are written name=\"value\")")
                return nil
            }
            index += 1
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
                fail("the value of attribute '\(name)' on <\(element)> must be in quotes")
                return nil
            }
            let quote = bytes[index]
            index += 1
            var value = ""
            var chunkStart = index
            while index < bytes.count, bytes[index] != quote {
                switch bytes[index] {
                case UInt8(ascii: "<"):
                    fail("'<' in the value of attribute '\(name)' on <\(element)> must be written &lt;")
                    return nil
                case UInt8(ascii: "&"):
                    value += String(decoding: bytes[chunkStart..<index], as: UTF8.self)
                    guard let reference = readReference() else { return nil }
                    value += Self.replacement(of: reference)
                    chunkStart = index
                default:
                    index += 1
                }
            }
            guard index < bytes.count else {
                fail("unterminated value of attribute '\(name)' on <\(element)> in the narrative")
                return nil
            }
            value += String(decoding: bytes[chunkStart..<index], as: UTF8.self)
            index += 1
            return (name, value)
        }

        // MARK: FHIR rules

        private mutating func checkRules(localName: String, attributes: [(name: String, value: String)]) {
            if forbiddenElements.contains(localName) {
                ruleProblems.append("the narrative may not contain <\(localName)> (active or external content)")
            }
            if localName == "img" { hasContent = true }
            for (attribute, value) in attributes {
                let lowered = attribute.lowercased()
                if (lowered == "href" || lowered == "src"), value.hasPrefix("#") { localTargets.append(value) }
                if lowered == "id" || lowered == "name" { definedIDs.append(value) }
                if lowered.hasPrefix("on") {
                    ruleProblems.append("the narrative may not contain event attributes ('\(attribute)' on <\(localName)>)")
                } else if lowered == "href" || lowered == "src", ReferenceFormat.hasScheme(value),
                          let scheme = value.split(separator: ":").first?.lowercased(), !linkSchemes.contains(scheme) {
                    ruleProblems.append("hyperlink scheme '\(scheme)' in '\(value)' is not a valid hyperlinkable scheme")
                }
            }
        }

        // MARK: Bytes

        private mutating func fail(_ message: String) {
            if xmlProblem == nil { xmlProblem = message }
        }

        @discardableResult
        private mutating func skipWhitespace() -> Bool {
            let start = index
            while index < bytes.count, Self.isWhitespace(bytes[index]) { index += 1 }
            return index > start
        }

        private mutating func readName() -> String {
            let start = index
            guard index < bytes.count, Self.isNameStart(bytes[index]) else { return "" }
            while index < bytes.count, Self.isNameCharacter(bytes[index]) { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        private func startsWith(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return false }
            return true
        }

        private func find(_ text: StaticString, from start: Int) -> Int? {
            let count = text.utf8CodeUnitCount
            var position = start
            while position + count <= bytes.count {
                var matches = true
                for offset in 0..<count where bytes[position + offset] != text.utf8Start[offset] {
                    matches = false
                    break
                }
                if matches { return position }
                position += 1
            }
            return nil
        }

        private static func isWhitespace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
        }

        /// A letter, `_`, `:` or any non-ASCII byte (XML allows most of Unicode in names).
        private static func isNameStart(_ byte: UInt8) -> Bool {
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte == 0x3A || byte >= 0x80
        }

        private static func isNameCharacter(_ byte: UInt8) -> Bool {
            isNameStart(byte) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x2E
        }

        /// XML 1.0 `Char`.
        private static func isXMLCharacter(_ scalar: UInt32) -> Bool {
            switch scalar {
            case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
            default: false
            }
        }

        /// The first character XML does not allow (a control character, U+FFFE, U+FFFF), described.
        /// The text is valid UTF-8 (a Swift string), so surrogates cannot occur.
        private static func firstNonXMLCharacter(_ bytes: [UInt8]) -> String? {
            for position in bytes.indices {
                let byte = bytes[position]
                if byte < 0x20, !isWhitespace(byte) {
                    return "the control character U+00\(byte < 0x10 ? "0" : "")\(String(byte, radix: 16, uppercase: true))"
                }
                if byte == 0xEF, position + 2 < bytes.count, bytes[position + 1] == 0xBF, bytes[position + 2] >= 0xBE {
                    return "the noncharacter U+FFF\(bytes[position + 2] == 0xBE ? "E" : "F")"
                }
            }
            return nil
        }

        private static func replacement(of reference: String) -> String {
            switch reference {
            case "amp": "&"
            case "lt": "<"
            case "gt": ">"
            case "quot": "\""
            case "apos": "'"
            default: ""  // character references: the value is only inspected for link schemes
            }
        }
    }
}
