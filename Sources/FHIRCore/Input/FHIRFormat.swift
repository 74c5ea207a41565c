import Foundation

/// The serialization a FHIR document is in, detected from its content, and conversion between them:
/// the library side of `caregate convert`.
///
/// ### Members
/// - ``detect(_:)``: JSON (one resource), NDJSON (one resource per line) or XML, from the first bytes.
/// - ``convert(_:to:pretty:)``: reads a document in whatever format it is and writes it in another.
///
/// NDJSON has no XML form: converting it to XML writes one `collection` Bundle whose entries hold the
/// resources in line order.
public enum FHIRFormat: String, Sendable, CaseIterable {
    case json
    case ndjson
    case xml

    /// The format of `data`: `<` first means XML; a `{` means JSON, or NDJSON when more content follows
    /// the first top-level object (a `[` is JSON too, which the reader then rejects with a reason).
    /// `nil` when the content starts with none of these (not a FHIR document).
    public static func detect(_ data: Data) -> FHIRFormat? {
        data.withUnsafeBytes { raw -> FHIRFormat? in
            let bytes = raw.bindMemory(to: UInt8.self)
            var index = 0
            if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
            while index < bytes.count, isWhitespace(bytes[index]) { index += 1 }
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "<"):
                return .xml
            case UInt8(ascii: "{"):
                // NDJSON has a whole object on each line, so its second line starts another one. A document
                // whose second line does not (a pretty-printed resource) is JSON, known without scanning it.
                guard let base = bytes.baseAddress, let found = memchr(base + index, 0x0A, bytes.count - index) else { return .json }
                let newline = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                var second = newline
                while second < bytes.count, isWhitespace(bytes[second]) { second += 1 }
                guard second < bytes.count, bytes[second] == UInt8(ascii: "{") else { return .json }
                guard let end = endOfObject(bytes, from: index) else { return .json }
                var next = end
                while next < bytes.count, isWhitespace(bytes[next]) { next += 1 }
                return next < bytes.count && bytes[next] == UInt8(ascii: "{") ? .ndjson : .json
            case UInt8(ascii: "["):
                return .json  // not FHIR, but the JSON reader explains why
            default:
                return nil
            }
        }
    }

    /// The result of ``convert(_:to:pretty:)``.
    public struct Conversion: Sendable {
        public let input: FHIRFormat
        public let output: FHIRFormat
        /// How many resources were read (NDJSON lines; 1 otherwise).
        public let resourceCount: Int
        public let data: Data
    }

    /// A document that is neither JSON, NDJSON nor XML.
    public struct UnknownFormatError: Error, CustomStringConvertible, Sendable {
        public var description: String {
            "1:1: not a FHIR document: expected a JSON object ('{'), NDJSON, or XML ('<')"
        }
    }

    /// A resource whose type R4 does not define: it has no JSON or XML form to convert to.
    public struct UnknownResourceTypeError: Error, CustomStringConvertible, Sendable {
        /// Where it is (`Bundle.entry[2].resource`; empty for the whole document), and its type.
        public let location: String
        public let resourceType: String
        /// For NDJSON, the line it is on.
        public let line: Int?

        public var description: String {
            let place = [line.map(String.init), location.isEmpty ? nil : location].compactMap { $0 }.joined(separator: ": ")
            return (place.isEmpty ? "" : place + ": ") + "'\(MessageText.shortened(resourceType))' is not an R4 resource type"
        }

        /// The first resource in `resource` (itself, contained ones, Bundle entries...) of no R4 type.
        static func first(in resource: Element, line: Int? = nil) -> UnknownResourceTypeError? {
            func search(_ element: Element, path: String) -> UnknownResourceTypeError? {
                if let type = element.resourceType, !FHIRMetadata.r4.isResourceType(type) {
                    return UnknownResourceTypeError(location: path, resourceType: type, line: line)
                }
                var positions: [String: Int] = [:]
                for child in element.children {
                    let position = positions[child.name, default: 0]
                    positions[child.name] = position + 1
                    if let found = search(child, path: "\(path).\(child.name)[\(position)]") { return found }
                }
                return nil
            }
            return search(resource, path: resource.resourceType.map { FHIRMetadata.r4.isResourceType($0) ? $0 : "" } ?? "")
        }
    }

    /// Reads `data` in its detected format and writes it as `target` (`.json` or `.xml`; `nil` means the
    /// other format: XML for JSON and NDJSON, JSON for XML). NDJSON stays NDJSON when the target is JSON
    /// (and `pretty` then does not apply); it becomes a `collection` Bundle when the target is XML.
    ///
    /// JSON whose narrative `div` is not one well-formed XHTML element cannot become XML (the writer
    /// embeds the div as it is): converting it to XML throws ``NarrativeNotWellFormedError`` naming the
    /// div's location, and nothing is written.
    ///
    /// - Throws: ``FHIRSyntaxError`` with line and column, ``UnknownFormatError``, or
    ///   ``NarrativeNotWellFormedError``.
    public static func convert(_ data: Data, to target: FHIRFormat?, pretty: Bool) throws -> Conversion {
        guard let input = detect(data) else { throw UnknownFormatError() }
        let wanted = target.map { $0 == .ndjson ? .json : $0 } ?? (input == .xml ? .json : .xml)
        switch input {
        case .json, .xml:
            let resource = input == .json ? try FHIRJSON.read(data) : try FHIRXML.read(data)
            if let unknown = UnknownResourceTypeError.first(in: resource) { throw unknown }
            if input == .json, wanted == .xml, let problem = NarrativeXMLCheck.firstProblem(in: resource) {
                throw problem
            }
            let output = wanted == .json ? FHIRJSON.write(resource, pretty: pretty) : FHIRXML.write(resource, pretty: pretty)
            return Conversion(input: input, output: wanted, resourceCount: 1, data: output)
        case .ndjson:
            var resources: [Element] = []
            for entry in FHIRDocument.read(data).entries {
                let resource = try entry.result.get()
                if let unknown = UnknownResourceTypeError.first(in: resource, line: entry.line) { throw unknown }
                if wanted == .xml, let problem = NarrativeXMLCheck.firstProblem(in: resource) {
                    throw NarrativeNotWellFormedError(location: problem.location, line: entry.line, reason: problem.reason)
                }
                resources.append(resource)
            }
            if wanted == .json {
                return Conversion(input: .ndjson, output: .ndjson, resourceCount: resources.count, data: FHIRJSON.writeNDJSON(resources))
            }
            let bundle = collectionBundle(of: resources)
            return Conversion(input: .ndjson, output: .xml, resourceCount: resources.count, data: FHIRXML.write(bundle, pretty: pretty))
        }
    }

    /// A Bundle of type `collection` holding `resources` as its entries, in order.
    public static func collectionBundle(of resources: [Element]) -> Element {
        var children = [Element(name: "type", value: "collection")]
        children.reserveCapacity(resources.count + 1)
        for var resource in resources {
            resource.name = "resource"
            children.append(Element(name: "entry", children: [resource]))
        }
        return Element.resource("Bundle", children: children)
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    /// The index just after the object starting at `start` (strings skipped, brackets counted), or
    /// `nil` when the input ends first. Not a validation: the reader does that.
    static func endOfObject(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var depth = 0
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                guard let end = endOfString(bytes, from: index) else { return nil }
                index = end
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 { return index + 1 }
            default:
                break
            }
            index += 1
        }
        return nil
    }

    /// The index just after the closing quote of the string whose opening quote is at `start`, or `nil`
    /// when the input ends first. Strings are most of a FHIR document's bytes, so their ends are found
    /// with `memchr`: a quote ends the string unless an odd number of backslashes escapes it.
    static func endOfString(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        var index = start + 1
        while index < bytes.count {
            guard let found = memchr(base + index, Int32(UInt8(ascii: "\"")), bytes.count - index) else { return nil }
            let quote = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            var backslashes = 0
            while quote - backslashes - 1 > start, bytes[quote - backslashes - 1] == UInt8(ascii: "\\") { backslashes += 1 }
            if backslashes % 2 == 0 { return quote + 1 }
            index = quote + 1
        }
        return nil
    }
}
