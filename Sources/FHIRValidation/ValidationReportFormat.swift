import FHIRCore
import Foundation

/// How a list of validation results is written for a person or a program: one line per issue and a
/// summary, or an OperationOutcome (a collection Bundle of them for several resources) in JSON or XML.
///
/// `caregate validate` and `caregate mappings validate` print their reports through this one type, so
/// that both read the same way.
public enum ValidationReportFormat: String, Sendable, CaseIterable {
    case text, json, xml

    /// The rendered report, ending with a newline.
    public func render(_ results: [DocumentValidator.Result], noun: String = "resource") -> Data {
        switch self {
        case .text: return Data((Self.text(results, noun: noun) + "\n").utf8)
        case .json: return FHIRJSON.write(Self.outcome(results), pretty: true)
        case .xml: return FHIRXML.write(Self.outcome(results), pretty: true)
        }
    }

    /// One line per issue (`file: error Patient.birthDate: ...`), then a summary line counting the
    /// checked items (`noun`, pluralised with an s), the invalid ones, errors and warnings.
    public static func text(_ results: [DocumentValidator.Result], noun: String = "resource") -> String {
        var lines: [String] = []
        var errors = 0, warnings = 0, invalid = 0
        for result in results {
            lines += result.report.issues.map { "\(result.source): \($0)" }
            errors += result.report.errors.count
            warnings += result.report.count(of: .warning)
            if result.report.hasErrors { invalid += 1 }
        }
        let checked = results.count == 1 ? "1 \(noun)" : "\(results.count) \(noun)s"
        lines.append("\(checked) checked, \(invalid) invalid: \(errors) error(s), \(warnings) warning(s)")
        return lines.joined(separator: "\n")
    }

    /// One OperationOutcome, or a collection Bundle of them (each issue located by its source).
    public static func outcome(_ results: [DocumentValidator.Result]) -> Element {
        if results.count == 1, let only = results.first {
            return only.report.operationOutcome(source: only.source)
        }
        return FHIRFormat.collectionBundle(of: results.map { $0.report.operationOutcome(source: $0.source) })
    }
}
