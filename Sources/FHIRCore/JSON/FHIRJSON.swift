import Foundation

/// FHIR R4 JSON: reads bytes into ``Element`` trees and writes them back, losslessly, for single
/// resources and for NDJSON (one resource per line, as Bulk Data `$export` produces).
///
/// ## Topics
/// - ``read(_:)`` / ``write(_:pretty:)``: one resource (a Bundle is one resource).
/// - ``readNDJSON(_:)`` / ``forEachNDJSONResource(in:_:)`` / ``writeNDJSON(_:)``: one resource per line.
///
/// ```swift
/// let patient = try FHIRJSON.read(data)          // throws FHIRSyntaxError with line:column
/// let text = FHIRJSON.write(patient, pretty: true)
/// ```
///
/// Reading keeps everything: decimals keep their written text, `_name` siblings are merged into their
/// primitives, and anything unknown is kept. Of the metadata it uses only the names of the fields that
/// hold resources (see ``JSONElementReader``). Writing uses ``FHIRMetadata/r4`` for field order, arrays
/// and number/boolean primitives (see ``JSONElementWriter``).
public enum FHIRJSON {
    /// The deepest nesting of objects and arrays accepted.
    public static var maxDepth: Int { JSONElementReader.maxDepth }

    /// Reads one resource; the root must be an object with a `resourceType`.
    public static func read(_ data: Data) throws -> Element {
        try readTyped(data)
    }

    /// ``read(_:)`` with its error type spelled out.
    static func readTyped(_ data: Data) throws(FHIRSyntaxError) -> Element {
        let result: Result<Element, FHIRSyntaxError> = data.withUnsafeBytes { raw in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress, !raw.isEmpty else {
                return .failure(FHIRSyntaxError(format: .json, line: 1, column: 1, message: "the document is empty: a JSON object with a resourceType is expected"))
            }
            var reader = JSONElementReader(bytes: base, count: raw.count)
            do throws(FHIRSyntaxError) {
                return .success(try reader.readResource(from: 0, to: raw.count))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Writes one resource as JSON: compact, or indented by two spaces when `pretty`.
    public static func write(_ element: Element, pretty: Bool = false) -> Data {
        var writer = JSONElementWriter(pretty: pretty)
        writer.writeResource(element)
        if pretty { writer.append(0x0A) }
        return Data(writer.output)
    }

    /// Reads NDJSON: one resource per line, blank lines ignored. An error names the line of the file.
    public static func readNDJSON(_ data: Data) throws -> [Element] {
        var resources: [Element] = []
        try forEachNDJSONResource(in: data) { resources.append($0) }
        return resources
    }

    /// Reads NDJSON one line at a time, handing each resource to `body` (which may throw to stop); the
    /// first bad line throws its syntax error, numbered by its line in the file.
    public static func forEachNDJSONResource(in data: Data, _ body: (Element) throws -> Void) throws {
        try forEachNDJSONLine(in: data) { _, result in try body(result.get()) }
    }

    /// Writes NDJSON: each resource compact on its own line, each line ending with a newline.
    public static func writeNDJSON(_ resources: [Element]) -> Data {
        var writer = JSONElementWriter(pretty: false, capacity: resources.count * 2048)
        for resource in resources {
            writer.writeResource(resource)
            writer.append(0x0A)
        }
        return Data(writer.output)
    }
}
