import ArgumentParser
import CommandSupport
import FHIR
import Foundation
import Surveys

/// `caregate validate`: structural validation of FHIR R4 files against the R4 definitions, reported as
/// text or as an OperationOutcome. A thin shell over ``DocumentValidator``.
struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Validate FHIR R4 resources against the R4 structure definitions.",
        discussion: """
            Checks structure against the R4 StructureDefinitions and the R4 invariants, Bundle, extension, UCUM \
            and narrative rules, without a terminology server. Issues are reported at FHIRPath locations, as text \
            or an OperationOutcome; unknown elements are errors unless --lenient. A QuestionnaireResponse is also \
            checked against the Questionnaire it names when that is in the input or in --questionnaires DIR.

            Exit status: 0 when no file has errors, 1 when any has (or cannot be read), 2 for usage errors.

            Examples:
              caregate validate Fixtures/provider
              caregate validate bundle.json --format json

            More: Docs/converting.md (Validate), Docs/surveys.md (Validation).
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

    @Option(help: ArgumentHelp("A folder of Questionnaires (and ValueSets) that QuestionnaireResponses are checked against.", valueName: "dir"))
    var questionnaires: String?

    @Option(help: ArgumentHelp("The Questionnaire (url, url|version or Questionnaire/id) for responses that name none.", valueName: "canonical"))
    var questionnaire: String?

    func validate() throws {
        if files.filter({ $0 == "-" }).count > 1 {
            throw ValidationError("standard input (-) can be read only once")
        }
        try CommandInputs.requireInputs(files)
        if let questionnaires {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: questionnaires, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("--questionnaires \(questionnaires) is not a folder")
            }
        }
    }

    func run() throws {
        // Files are validated side by side, and the resources of a large file in runs, on every core;
        // the report keeps the order of the input.
        var results: [DocumentValidator.Result] = []
        let sources = try surveySources()
        try DocumentValidator(strict: strictness == .strict).validate(sources) { results += $0 }
        results = addResponseChecks(to: results, sources: sources)
        FileHandle.standardOutput.write(format.render(results))
        if results.contains(where: { $0.report.hasErrors }) {
            throw ExitCode(1)
        }
    }
}

extension Validate {
    /// The input, with standard input read into memory when responses are to be checked against
    /// Questionnaires (it can be read only once, and the survey pass reads the input again).
    private func surveySources() throws -> [FHIRInput.Source] {
        let sources = FHIRInput.sources(for: files)
        guard questionnaires != nil || questionnaire != nil else { return sources }
        return try sources.map { source in
            guard source == .standardInput else { return source }
            return .memory(name: source.description, bytes: try FHIRInput.data(of: source))
        }
    }

    /// Adds to each resource's report the issues of its QuestionnaireResponses against their
    /// Questionnaires (Surveys' QuestionnaireResponseValidator). The seam for `--store` is the
    /// catalog's lookup.
    private func addResponseChecks(to results: [DocumentValidator.Result], sources: [FHIRInput.Source]) -> [DocumentValidator.Result] {
        let folderSources = questionnaires.map { FHIRInput.sources(for: [$0]) } ?? []
        let found = ResponseDocumentCheck.questionnaires(in: sources + folderSources)
        let asked = questionnaires != nil || questionnaire != nil
        guard !found.isEmpty || asked else { return results }
        let validator = QuestionnaireResponseValidator(catalog: QuestionnaireCatalog(found))
        var extra = ResponseDocumentCheck.check(sources, validator: validator, fallback: questionnaire, reportsMissing: asked)
        guard !extra.isEmpty else { return results }
        return results.map { result in
            guard let issues = extra.removeValue(forKey: result.source) else { return result }
            return DocumentValidator.Result(source: result.source, report: ValidationReport(issues: result.report.issues + issues))
        }
    }
}

extension ValidationReportFormat: ExpressibleByArgument {}
