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

    /// ``readTyped(_:)`` with the items of the root's `entry` array (a Bundle's entries) read on up to
    /// `workers` threads: the same element tree, and on any error the same error, as reading in one
    /// pass (a document with an error is read again in one pass, for the error that pass meets first).
    ///
    /// The root is read from a copy of the document whose entries are empty objects, so that
    /// everything but the entries is read and checked as usual; each entry is then read in place.
    static func readTypedInParallel(_ data: Data, workers: Int) throws(FHIRSyntaxError) -> Element {
        let read: Element? = data.withUnsafeBytes { raw -> Element? in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard let base = bytes.baseAddress, let split = EntryArrayScan.scan(bytes), !split.items.isEmpty else { return nil }
            // The skeleton: the document with each entry replaced by {}.
            var skeleton = Data(bytes[..<split.array.lowerBound])
            skeleton.append(contentsOf: Array(("[" + Array(repeating: "{}", count: split.items.count).joined(separator: ",") + "]").utf8))
            skeleton.append(contentsOf: bytes[split.array.upperBound...])
            guard var root = try? readTyped(skeleton) else { return nil }
            let ranges = split.items
            let chunkCount = min(ranges.count, max(1, workers) * 8)
            let chunkSize = (ranges.count + chunkCount - 1) / chunkCount
            let results = UnsafeMutableBufferPointer<[Element]?>.allocate(capacity: chunkCount)
            results.initialize(repeating: nil)
            defer { results.deinitialize(); results.deallocate() }
            let shared = ParallelRead(bytes: base, count: bytes.count, results: results)
            DispatchQueue.concurrentPerform(iterations: chunkCount) { chunk in
                var reader = JSONElementReader(bytes: shared.bytes, count: shared.count)
                var items: [Element] = []
                for range in ranges[min(chunk * chunkSize, ranges.count)..<min((chunk + 1) * chunkSize, ranges.count)] {
                    guard let item = try? reader.readEntryItem(range) else { return }
                    items.append(item)
                }
                shared.results[chunk] = items
            }
            var items: [Element] = []
            items.reserveCapacity(ranges.count)
            for chunk in results {
                guard let chunk else { return nil }
                items += chunk
            }
            // The root's "entry" children are the {} placeholders, in order (a duplicate key is an error).
            var next = 0
            for index in root.children.indices where root.children[index].name == "entry" {
                guard next < items.count, root.children[index].children.isEmpty else { return nil }
                root.children[index] = items[next]
                next += 1
            }
            return next == items.count ? root : nil
        }
        if let read { return read }
        return try readTyped(data)
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
        try forEachNDJSONLine(in: data) { _, _, result in try body(result.get()) }
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

/// What the threads of ``FHIRJSON/readTypedInParallel(_:workers:)`` share: the document's bytes, only
/// read, and one result slot per chunk, each written by the one thread that reads that chunk.
private struct ParallelRead: @unchecked Sendable {
    let bytes: UnsafePointer<UInt8>
    let count: Int
    let results: UnsafeMutableBufferPointer<[Element]?>
}
