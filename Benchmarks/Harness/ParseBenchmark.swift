import FHIR
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The measurements behind `caregate-bench parse`: parse and serialize throughput of the FHIR JSON and
/// XML codecs on a folder of Bundles, each beside Foundation's equivalent on the same bytes in the same
/// run (JSONSerialization; XMLParser building nested dictionaries; XMLDocument for XML output).
///
/// Every figure is the total time over all documents of one pass; a run makes several passes and reports
/// the best and the median. Documents are handled one at a time so that memory stays at one file's trees.
public struct ParseBenchmark {
    /// One measured operation: its passes' total seconds over `bytes` and `resources`.
    public struct Figure {
        public let label: String
        public let bytes: Int
        public let resources: Int
        public var seconds: [Double] = []

        public var best: Double { seconds.min() ?? .nan }
        public var median: Double {
            let sorted = seconds.sorted()
            return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
        }

        public func megabytesPerSecond(_ time: Double) -> Double { Double(bytes) / 1_000_000 / time }
        public func resourcesPerSecond(_ time: Double) -> Double { Double(resources) / time }
    }

    public let jsonDocuments: [Data]
    public let xmlDocuments: [Data]
    public let resourceCount: Int
    /// Sums something of every result, so that no measured work can be optimized away.
    public private(set) var checksum = 0

    /// Loads the documents and prepares their XML twins with ``FHIRXML/write(_:pretty:)``.
    public init(jsonDocuments: [Data]) throws {
        self.jsonDocuments = jsonDocuments
        var xml: [Data] = []
        var resources = 0
        for document in jsonDocuments {
            let element = try FHIRJSON.read(document)
            resources += Self.countResources(element)
            xml.append(FHIRXML.write(element))
        }
        xmlDocuments = xml
        resourceCount = resources
    }

    public static func countResources(_ element: Element) -> Int {
        var count = element.isResource ? 1 : 0
        for child in element.children { count += countResources(child) }
        return count
    }

    // MARK: - Passes

    /// Runs `passes` rounds of every measurement, interleaved so that each pair shares machine conditions.
    public mutating func run(passes: Int, json: Bool = true, xml: Bool = true, progress: (String) -> Void) throws -> [(Figure, Figure)] {
        let jsonBytes = jsonDocuments.reduce(0) { $0 + $1.count }
        let xmlBytes = xmlDocuments.reduce(0) { $0 + $1.count }
        var jsonParse = (Figure(label: "JSON parse      caregate", bytes: jsonBytes, resources: resourceCount),
                         Figure(label: "JSON parse      JSONSerialization", bytes: jsonBytes, resources: resourceCount))
        var jsonWrite = (Figure(label: "JSON serialize  caregate", bytes: jsonBytes, resources: resourceCount),
                         Figure(label: "JSON serialize  JSONSerialization", bytes: jsonBytes, resources: resourceCount))
        var xmlParse = (Figure(label: "XML  parse      caregate", bytes: xmlBytes, resources: resourceCount),
                        Figure(label: "XML  parse      XMLParser -> dictionaries", bytes: xmlBytes, resources: resourceCount))
        var xmlWrite = (Figure(label: "XML  serialize  caregate", bytes: xmlBytes, resources: resourceCount),
                        Figure(label: "XML  serialize  XMLDocument", bytes: xmlBytes, resources: resourceCount))
        for pass in 1...passes {
            progress("pass \(pass)/\(passes)")
            var times = (0.0, 0.0, 0.0, 0.0)
            for document in jsonDocuments where json {
                var element: Element?
                times.0 += try time { element = try FHIRJSON.read(document) }
                var object: Any?
                times.1 += try time { object = try JSONSerialization.jsonObject(with: document) }
                guard let element, let object else { continue }
                times.2 += try time { checksum &+= FHIRJSON.write(element).count }
                times.3 += try time { checksum &+= try JSONSerialization.data(withJSONObject: object).count }
            }
            if json {
                jsonParse.0.seconds.append(times.0)
                jsonParse.1.seconds.append(times.1)
                jsonWrite.0.seconds.append(times.2)
                jsonWrite.1.seconds.append(times.3)
            }

            times = (0, 0, 0, 0)
            for document in xmlDocuments where xml {
                var element: Element?
                times.0 += try time { element = try FHIRXML.read(document) }
                times.1 += try time { checksum &+= try XMLDictionaryBuilder.parse(document).count }
                guard let element else { continue }
                times.2 += try time { checksum &+= FHIRXML.write(element).count }
                let tree = try XMLDocument(data: document)
                times.3 += try time { checksum &+= tree.xmlData.count }
            }
            if xml {
                xmlParse.0.seconds.append(times.0)
                xmlParse.1.seconds.append(times.1)
                xmlWrite.0.seconds.append(times.2)
                xmlWrite.1.seconds.append(times.3)
            }
        }
        return [jsonParse, jsonWrite, xmlParse, xmlWrite]
    }

    private func time(_ body: () throws -> Void) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }
}

/// The Foundation XML baseline: XMLParser with a delegate that builds each element as a dictionary
/// (`name`, `attributes`, `children`, `text`), as an application without a FHIR model would.
final class XMLDictionaryBuilder: NSObject, XMLParserDelegate {
    private struct Open {
        var name: String
        var attributes: [String: String]
        var children: [[String: Any]] = []
        var text = ""
    }

    private var stack: [Open] = []
    private var root: [String: Any] = [:]

    struct ParseFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// The document's root element as nested dictionaries.
    static func parse(_ data: Data) throws -> [String: Any] {
        let builder = XMLDictionaryBuilder()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.delegate = builder
        guard parser.parse(), builder.stack.isEmpty, !builder.root.isEmpty else {
            throw ParseFailure(description: "XMLParser failed: \(parser.parserError.map { "\($0)" } ?? "incomplete document")")
        }
        return builder.root
    }

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName: String?, attributes: [String: String] = [:]) {
        stack.append(Open(name: elementName, attributes: attributes))
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += string
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        guard let open = stack.popLast() else { return }
        var node: [String: Any] = ["name": open.name]
        if !open.attributes.isEmpty { node["attributes"] = open.attributes }
        if !open.children.isEmpty { node["children"] = open.children }
        if !open.text.isEmpty { node["text"] = open.text }
        if stack.isEmpty {
            root = node
        } else {
            stack[stack.count - 1].children.append(node)
        }
    }
}
