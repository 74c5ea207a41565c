import ArgumentParser
import CommandSupport
import FHIR
import Foundation
import Mapping

/// `caregate mappings`: check and test mapping files.
struct MappingsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mappings",
        abstract: "Check mapping files, or run their golden tests.",
        discussion: """
            Examples:
              caregate mappings validate my-mappings/
              caregate mappings test my-mappings/ --cases my-cases/

            More: Mappings/README.md.
            """,
        subcommands: [MappingsValidate.self, MappingsTest.self]
    )
}

/// `caregate mappings validate [DIR]`.
struct MappingsValidate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check mapping files statically, without data.",
        discussion: """
            Reports every problem once at file:line:column, with a did-you-mean: YAML syntax, unknown keys, \
            FHIRPath that names no R4 element, unknown fields and transforms, values of the wrong type. Without \
            DIR, checks the built-in defaults. --format json prints {"problems": [{"file", "line", "column", \
            "severity", "message"}]} for CI; xml an OperationOutcome. Exit 0 when no file has errors.

            Examples:
              caregate mappings validate my-mappings/
              caregate mappings validate my-mappings/ --format json

            More: Mappings/README.md (Checking a mapping as you write it).
            """
    )

    @Argument(help: ArgumentHelp("The folder of mapping files (default: the built-in defaults).", valueName: "dir"))
    var folder: String?

    @Option(help: "Output: text (one line per problem), json (each problem's file, line, column, severity and message) or xml (an OperationOutcome).")
    var format: ValidationReportFormat = .text

    func validate() throws {
        if let folder { try CommandInputs.requireFolder(folder) }
    }

    func run() throws {
        var problems: [MappingProblem]
        var files: Int
        if let folder {
            (_, problems, files) = try MappingSet.layered(folder: folder)
        } else {
            problems = MappingSet.checkDefaults()
            files = MappingSet.defaultFileNames.count
        }
        // The report's rules files are checked too, and counted apart from the mapping files.
        let rules = ReportRulesCheck.check(folder: folder)
        problems += rules.problems
        if folder != nil { files -= rules.files }
        // In reading order, file by file.
        problems.sort { ($0.location.file, $0.location.line, $0.location.column) < ($1.location.file, $1.location.line, $1.location.column) }
        switch format {
        case .text:
            var lines = problems.map(\.description)
            let errors = problems.filter { $0.severity == .error }.count
            lines.append("\(files) mapping file(s) checked: \(errors) error(s), \(problems.count - errors) warning(s)")
            print(lines.joined(separator: "\n"))
        case .json:
            FileHandle.standardOutput.write(MappingProblems(problems).json(filesChecked: files))
        case .xml:
            FileHandle.standardOutput.write(format.render(Self.results(problems)))
        }
        if problems.contains(where: { $0.severity == .error }) { throw ExitCode(1) }
    }

    /// Each problem as a validation result named `file:line:column`, so that the report reads as
    /// `caregate validate`'s.
    static func results(_ problems: [MappingProblem]) -> [DocumentValidator.Result] {
        problems.map { problem in
            let issue = ValidationIssue(
                severity: problem.severity == .error ? .error : .warning, code: .invalid, diagnostics: problem.message,
                expression: "")
            return DocumentValidator.Result(source: problem.location.description, report: ValidationReport(issues: [issue]))
        }
    }
}
