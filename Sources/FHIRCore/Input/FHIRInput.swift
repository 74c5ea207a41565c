import Foundation

/// The one way CareGate reads FHIR input: files, folders and standard input, in JSON, NDJSON or XML,
/// with the format told from the content.
///
/// ### Members
/// - ``sources(for:)``: the command-line arguments as sources, a folder standing for the FHIR files under
///   it (`.json`, `.ndjson`, `.xml`, recursively, in a stable name order).
/// - ``forEachEntry(of:chunkSize:_:)``: every resource of one source, in order. NDJSON is streamed
///   chunk by chunk, so a file larger than memory is read line by line with its line numbers kept.
/// - `forEachEntry(of:workers:chunkSize:_:)`: the same for many sources, parsed on worker threads
///   ahead of the caller.
/// - ``data(of:)``: the whole content of one source, for commands that need it all (convert).
///
/// ```swift
/// for source in FHIRInput.sources(for: arguments) {
///     try FHIRInput.forEachEntry(of: source) { entry, format in
///         switch entry.result { case .success(let resource): ...; case .failure(let error): ... }
///     }
/// }
/// ```
public enum FHIRInput {
    /// One place input comes from.
    public enum Source: Hashable, Sendable, CustomStringConvertible {
        case file(String)
        case standardInput
        /// Bytes held in memory (a page pulled from a server, a test's input), shown in reports as `name`.
        /// Nothing of it is written to disk.
        case memory(name: String, bytes: Data)

        /// The name to show in reports: the path as given, `<stdin>`, or the name given to bytes in memory.
        public var description: String {
            switch self {
            case .file(let path): return path
            case .standardInput: return "<stdin>"
            case .memory(let name, _): return name
            }
        }
    }

    /// File extensions that a folder is searched for.
    public static let fhirExtensions: Set<String> = ["json", "ndjson", "xml"]

