import ArgumentParser
import CommandSupport
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
    var format: ValidationReportFormat = .text

    @Flag(help: "Whether unknown elements are errors or warnings.")
    var strictness: Strictness = .strict

    func validate() throws {
        if files.filter({ $0 == "-" }).count > 1 {
            throw ValidationError("standard input (-) can be read only once")
        }
        try CommandInputs.requireInputs(files)
    }

    func run() throws {
        // Files are validated side by side, and the resources of a large file in runs, on every core;
        // the report keeps the order of the input.
        var results: [DocumentValidator.Result] = []
        try DocumentValidator(strict: strictness == .strict).validate(FHIRInput.sources(for: files)) { results += $0 }
        FileHandle.standardOutput.write(format.render(results))
        if results.contains(where: { $0.report.hasErrors }) {
            throw ExitCode(1)
        }
    }
}

extension ValidationReportFormat: ExpressibleByArgument {}
