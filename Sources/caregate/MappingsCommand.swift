import ArgumentParser
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
            Reports every problem with its file:line:column: YAML syntax, unknown or missing keys, FHIRPath \
            that does not parse or names no R4 element from where it starts, unknown entities, target \
            fields and transforms, values of the wrong type (a birthday from a HumanName), and missing \
            required fields. Without DIR, checks the default mappings built into caregate. A file with \
            `extends: default` is checked merged with the default it extends.

            Exit status: 0 when no file has errors (warnings allowed), 1 when any has, 2 on bad usage.
            """
    )

    @Argument(help: ArgumentHelp("The folder of mapping files (default: the built-in defaults).", valueName: "dir"))
    var folder: String?

    @Option(help: "Output: text (one line per problem), json or xml (an OperationOutcome).")
    var format: ValidationReportFormat = .text

    func validate() throws {
        if let folder { try CommandInputs.requireFolder(folder) }
    }

    func run() throws {
        let problems: [MappingProblem]
        let files: Int
        if let folder {
            (_, problems, files) = try MappingSet.layered(folder: folder)
        } else {
            problems = MappingSet.checkDefaults()
            files = MappingSet.defaultFileNames.count
        }
        switch format {
        case .text:
            var lines = problems.map(\.description)
            let errors = problems.filter { $0.severity == .error }.count
            lines.append("\(files) mapping file(s) checked: \(errors) error(s), \(problems.count - errors) warning(s)")
            print(lines.joined(separator: "\n"))
        case .json, .xml:
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
