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
            Mapping files (YAML) say how each FHIR resource type becomes care entities; Mappings/README.md \
            documents the format. CareGate ships default mappings; `caregate import --mappings DIR` layers \
            a folder of yours over them.
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
            Reports every problem once, with its file:line:column: YAML syntax, unknown or missing keys, \
            FHIRPath that does not parse or names no R4 element from where it starts, unknown entities, \
            target fields, transforms and resource types (each with the near name you may have meant), \
            values of the wrong type (a birthday from a HumanName), conditions (`when`, `delete-when`) that \
            give no boolean (a warning), and missing required fields. Without DIR, checks the default \
            mappings built into caregate. A file with `extends: default` is checked merged with the default \
            it extends; what it breaks in the default's fields is reported at its own line. The care-team \
            report's rules (a file with `insights: 1`, such as the default insights.yaml) are checked too.

            --format json prints {"files", "errors", "warnings", "problems": [{"file", "line", "column", \
            "severity", "message"}]} for editors and CI; --format xml an OperationOutcome. \
            Mappings/mapping.schema.json is the JSON Schema of the format, for the YAML language server.

            Exit status: 0 when no file has errors (warnings allowed), 1 when any has, 2 on bad usage.
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