    /// The sources named by `arguments`: `-` is standard input, a folder stands for the FHIR files under
    /// it (recursively, hidden files skipped, in name order, paths relative to what was typed). A folder
    /// with no FHIR file yields itself, so that reading it reports the problem instead of checking nothing.
    public static func sources(for arguments: [String]) -> [Source] {
        arguments.flatMap { argument -> [Source] in
            if argument == "-" { return [.standardInput] }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory), isDirectory.boolValue else {
                return [.file(argument)]
            }
            let found = filesUnder(argument)
            return found.isEmpty ? [.file(argument)] : found.map(Source.file)
        }
    }

    /// The whole content of `source`.
    ///
    /// - Throws: ``FHIRInputError`` saying plainly what is wrong (missing, a folder, not readable).
    public static func data(of source: Source) throws(FHIRInputError) -> Data {
        switch source {
        case .standardInput:
            return FileHandle.standardInput.readDataToEndOfFile()
        case .memory(_, let bytes):
            return bytes
        case .file(let path):
            try checkReadable(path)
            do {
                return try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw FHIRInputError("cannot be read: \(error.localizedDescription)")
            }
        }
    }

    /// Reads every resource of `source` in order and hands each (or its syntax error) to `body`, with
    /// the format detected from the content. A JSON or XML file is one entry (a Bundle counts as one);
    /// NDJSON gives one entry per non-blank line, read `chunkSize` bytes at a time, so memory holds one
    /// chunk and its resources, never the whole file.
    ///
    /// - Returns: the detected format (`nil` when the content is no FHIR format; the one entry says so).
    /// - Throws: ``FHIRInputError`` when the source cannot be opened or read, or what `body` throws.
    @discardableResult
    public static func forEachEntry(
        of source: Source, chunkSize: Int = 4 << 20, _ body: (_ entry: FHIRDocument.Entry, _ format: FHIRFormat?) throws -> Void
    ) throws -> FHIRFormat? {
        var format: FHIRFormat?
        var units = Units([source], chunkSize: chunkSize)
        while let unit = units.next() {
            let parsed = unit.parse()
            if let error = parsed.error { throw error }
            format = parsed.format
            for entry in parsed.entries { try body(entry, parsed.format) }
        }
        return format
    }

    /// What reading several sources gives, in order.
    public enum Event {
        /// A resource of `source` (or its syntax error), with the format of its content.
        case entry(Source, FHIRDocument.Entry, FHIRFormat?)
        /// `source` cannot be opened or read (after any entries it gave before the failure).
        case unreadable(Source, FHIRInputError)
        /// With `streamingBundles`: entries of a large JSON Bundle in `source` (`entry` elements, from the
        /// entry numbered `first` on), read on the worker threads a run at a time and handed over as they
        /// are read. Everything outside the entries was checked before the first run. Should a later
        /// entry turn out unreadable, an ``entry(_:_:_:)`` with the document's syntax error follows the
        /// runs already handed over, and the file is to be taken as unread.
        case bundleEntries(Source, [Element], first: Int)
    }

    /// Reads every resource of `sources`, in order, parsing on `workers` threads ahead of `body`, which
    /// runs on the calling thread. Memory holds a few files or NDJSON chunks at a time, never a whole
    /// NDJSON file; a source that cannot be read is an ``Event/unreadable(_:_:)`` and the others go on.
    ///
    /// With `streamingBundles`, a JSON Bundle large enough to be read in parallel comes as
    /// ``Event/bundleEntries(_:_:first:)`` runs rather than as one tree, so that its first entries are
    /// used while the later ones are read and memory need not hold it whole.
    public static func forEachEntry(
        of sources: [Source], workers: Int = OrderedParallelMap.defaultWorkers, chunkSize: Int = 4 << 20,
        streamingBundles: Bool = false, _ body: (Event) throws -> Void
    ) throws {
        // Up to four chunks' worth of bytes ahead: a few NDJSON chunks, or many small files, so that
        // one large file among them does not leave the other workers waiting.
        try OrderedParallelMap.run(
            Units(sources, chunkSize: chunkSize), workers: workers, window: workers * 8, cost: \.byteCount, budget: 4 * chunkSize,
            transform: { $0.parse(deferringBundles: streamingBundles) }
        ) { parsed in
            if let bundle = parsed.deferredBundle {
                try readBundle(bundle, of: parsed.source, workers: workers, body)
            }
            for entry in parsed.entries { try body(.entry(parsed.source, entry, parsed.format)) }
            if let error = parsed.error { try body(.unreadable(parsed.source, error)) }
            // What `body` did not keep of a file's trees is freed on another thread, not before the next unit.
            releaseElsewhere(parsed)
        }
    }

    /// A large JSON document, a run of entries at a time when it is a Bundle, else whole.
    private static func readBundle(_ data: Data, of source: Source, workers: Int, _ body: (Event) throws -> Void) throws {
        let outcome = try FHIRJSON.forEachEntryRun(in: data, workers: workers) { entries, first in
            try body(.bundleEntries(source, entries, first: first))
            releaseElsewhere(entries)
        }
        switch outcome {
        case .read:
            return
        case .unreadable(let error):
            try body(.entry(source, FHIRDocument.Entry(line: nil, result: .failure(error)), .json))
        case .notApart:
            let document = FHIRDocument.read(data)
            for entry in document.entries { try body(.entry(source, entry, document.format)) }
        }
    }

    /// One piece of input that parses on its own: a whole file, or a run of whole NDJSON lines.
    struct Unit: Sendable {
        enum Content {
            case whole(Data)
            /// Whole lines from byte `offset` of the file on.
            case lines(Data, firstLine: Int, offset: Int)
        }

        let source: Source
        let content: Result<Content, FHIRInputError>

        /// The bytes to parse.
        var byteCount: Int {
            switch content {
            case .success(.whole(let data)), .success(.lines(let data, _, _)): return data.count
            case .failure: return 0
            }
        }

        /// The unit's entries; with `deferringBundles`, a JSON document large enough to be read in parallel
        /// is left to the consuming thread (``ParsedUnit/deferredBundle``), which hands its entries over as
        /// they are read.
        func parse(deferringBundles: Bool = false) -> ParsedUnit {
            switch content {
            case .failure(let error):
                return ParsedUnit(source: source, entries: [], format: nil, error: error)
            case .success(.whole(let data)):
                if deferringBundles, data.count >= FHIRDocument.parallelJSONThreshold, FHIRFormat.detect(data) == .json {
                    return ParsedUnit(source: source, entries: [], format: .json, error: nil, deferredBundle: data)
                }
                let document = FHIRDocument.read(data)
                return ParsedUnit(source: source, entries: document.entries, format: document.format, error: nil)
            case .success(.lines(let data, let firstLine, let offset)):
                var entries: [FHIRDocument.Entry] = []
                FHIRJSON.forEachNDJSONLine(in: data, firstLineNumber: firstLine) { line, bytes, result in
                    entries.append(FHIRDocument.Entry(line: line, bytes: (bytes.lowerBound + offset)..<(bytes.upperBound + offset), result: result))
                }
                return ParsedUnit(source: source, entries: entries, format: .ndjson, error: nil)
            }
        }
    }

    struct ParsedUnit {
        let source: Source
        let entries: [FHIRDocument.Entry]
        let format: FHIRFormat?
        let error: FHIRInputError?
        /// A large JSON document not read yet (see ``Unit/parse(deferringBundles:)``).
        var deferredBundle: Data? = nil
    }

    /// The units of a list of sources, read as they are asked for: a JSON or XML file whole, NDJSON
    /// larger than a chunk as runs of complete lines (a partial last line carried to the next chunk).
    struct Units: IteratorProtocol {
        private var sources: IndexingIterator<[Source]>
        private let chunkSize: Int
        /// The NDJSON file being read in chunks, and where in it `buffer` starts.
        private var open: OpenFile?

        private typealias OpenFile = (source: Source, handle: FileHandle, buffer: Data, nextLine: Int, offset: Int)

        init(_ sources: [Source], chunkSize: Int) {
            self.sources = sources.makeIterator()
            self.chunkSize = max(1, chunkSize)
        }

        mutating func next() -> Unit? {
            if let current = open {
                return nextChunk(of: current)
            }
            guard let source = sources.next() else { return nil }
            guard case .file(let path) = source else {
                return Unit(source: source, content: Result { () throws(FHIRInputError) in .whole(try data(of: source)) })
            }
            do throws(FHIRInputError) {
                try checkReadable(path)
                guard let handle = FileHandle(forReadingAtPath: path) else { throw FHIRInputError("cannot be opened") }
                let buffer = try readChunk(handle, size: chunkSize)
                guard buffer.count == chunkSize, FHIRFormat.detect(buffer) == .ndjson else {
                    // Small enough to have been read whole, or JSON/XML, which are read whole anyway.
                    defer { try? handle.close() }
                    // The rest in one read (sized from the file), not chunk by chunk: a large Bundle is read
                    // on the thread every other unit waits for.
                    var whole = buffer
                    do {
                        if let rest = try handle.readToEnd() { whole.append(rest) }
                    } catch {
                        throw FHIRInputError("cannot be read: \(error.localizedDescription)")
                    }
                    return Unit(source: source, content: .success(.whole(whole)))
                }
                return nextChunk(of: (source, handle, buffer, 1, 0))
            } catch {
                return Unit(source: source, content: .failure(error))
            }
        }

        /// The complete lines of the open NDJSON file's buffer and the chunk after it.
        private mutating func nextChunk(of current: OpenFile) -> Unit {
            var (source, handle, buffer, nextLine, offset) = current
            do throws(FHIRInputError) {
                while true {
                    let more = try readChunk(handle, size: chunkSize)
                    let isLast = more.isEmpty
                    let cut: Int
                    if isLast {
                        cut = buffer.count
                    } else if let lastNewline = buffer.lastIndex(of: 0x0A) {
                        cut = lastNewline - buffer.startIndex + 1
                    } else {
                        buffer.append(more)  // one line longer than a chunk: keep reading until it ends
                        continue
                    }
                    let complete = Data(buffer.prefix(cut))
                    let lines = complete.reduce(into: 0) { count, byte in if byte == 0x0A { count += 1 } }
                    if isLast {
                        try? handle.close()
                        open = nil
                    } else {
                        var rest = Data(buffer.suffix(from: buffer.startIndex + cut))
                        rest.append(more)
                        open = (source, handle, rest, nextLine + lines, offset + cut)
                    }
                    return Unit(source: source, content: .success(.lines(complete, firstLine: nextLine, offset: offset)))
                }
            } catch {
                try? handle.close()
                open = nil
                return Unit(source: source, content: .failure(error))
            }
        }
    }

    private static func readChunk(_ handle: FileHandle, size: Int) throws(FHIRInputError) -> Data {
        do {
            return try handle.read(upToCount: size) ?? Data()
        } catch {
            throw FHIRInputError("cannot be read: \(error.localizedDescription)")
        }
    }

    private static func checkReadable(_ path: String) throws(FHIRInputError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw FHIRInputError("no such file")
        }
        if isDirectory.boolValue {
            guard FileManager.default.isReadableFile(atPath: path) else { throw FHIRInputError("a folder that cannot be read (permission denied)") }
            throw FHIRInputError("a folder with no .json, .ndjson or .xml file in it")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw FHIRInputError("not readable (permission denied)")
        }
    }

    private static func filesUnder(_ folder: String) -> [String] {
        let root = URL(fileURLWithPath: folder)
        guard let walker = FileManager.default.enumerator(
            at: root, includingPropertiesForKeys: [.isRegularFileKey], options: [.skipsHiddenFiles])
        else { return [] }
        var files: [String] = []
        for case let url as URL in walker where fhirExtensions.contains(url.pathExtension.lowercased()) {
            files.append(url.path)
        }
        // Paths relative to what the user typed read better in reports than absolute ones.
        let prefix = root.standardizedFileURL.path
        return files.sorted().map { path in
            let standardized = URL(fileURLWithPath: path).standardizedFileURL.path
            guard standardized.hasPrefix(prefix + "/") else { return path }
            return (folder.hasSuffix("/") ? folder : folder + "/") + standardized.dropFirst(prefix.count + 1)
        }
    }
}

/// Why an input could not be read at all (as opposed to a syntax error inside it).
public struct FHIRInputError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
