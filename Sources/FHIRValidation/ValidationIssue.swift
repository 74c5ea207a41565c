import FHIRCore
import FHIRPath
/// One finding of validation, shaped like an `OperationOutcome.issue`: how bad, what kind, a readable
/// message, and where, as a FHIRPath-style location
/// (`CarePlan.activity[0].detail.scheduledTiming.repeat.period`).
public struct ValidationIssue: Hashable, Sendable, CustomStringConvertible {
    /// `OperationOutcome.issue.severity` (IssueSeverity).
    public enum Severity: String, Sendable, Comparable, CaseIterable {
        case fatal, error, warning, information

        private var rank: Int {
            switch self {
            case .fatal: 0
            case .error: 1
            case .warning: 2
            case .information: 3
            }
        }

        public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }

        /// True for `fatal` and `error`: the content is not valid.
        public var isError: Bool { self == .fatal || self == .error }
    }

    /// `OperationOutcome.issue.code` (IssueType), the subset structural validation uses.
    public enum Code: String, Sendable {
        case invalid, structure, required, value, invariant, codeInvalid = "code-invalid", notFound = "not-found",
            informational, exception
    }

    public let severity: Severity
    public let code: Code
    /// What is wrong, in words.
    public let diagnostics: String
    /// Where: a FHIRPath expression from the resource root (the file's root for a Bundle or NDJSON line).
    public let expression: String
    /// Where in the source text, for problems found before there is a tree (`line 3, column 5`).
    public let location: String?

    public init(severity: Severity, code: Code, diagnostics: String, expression: String, location: String? = nil) {
        self.severity = severity
        self.code = code
        self.diagnostics = diagnostics
        self.expression = expression
        self.location = location
    }

    /// `error CarePlan.status: message` — one line of the text report.
    public var description: String {
        expression.isEmpty ? "\(severity.rawValue): \(diagnostics)" : "\(severity.rawValue) \(expression): \(diagnostics)"
    }
}
