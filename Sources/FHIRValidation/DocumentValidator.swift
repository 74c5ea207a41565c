import FHIRCore
import FHIRPath
import Foundation
import Synchronization

/// Validates every resource of a file, whatever its format (JSON, NDJSON, XML), and says where each
/// result comes from: the file, and for NDJSON the line. A file that cannot be read (bad syntax, not
/// FHIR) yields a `fatal` issue naming `file:line:column`.
///
/// This is what `caregate validate` runs for each file it is given.
public struct DocumentValidator: Sendable {
    /// The result for one resource (or one unreadable document or line).
    public struct Result: Sendable {
        /// `file` or, for an NDJSON line, `file:line`; `file:line:column` for a syntax error.
        public let source: String
        public let report: ValidationReport

        public init(source: String, report: ValidationReport) {
            self.source = source
            self.report = report
        }
    }

    /// Unknown elements are errors when `strict`, warnings otherwise.
    public var strict: Bool

    public init(strict: Bool = true) {
        self.strict = strict
    }

    /// Validates the resources of `data`, read from `source` (a file name, or `-` for standard input).
    public func validate(_ data: Data, source: String) -> [Result] {
        let document = FHIRDocument.read(data)
        return document.entries.map { validate($0, format: document.format, source: source) }
    }

    /// Validates every resource of `sources` on up to `workers` threads (files side by side, and the
    /// resources of a large file in runs), handing the results to `body` in input order. A source that
    /// cannot be read is one fatal result.
    public func validate(_ sources: [FHIRInput.Source], workers: Int = OrderedParallelMap.defaultWorkers, _ body: ([Result]) throws -> Void) throws {
        let validator = self
        try OrderedParallelMap.run(sources.makeIterator(), workers: workers, window: workers * 2, transform: { source in
            validator.validateWhole(source, workers: workers)
        }, consume: body)
    }

    /// Resources per run when one file's resources are validated on several threads.
    static let runSize = 64

    /// The resources of one source, read a chunk at a time (an NDJSON file of a gigabyte is never
    /// held whole), each chunk's resources validated in runs on every worker.
    private func validateWhole(_ source: FHIRInput.Source, workers: Int) -> [Result] {
        var results: [Result] = []
        var pending: [FHIRDocument.Entry] = []
        var format: FHIRFormat?
        func flush() {
            defer { pending.removeAll(keepingCapacity: true) }
            guard workers > 1, pending.count > Self.runSize else {
                results += pending.map { validate($0, format: format, source: source.description) }
                return
            }
            let entries = pending, documentFormat = format
            let runs = stride(from: 0, to: entries.count, by: Self.runSize).map { $0..<min($0 + Self.runSize, entries.count) }
            let slots = ResultRuns(count: runs.count)
            DispatchQueue.concurrentPerform(iterations: runs.count) { index in
                slots.set(index, runs[index].map { validate(entries[$0], format: documentFormat, source: source.description) })
            }
            results += slots.joined
        }
        do {
            try FHIRInput.forEachEntry(of: source) { entry, entryFormat in
                format = entryFormat
                pending.append(entry)
                if pending.count >= Self.runSize * 16 { flush() }
            }
            flush()
        } catch {
            flush()
            let issue = ValidationIssue(severity: .fatal, code: .notFound, diagnostics: "cannot read the file: \(error)", expression: "")
            results.append(Result(source: source.description, report: ValidationReport(issues: [issue])))
        }
        return results
    }

    /// Validates one entry of a document in `format`, read from `source`: its resource, or the fatal
    /// syntax error it is.
    public func validate(_ entry: FHIRDocument.Entry, format: FHIRFormat?, source: String) -> Result {
        switch entry.result {
        case .success(let resource):
            let isJSON = format == .json || format == .ndjson
            let validator = StructureValidator(options: ValidationOptions(
                strict: strict, checkJSONValueKinds: isJSON, checkJSONArrayShape: isJSON))
            let label = entry.line.map { "\(source):\($0)" } ?? source
            return Result(source: label, report: validator.validate(resource))
        case .failure(let error):
            let issue = ValidationIssue(
                severity: .fatal, code: .structure,
                diagnostics: "\(error.format.rawValue) syntax error: \(error.message)", expression: "",
                location: "line \(error.line), column \(error.column)")
            return Result(source: "\(source):\(error.line):\(error.column)", report: ValidationReport(issues: [issue]))
        }
    }
}

/// The results of runs validated on several threads, each written once by its own thread.
private final class ResultRuns: Sendable {
    private let runs: Mutex<[[DocumentValidator.Result]]>

    init(count: Int) { runs = Mutex(Array(repeating: [], count: count)) }

    func set(_ index: Int, _ results: [DocumentValidator.Result]) {
        runs.withLock { $0[index] = results }
    }

    var joined: [DocumentValidator.Result] { runs.withLock { $0.flatMap { $0 } } }
}
