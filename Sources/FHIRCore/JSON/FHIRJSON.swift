import Foundation

/// FHIR R4 JSON: reads bytes into ``Element`` trees and writes them back, losslessly, for single
/// resources and for NDJSON (one resource per line, as Bulk Data `$export` produces).
///
/// ### Members
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
/// hold resources (see `JSONElementReader`). Writing uses ``FHIRMetadata/r4`` for field order, arrays
/// and number/boolean primitives (see `JSONElementWriter`).
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
            guard let base = bytes.baseAddress, let (split, skeleton) = entrySplit(bytes) else { return nil }
            var root = skeleton.root
            let ranges = split.items
            let chunkCount = min(ranges.count, max(1, workers) * 8)
            let chunkSize = (ranges.count + chunkCount - 1) / chunkCount
            let results = UnsafeMutableBufferPointer<[Element]?>.allocate(capacity: chunkCount)
            results.initialize(repeating: nil)
            defer { results.deinitialize(); results.deallocate() }
            let shared = ParallelRead(bytes: base, count: bytes.count, results: results)
            DispatchQueue.concurrentPerform(iterations: chunkCount) { chunk in
                shared.results[chunk] = shared.entries(ranges[min(chunk * chunkSize, ranges.count)..<min((chunk + 1) * chunkSize, ranges.count)])
            }
            var items: [Element] = []
            items.reserveCapacity(ranges.count)
            for chunk in results {
                guard let chunk else { return nil }
                items += chunk
            }
            for (position, index) in skeleton.placeholders.enumerated() { root.children[index] = items[position] }
            return root
        }
        if let read { return read }
        return try readTyped(data)
    }

    /// What reading a Bundle's entries a run at a time (``forEachEntryRun(in:workers:runSize:_:)``) came to.
    enum EntryRuns: Equatable {
        /// The document is no Bundle whose entries can be read apart (not JSON, no `entry` array, another
        /// resource, or an error outside the entries): nothing was handed over; read it whole.
        case notApart
        /// Every entry was handed over.
        case read
        /// An entry cannot be read: the error that reading the document in one pass meets first. The
        /// runs before it were handed over.
        case unreadable(FHIRSyntaxError)
    }

    /// The entries of the Bundle in `data` read on up to `workers` threads, `runSize` at a time, and
    /// handed to `body` in order (with the position of the run's first entry) while later runs are
    /// read, so that a large Bundle is used as it is read and each run can be freed once used.
    ///
    /// Everything outside the entries is read and checked before the first run is handed over. An error
    /// inside an entry is found only when its run is read: the runs before it have been handed over by
    /// then, and the caller must drop what it took from them.
    static func forEachEntryRun(
        in data: Data, workers: Int, runSize: Int = 256, _ body: (_ entries: [Element], _ first: Int) throws -> Void
    ) throws -> EntryRuns {
        // How many entries were handed over, or nil when nothing could be.
        let delivered: (count: Int, complete: Bool)? = try data.withUnsafeBytes { raw -> (count: Int, complete: Bool)? in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard let base = bytes.baseAddress, let (split, skeleton) = entrySplit(bytes), skeleton.root.resourceType == "Bundle" else {
                return nil
            }
            let shared = ParallelRead(bytes: base, count: bytes.count, results: UnsafeMutableBufferPointer(start: nil, count: 0))
            let ranges = split.items
            // No run is started once one has failed.
            let runs = RunStarts(count: ranges.count, size: max(1, runSize))
            var delivered = 0
            try OrderedParallelMap.run(runs, workers: workers, window: max(1, workers) * 4, transform: { run in
                shared.entries(ranges[run])
            }) { entries in
                guard !runs.stopped else { return }
                guard let entries else {
                    runs.stopped = true
                    return
                }
                try body(entries, delivered)
                delivered += entries.count
            }
            return (delivered, !runs.stopped)
        }
        guard let delivered else { return .notApart }
        if delivered.complete { return .read }
        // The one-pass reader says what is wrong. Should it read the document after all, the entries not
        // handed over yet follow.
        let root: Element
        do {
            root = try readTyped(data)
        } catch {
            return .unreadable(error)
        }
        try body(Array(root.children(named: "entry").dropFirst(delivered.count)), delivered.count)
        return .read
    }

    /// The entry items of the root's `entry` array, and the document read with each of them replaced by
    /// `{}` (the skeleton: everything but the entries, read and checked as usual), with the positions of
    /// those placeholders among the root's children. `nil` when the document has no such array, or the
    /// skeleton cannot be read (the one-pass reader then explains why).
    private static func entrySplit(_ bytes: UnsafeBufferPointer<UInt8>) -> (EntryArrayScan.Split, (root: Element, placeholders: [Int]))? {
        guard let split = EntryArrayScan.scan(bytes), !split.items.isEmpty else { return nil }
        var skeleton = Data(bytes[..<split.array.lowerBound])
        skeleton.append(contentsOf: Array(("[" + Array(repeating: "{}", count: split.items.count).joined(separator: ",") + "]").utf8))
        skeleton.append(contentsOf: bytes[split.array.upperBound...])
        guard let root = try? readTyped(skeleton) else { return nil }
        // The root's "entry" children are the {} placeholders, in order (a duplicate key is an error).
        let placeholders = root.children.indices.filter { root.children[$0].name == "entry" }
        guard placeholders.count == split.items.count, placeholders.allSatisfy({ root.children[$0].children.isEmpty }) else { return nil }
        return (split, (root, placeholders))
    }
    /// Writes one resource as JSON: compact, or indented by two spaces when `pretty`.
    public static func write(_ element: Element, pretty: Bool = false) -> Data {
        var writer = JSONElementWriter(pretty: pretty)
        writer.writeResource(element)
        if pretty { writer.append(0x0A) }
        return writer.data
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
        return writer.data
    }
}

/// What the threads of ``FHIRJSON/readTypedInParallel(_:workers:)`` share: the document's bytes, only
/// read, and one result slot per chunk, each written by the one thread that reads that chunk.
private struct ParallelRead: @unchecked Sendable {
    let bytes: UnsafePointer<UInt8>
    let count: Int
    let results: UnsafeMutableBufferPointer<[Element]?>

    /// The entry items at `ranges`, or `nil` when one cannot be read.
    func entries(_ ranges: ArraySlice<Range<Int>>) -> [Element]? {
        var reader = JSONElementReader(bytes: bytes, count: count)
        var items: [Element] = []
        items.reserveCapacity(ranges.count)
        for range in ranges {
            guard let item = try? reader.readEntryItem(range) else { return nil }
            items.append(item)
        }
        return items
    }
}

/// The runs of ``FHIRJSON/forEachEntryRun(in:workers:runSize:_:)``: positions in the entry array, a run at
/// a time, until the end or until the thread that hands them out (the consuming one) stops them.
private final class RunStarts: IteratorProtocol {
    private let count: Int
    private let size: Int
    private var start = 0
    var stopped = false

    init(count: Int, size: Int) {
        self.count = count
        self.size = size
    }

    func next() -> Range<Int>? {
        guard !stopped, start < count else { return nil }
        defer { start += size }
        return start..<min(start + size, count)
    }
}
