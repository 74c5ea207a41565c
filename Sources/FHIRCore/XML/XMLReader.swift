import CLibXML2
import Foundation

/// Drives libxml2's SAX2 parser over one document and hands its events to an ``XMLTreeBuilder``.
///
/// Safety settings: `XML_PARSE_NONET`, and none of `XML_PARSE_NOENT`, `XML_PARSE_DTDLOAD` or
/// `XML_PARSE_DTDATTR`. A DOCTYPE stops the parse in the `internalSubset` callback, before any internal
/// subset (and so any entity declaration) is read, so nothing can be expanded. `XML_PARSE_HUGE` lifts
/// libxml2's 10 MB cap on one value, so that a large `Attachment.data` or `Binary.data` reads as it does
/// from JSON; nesting depth and narrative size are limited here instead. Errors arrive through the
/// per-parse structured error callback, never through libxml2's global handlers, so parses on different
/// threads do not interfere.
enum XMLReader {
    /// Deeper nesting is refused with a clear message. Real resources stay far below it, and the
    /// recursive walks over the tree (writing, comparing, freeing) stay small on a 1 MB thread stack.
    static let maximumDepth = 128
    /// The largest narrative `div` accepted, in bytes of XHTML.
    static let maximumXHTMLLength = 10_000_000

    /// libxml2 wants `xmlInitParser` once per process before parsing on several threads.
    private static let libraryInitialized: Bool = {
        xmlInitParser()
        return true
    }()

    static func parse(_ data: Data) throws -> Element {
        _ = libraryInitialized
        guard data.contains(where: { !XMLTreeBuilder.isWhitespace($0) }) else {
            throw FHIRSyntaxError(format: .xml, line: 1, column: 1, message: "the document is empty")
        }
        guard data.count < Int(Int32.max) else {
            throw FHIRSyntaxError(format: .xml, line: 1, column: 1, message: "the document is larger than 2 GB")
        }
        let session = XMLParseSession()
        var handler = makeHandler()
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            guard let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self),
                  let context = xmlCreateMemoryParserCtxt(base, Int32(bytes.count))
            else {
                throw FHIRSyntaxError(format: .xml, line: 1, column: 1, message: "libxml2 could not start a parser")
            }
            defer { xmlFreeParserCtxt(context) }
            _ = xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_HUGE.rawValue))
            session.builder.parserContext = context
            // As xmlSAXUserParseMemory does: borrow the context for our handler, then give its own back.
            let ownHandler = context.pointee.sax
            let ownUserData = context.pointee.userData
            withUnsafeMutablePointer(to: &handler) { handlerPointer in
                context.pointee.sax = handlerPointer
                context.pointee.userData = Unmanaged.passUnretained(session).toOpaque()
                _ = xmlParseDocument(context)
                context.pointee.sax = ownHandler
                context.pointee.userData = ownUserData
            }
            session.builder.parserContext = nil
            if session.builder.error == nil, context.pointee.wellFormed == 0 {
                session.builder.fail("the document is not well-formed", line: 0, column: 0)
            }
        }
        if let error = session.builder.error { throw error }
        guard let root = session.builder.result else {
            throw FHIRSyntaxError(format: .xml, line: 1, column: 1, message: "the document has no root element")
        }
        return root
    }

    private static func makeHandler() -> xmlSAXHandler {
        var handler = xmlSAXHandler()
        handler.initialized = UInt32(XML_SAX2_MAGIC)
        handler.startElementNs = { context, localName, prefix, uri, namespaceCount, namespaces, attributeCount, _, attributes in
            guard let context, let localName else { return }
            saxSession(context).builder.startElement(
                localName: localName, prefix: prefix, uri: uri,
                namespaceCount: Int(namespaceCount), namespaces: namespaces,
                attributeCount: Int(attributeCount), attributes: attributes
            )
        }
        handler.endElementNs = { context, localName, prefix, uri in
            guard let context, let localName else { return }
            saxSession(context).builder.endElement(localName: localName, prefix: prefix, uri: uri)
        }
        handler.characters = { context, characters, length in
            guard let context, let characters else { return }
            saxSession(context).builder.text(UnsafeBufferPointer(start: characters, count: Int(length)))
        }
        handler.ignorableWhitespace = handler.characters
        handler.cdataBlock = handler.characters
        handler.internalSubset = { context, _, _, _ in
            guard let context else { return }
            saxSession(context).builder.failHere("a DOCTYPE declaration is not allowed in FHIR XML (DTDs and entities are never processed)")
        }
        handler.entityDecl = { context, _, _, _, _, _ in
            guard let context else { return }
            saxSession(context).builder.failHere("an entity declaration is not allowed in FHIR XML")
        }
        handler.serror = { context, error in
            guard let context, let error else { return }
            saxSession(context).builder.libraryError(error.pointee)
        }
        return handler
    }

}

/// The session behind a SAX callback's user-data pointer (a free function: C callbacks capture nothing).
@inline(__always)
private func saxSession(_ context: UnsafeMutableRawPointer) -> XMLParseSession {
    Unmanaged<XMLParseSession>.fromOpaque(context).takeUnretainedValue()
}
