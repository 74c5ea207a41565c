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
            Checks structure against the R4 StructureDefinitions and the R4 invariants, Bundle, extension, UCUM \
            and narrative rules, without a terminology server. Issues are reported at FHIRPath locations, as text \
            or an OperationOutcome; unknown elements are errors unless --lenient.

            Exit status: 0 when no file has errors, 1 when any has (or cannot be read), 2 for usage errors.

            Examples:
              caregate validate Fixtures/provider
              caregate validate bundle.json --format json

            More: Docs/converting.md (Validate).
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
