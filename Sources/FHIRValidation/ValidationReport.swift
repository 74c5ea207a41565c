import FHIRCore
import FHIRPath
/// The result of validating one resource (or one document): its issues, as an OperationOutcome
/// resource for the JSON and XML writers, or as a readable text report.
///
/// ```swift
/// let report = StructureValidator().validate(resource)
/// if report.hasErrors { print(report.textReport(source: "careplan.json")) }
/// let outcome: Element = report.operationOutcome()   // write with the JSON or XML writer
/// ```
public struct ValidationReport: Sendable {
    public var issues: [ValidationIssue]

    public init(issues: [ValidationIssue] = []) {
        self.issues = issues
    }

    /// True when any issue is an error or fatal.
    public var hasErrors: Bool { issues.contains { $0.severity.isError } }

    /// The issues of severity error or fatal.
    public var errors: [ValidationIssue] { issues.filter { $0.severity.isError } }

    /// How many issues there are of each severity.
    public func count(of severity: ValidationIssue.Severity) -> Int {
        issues.lazy.filter { $0.severity == severity }.count
    }

    /// The report as an `OperationOutcome` element tree. An outcome needs at least one issue, so a clean
    /// result carries one `information` issue saying so.
    ///
    /// - Parameter source: when given (a file name, `file:line`), it leads each issue's `location`, so
    ///   that outcomes of several files can be told apart.
    public func operationOutcome(source: String? = nil) -> Element {
        var all = issues
        if all.isEmpty {
            all = [ValidationIssue(severity: .information, code: .informational, diagnostics: "No issues found", expression: "")]
        }
        let issueElements = all.map { issue in
            let location = [source, issue.location].compactMap { $0 }.joined(separator: ": ")
            return Self.issueElement(issue, location: location.isEmpty ? nil : location)
        }
        return Element.resource("OperationOutcome", children: issueElements)
    }

    /// One line per issue, prefixed with `source` when given, then a summary line:
    /// `careplan.json: error CarePlan.status: ...`.
    public func textReport(source: String? = nil) -> String {
        let prefix = source.map { "\($0): " } ?? ""
        var lines = issues.map { prefix + $0.description }
        let summary = "\(count(of: .fatal) + count(of: .error)) error(s), \(count(of: .warning)) warning(s), "
            + "\(count(of: .information)) note(s)"
        lines.append(prefix + (hasErrors ? "invalid: " : "valid: ") + summary)
        return lines.joined(separator: "\n")
    }

    private static func issueElement(_ issue: ValidationIssue, location: String?) -> Element {
        var children = [
            Element(name: "severity", value: issue.severity.rawValue),
            Element(name: "code", value: issue.code.rawValue),
            Element(name: "diagnostics", value: issue.diagnostics),
        ]
        if let location {
            children.append(Element(name: "location", value: location))
        }
        if !issue.expression.isEmpty {
            children.append(Element(name: "expression", value: issue.expression))
        }
        return Element(name: "issue", children: children)
    }
}
