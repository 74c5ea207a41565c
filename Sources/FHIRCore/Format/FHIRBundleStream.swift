import Foundation

/// Writes a Bundle piece by piece, so that one of any size never sits in memory whole: its head (the
/// Bundle's own fields), then its entries one at a time (each written in parallel if need be), then its
/// tail. The bytes are those of writing the whole Bundle at once, with each entry on its own line.
///
/// ```swift
/// let stream = FHIRBundleStream(format: .json, fields: [Element(name: "type", value: "transaction")])
/// out.write(stream.head())
/// for (position, entry) in entries.enumerated() { out.write(stream.entry(entry, first: position == 0)) }
/// out.write(stream.tail())
/// ```
///
/// A Bundle with no entries must be written whole (``FHIRJSON/write(_:pretty:)``): JSON forbids an
/// empty `entry` array.
public struct FHIRBundleStream: Sendable {
    public enum Format: Sendable { case json, xml }

    public let format: Format
    /// The Bundle without its entries (`id`, `type`, `timestamp`...).
    private let fields: [Element]

    public init(format: Format, fields: [Element]) {
        self.format = format
        self.fields = fields
    }

    /// Everything before the first entry.
    public func head() -> Data {
        let bundle = Element.resource("Bundle", children: fields)
        switch format {
        case .json:
            var writer = JSONElementWriter(pretty: false)
            writer.writeResource(bundle)
            var bytes = writer.output
            bytes.removeLast()  // `}`
            bytes.append(contentsOf: (fields.isEmpty ? "" : ",").utf8)
            bytes.append(contentsOf: "\"entry\":[\n".utf8)
            return Data(bytes)
        case .xml:
            var writer = XMLWriter(pretty: false)
            // A Bundle with one empty entry, cut before that entry: the head with its namespace.
            writer.writeDocument(Element.resource("Bundle", children: fields + [Element(name: "entry", children: [Element(name: "fullUrl", value: "x")])]))
            let text = writer.output
            guard let cut = Self.range(of: Array("<entry".utf8), in: text) else { return Data(text) }
            return Data(text[..<cut] + Array("\n".utf8))
        }
    }

    /// One `Bundle.entry` element, preceded by its separator unless it is the `first`.
    public func entry(_ entry: Element, first: Bool) -> Data {
        entries([entry], first: first)
    }

    /// `Bundle.entry` elements one after the other, as ``entry(_:first:)`` writes each (the first preceded
    /// by its separator unless it is the `first` of the Bundle), written by one writer.
    public func entries(_ entries: [Element], first: Bool) -> Data {
        switch format {
        case .json:
            var writer = JSONElementWriter(pretty: false)
            for (index, entry) in entries.enumerated() {
                if !first || index > 0 {
                    writer.append(UInt8(ascii: ","))
                    writer.append(0x0A)
                }
                writer.writeObject(entry, in: "Bundle.entry")
            }
            return writer.data
        case .xml:
            var bytes: [UInt8] = []
            for entry in entries {
                var writer = XMLWriter(pretty: false)
                writer.writeChild(entry, in: "Bundle.entry")
                bytes += writer.output
                bytes.append(0x0A)
            }
            return Data(bytes)
        }
    }

    /// Everything after the last entry.
    public func tail() -> Data {
        switch format {
        case .json: return Data("\n]}\n".utf8)
        case .xml: return Data("</Bundle>\n".utf8)
        }
    }

    private static func range(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<start + needle.count].elementsEqual(needle) { return start }
        }
        return nil
    }
}
