import ArgumentParser
import FHIR
import Foundation

/// `caregate validate`: structural validation of FHIR R4 files against the R4 definitions, reported as
/// text or as an OperationOutcome. A thin shell over ``DocumentValidator``.
struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Validate FHIR R4 resources against the R4 structure definitions.",
        discussion: """
            Each FILE may hold one JSON resource, NDJSON (one resource per line) or one XML resource; the \
            format is told from the content. A folder stands for the .json, .ndjson and .xml files under it. A Bundle is validated with every entry in it. Use - to read \
            standard input.

            Checks are structural and need no terminology server: unknown elements, cardinality, primitive \
            formats (dates, ids, decimals...), JSON value kinds and array shapes (a repeating element is \
            an array, a single one is not), choice types, required-binding codes, resource types, \
            reference formats and narrative XHTML (well-formed, and no active content). The R4 invariants \
            (the FHIRPath constraints of the definitions, such as pat-1 or ras-2) are evaluated too, except \
            those listed in Docs/invariants.md. Locations are FHIRPath expressions \
            such as CarePlan.activity[0].detail.scheduledTiming.repeat.period.

            Strict mode (the default) treats unknown elements as errors; --lenient reports them as \
            warnings. JSON and XML are treated alike.

            Exit status: 0 when no file has errors, 1 when any has (including files that cannot be read \
            or parsed, reported as file:line:column), 2 for usage errors.
            """
    )

    /// How the results are written.
    enum ReportFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json, xml
    }

    /// What an unknown element is.
    enum Strictness: EnumerableFlag {
        case strict, lenient

        static func help(for value: Strictness) -> ArgumentHelp? {
            switch value {
            case .strict: "Unknown elements are errors (the default)."
            case .lenient: "Unknown elements are warnings."
            }
        }
    }

    @Argument(help: ArgumentHelp("The files or folders to validate (JSON, NDJSON or XML); - reads standard input.", valueName: "file"))
    var files: [String]

    @Option(help: "Output: text (one line per issue), json or xml (an OperationOutcome; a Bundle of them for several resources).")
    var format: ReportFormat = .text

    @Flag(help: "Whether unknown elements are errors or warnings.")
    var strictness: Strictness = .strict

    func validate() throws {
        if files.filter({ $0 == "-" }).count > 1 {
            throw ValidationError("standard input (-) can be read only once")
        }
    }

    func run() throws {
        let validator = DocumentValidator(strict: strictness == .strict)
        var results: [DocumentValidator.Result] = []
        for file in InputFiles.expand(files) {
            do {
                let data = try InputFiles.read(file)
                results += validator.validate(data, source: file == "-" ? "<stdin>" : file)
            } catch {
                let issue = ValidationIssue(
                    severity: .fatal, code: .notFound,
                    diagnostics: "cannot read the file: \(error)", expression: "")
                results.append(DocumentValidator.Result(source: file, report: ValidationReport(issues: [issue])))
            }
        }
        let output: Data
        switch format {
        case .text: output = Data((Self.textReport(results) + "\n").utf8)
        case .json: output = FHIRJSON.write(Self.outcome(results), pretty: true)
        case .xml: output = FHIRXML.write(Self.outcome(results), pretty: true)
        }
        FileHandle.standardOutput.write(output)
        if results.contains(where: { $0.report.hasErrors }) {
            throw ExitCode(1)
        }
    }

    /// One line per issue (`file: error Patient.birthDate: ...`), then a summary.
    static func textReport(_ results: [DocumentValidator.Result]) -> String {
        var lines: [String] = []
        var errors = 0, warnings = 0, invalid = 0
        for result in results {
            lines += result.report.issues.map { "\(result.source): \($0)" }
            errors += result.report.errors.count
            warnings += result.report.count(of: .warning)
            if result.report.hasErrors { invalid += 1 }
        }
        let resources = results.count == 1 ? "1 resource" : "\(results.count) resources"
        lines.append("\(resources) checked, \(invalid) invalid: \(errors) error(s), \(warnings) warning(s)")
        return lines.joined(separator: "\n")
    }

    /// One OperationOutcome, or a collection Bundle of them (each issue located by its source).
    static func outcome(_ results: [DocumentValidator.Result]) -> Element {
        if results.count == 1, let only = results.first {
            return only.report.operationOutcome(source: only.source)
        }
        let entries = results.map { result in
            Element(name: "entry", children: [
                Element(name: "resource", resourceType: "OperationOutcome",
                        children: result.report.operationOutcome(source: result.source).children),
            ])
        }
        return Element.resource("Bundle", children: [Element(name: "type", value: "collection")] + entries)
    }
}
