import Foundation

/// A FHIR file of any format CareGate reads — one JSON resource (a Bundle counts as one), NDJSON (one
/// resource per line, as Bulk Data `$export` writes it) or one XML resource — with the format told
/// from the content, not the file name.
///
/// NDJSON lines are read one by one, so a bad line is reported with its line number and the others are
/// still read.
///
/// ```swift
/// let document = FHIRDocument.read(data)
/// for entry in document.entries {
///     switch entry.result {
///     case .success(let resource): ...
///     case .failure(let error): print("file:\(error.line):\(error.column): \(error.message)")
///     }
/// }
/// ```
public struct FHIRDocument: Sendable {
    /// One resource of the document, or why it could not be read.
    public struct Entry: Sendable {
        public init(line: Int?, bytes: Range<Int>? = nil, result: Result<Element, FHIRSyntaxError>) {
            self.line = line
            self.bytes = bytes
            self.result = result
        }

        /// The 1-based line the resource starts on, for NDJSON; `nil` for a whole-file JSON or XML resource.
        public let line: Int?
        /// Where the resource's text lies in its source, for NDJSON (its line, without the newline): it
        /// can be read again from there rather than kept.
        public let bytes: Range<Int>?
        /// The resource, or the syntax error (with line and column in the file).
        public let result: Result<Element, FHIRSyntaxError>
    }

    /// The detected format; `nil` when the content is none of them (the one entry then says so).
    public let format: FHIRFormat?
    public let entries: [Entry]

    /// Reads `data`, detecting its format with ``FHIRFormat/detect(_:)``. Never throws: unreadable
    /// content is a failed entry.
    public static func read(_ data: Data) -> FHIRDocument {
        switch FHIRFormat.detect(data) {
        case .xml:
            return FHIRDocument(format: .xml, entries: [Entry(line: nil, result: readWhole(data, format: .xml))])
        case .json:
            return FHIRDocument(format: .json, entries: [Entry(line: nil, result: readWhole(data, format: .json))])
        case .ndjson:
            return FHIRDocument(format: .ndjson, entries: readLines(data))
        case nil:
            let error = FHIRSyntaxError(
                format: .json, line: 1, column: 1,
                message: data.isEmpty ? "the document is empty" : "not a FHIR document: expected a JSON object ('{'), NDJSON, or XML ('<')")
            return FHIRDocument(format: nil, entries: [Entry(line: nil, result: .failure(error))])
        }
    }

    /// The one resource of a single-resource document (JSON or XML, or NDJSON of one line).
    ///
    /// - Throws: the syntax error of that resource, or ``FHIRInputError`` when the document holds
    ///   several resources (NDJSON) where one is expected.
    public func singleResource() throws -> Element {
        guard entries.count == 1, let only = entries.first else {
            throw FHIRInputError("expected one FHIR resource in JSON or XML, found \(entries.count) NDJSON lines")
        }
        return try only.result.get()
    }

    /// JSON documents from this size up have a Bundle's entries read on several threads.
    static let parallelJSONThreshold = 4 << 20

    static func readWhole(_ data: Data, format: FHIRSyntaxError.Format) -> Result<Element, FHIRSyntaxError> {
        do {
            if format == .xml { return .success(try FHIRXML.read(data)) }
            // A large JSON document (a Bundle of thousands of entries) has its entries read in parallel.
            if data.count >= parallelJSONThreshold {
                return .success(try FHIRJSON.readTypedInParallel(data, workers: OrderedParallelMap.defaultWorkers))
            }
            return .success(try FHIRJSON.read(data))
        } catch let error as FHIRSyntaxError {
            return .failure(error)
        } catch {
            return .failure(FHIRSyntaxError(format: format, line: 1, column: 1, message: "\(error)"))
        }
    }

    private static func readLines(_ data: Data) -> [Entry] {
        var entries: [Entry] = []
        FHIRJSON.forEachNDJSONLine(in: data) { line, bytes, result in entries.append(Entry(line: line, bytes: bytes, result: result)) }
        return entries
    }
}
