import FHIRCore
import FHIRPath
import Foundation

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
