import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Narratives compared as XHTML rather than as bytes: the canonical form of an XHTML fragment lists its
/// elements (with namespace), attributes sorted, and text with runs of whitespace collapsed and
/// whitespace-only text dropped. Built on Foundation's XMLParser, independent of the reader under test.
enum XHTMLCanonicalForm {
    /// The canonical text of `xhtml`, or `xhtml` itself when it does not parse.
    static func of(_ xhtml: String) -> String {
        let delegate = Collector()
        let parser = XMLParser(data: Data(xhtml.utf8))
        parser.shouldProcessNamespaces = true
        parser.delegate = delegate
        guard parser.parse(), delegate.depth == 0, !delegate.output.isEmpty else { return xhtml }
        return delegate.output
    }

    private final class Collector: NSObject, XMLParserDelegate {
        var output = ""
        var depth = 0
        private var pendingText = ""

        private func flushText() {
            let collapsed = pendingText.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" })
                .joined(separator: " ")
            if !collapsed.isEmpty { output += "text(\(collapsed))" }
            pendingText = ""
        }

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName: String?, attributes: [String: String] = [:]) {
            flushText()
            depth += 1
            let sorted = attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            output += "<{\(namespaceURI ?? "")}\(elementName) \(sorted)>"
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            flushText()
            depth -= 1
            output += "</\(elementName)>"
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            pendingText += string
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            pendingText += String(decoding: CDATABlock, as: UTF8.self)
        }
    }
}

extension JSONValue {
    /// This value with every narrative (`"div"` string) replaced by its ``XHTMLCanonicalForm``.
    var withCanonicalNarratives: JSONValue {
        switch self {
        case .object(let fields):
            var result: [String: JSONValue] = [:]
            for (key, value) in fields {
                if key == "div", case .string(let xhtml) = value {
                    result[key] = .string(XHTMLCanonicalForm.of(xhtml))
                } else {
                    result[key] = value.withCanonicalNarratives
                }
            }
            return .object(result)
        case .array(let items):
            return .array(items.map(\.withCanonicalNarratives))
        default:
            return self
        }
    }

    /// The first difference between two FHIR JSON documents, narratives compared as XHTML.
    static func firstDifferenceComparingNarrativesAsXHTML(_ a: JSONValue, _ b: JSONValue) -> String? {
        firstDifference(a.withCanonicalNarratives, b.withCanonicalNarratives)
    }
}
