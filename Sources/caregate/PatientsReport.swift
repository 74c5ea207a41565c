import ArgumentParser
import CommandSupport
import CareModel
import FHIR
import FileSafety
import Foundation
import Insights
import Mapping
import Pipeline
import Store

extension ProgressStrategy: ExpressibleByArgument {}

/// `caregate patients report`: the care-team report of one patient over a period, as HTML, PDF or a
/// FHIR DocumentReference (formerly `caregate report`, which still works).
struct PatientsReport: MovedCommand {
    static let path = "patients report"

    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write a patient's care-team report (adherence, measurements, threshold messages, events) as HTML, PDF or FHIR.",
        discussion: """
            Adherence per day as CareKit computes it, CareKit's Insights chart, each measurement with its target \
            band, the threshold rules' messages and the events, over --from to --to (both included). Measurements \
            and rules come from insights.yaml (built in, or --rules). pdf prints with headless Chromium; fhir \
            writes a DocumentReference with the PDF and its Provenance.

            Examples:
              caregate patients report --patient Patient/pat-1 \\
                --from 2026-11-01 --to 2026-11-07 -o report.html
              caregate patients report --patient Patient/pat-1 \\
                --from 2026-11-01 --to 2026-11-30 --format pdf -o report.pdf

            More: Docs/app-api.md (The care-team report).
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable { case html, pdf, fhir, json }

    @OptionGroup var options: StoreOptions

    @OptionGroup var patient: PatientOption

    @Option(name: .long, help: ArgumentHelp("The first day of the period (YYYY-MM-DD).", valueName: "date"))
    var from: String

    @Option(name: .long, help: ArgumentHelp("The last day of the period, included (YYYY-MM-DD).", valueName: "date"))
    var to: String

    @OptionGroup var timeZone: TimeZoneOption

    @Option(name: .long, help: "Output: html, pdf, fhir (a Bundle with the DocumentReference and its Provenance) or json (the Insights series).")
    var format: Format = .html

    @Option(name: [.customShort("o"), .long], help: ArgumentHelp("The file to write (default: standard output).", valueName: "file"))
    var output: String?

    @Option(name: .long, help: ArgumentHelp("A rules file (insights.yaml format) instead of the built-in one.", valueName: "file"))
    var rules: String?

    @Option(name: .long, help: "How an event's progress counts, for the tasks the rules' `progress:` list does not name: outcome-exists (CareKit's default) or summing (outcome values over target values).")
    var progress: ProgressStrategy = .checkingOutcomeExists

    @Option(name: .long, help: ArgumentHelp("The longest period, in days.", valueName: "days"))
    var maxDays: Int = 366

    func validate() throws {
        guard (1...AdherenceCalculator.maximumDays).contains(maxDays) else {
            throw ValidationError("--max-days must be from 1 to \(AdherenceCalculator.maximumDays)")
        }
        let interval = try period()
        let days = Int((interval.duration / 86_400).rounded())
        guard days <= maxDays else {
            throw ValidationError("--from \(from) to --to \(to) spans \(days) days, more than --max-days \(maxDays)")
        }
        if let rules { try CommandInputs.requireInputs([rules]) }
    }

    func run() throws {
        let zone = timeZone.zone
        let interval = try period()
        let store = try options.openForReading()
        let report = CareTeamReport.make(try ReportInput.read(
            generator: "CareGate \(CareGate.configuration.version)",
            store: store, patientID: patient.id, interval: interval, timeZone: zone, rules: try loadRules(), strategy: progress))
        // Before the report is written anywhere.
        CommandAudit.record(
            "caregate patients report", patient: patient.id,
            detail: "\(format.rawValue) report from \(interval.start.formatted(.iso8601)) to \(interval.end.formatted(.iso8601))", in: store)
        let bytes: Data
        switch format {
        case .html:
            bytes = Data(ReportHTML.render(report).utf8)
        case .json:
            bytes = try Self.json(report.insights) + Data("\n".utf8)
        case .pdf:
            bytes = try Self.pdf(report)
        case .fhir:
            let bundle = ReportDocumentReference.bundle(report: report, pdf: try Self.pdf(report))
            bytes = FHIRJSON.write(bundle, pretty: true) + Data("\n".utf8)
            // The checks `caregate validate` runs, on the bytes written.
            let errors = DocumentValidator().validate(bytes, source: "report").flatMap(\.report.issues).filter(\.severity.isError)
            guard errors.isEmpty else {
                throw CommandFailure("the report's DocumentReference is not valid FHIR:\n" + errors.map(\.description).joined(separator: "\n"))
            }
        }
        if let output {
            do throws(PrivateFileError) {
                // 0600 whatever the umask: a patient's report.
                try PrivateFiles.write(bytes, to: output)
            } catch {
                throw CommandFailure("\(output): cannot be written: \(error.reason)")
            }
        } else {
            FileHandle.standardOutput.write(bytes)
        }
    }

    /// The Insights series as JSON; one that cannot be written fails the command (exit 1), never `{}`.
    static func json(_ series: InsightsSeries) throws -> Data {
        do {
            return try series.json()
        } catch let error as InsightsEncodingError {
            throw CommandFailure(error.description)
        }
    }

    static func pdf(_ report: CareTeamReport) throws -> Data {
        guard let printer = ChromiumPrinter.find() else { throw CommandFailure(ChromiumPrinter.PrintError.notInstalled.description) }
        do {
            return try printer.pdf(html: ReportHTML.render(report))
        } catch let error as ChromiumPrinter.PrintError {
            throw CommandFailure(error.description)
        }
    }

    private func loadRules() throws -> InsightsRules {
        do {
            if let rules { return try InsightsRules.load(path: rules) }
            return try ReportRulesCheck.defaultRules()
        } catch let problems as MappingProblems {
            throw CommandFailure(problems.description)
        }
    }

    /// From the start of --from to the start of the day after --to.
    private func period() throws -> DateInterval {
        let zone = timeZone.zone
        for (text, option) in [(from, "--from"), (to, "--to")] where text.utf8.count != 10 {
            throw ValidationError("\(option): '\(text.prefix(40))' is not a day (use YYYY-MM-DD)")
        }
        let start = try DateArgument.parse(from, option: "--from", timeZone: zone)
        let last = try DateArgument.parse(to, option: "--to", timeZone: zone)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        guard last >= start else { throw ValidationError("--to (\(to)) is before --from (\(from))") }
        guard last < Schedule.horizon, let end = calendar.date(byAdding: .day, value: 1, to: last) else {
            throw ValidationError("--to \(to) is past the last day a schedule has events")
        }
        return DateInterval(start: start, end: end)
    }
}

/// The report's rules as `caregate mappings validate` checks them: the rules files of a mapping folder
/// (each `.yaml` file with `insights:`), or the built-in insights.yaml.
enum ReportRulesCheck {
    static func defaultRules() throws -> InsightsRules {
        try InsightsRules.defaults()
    }

    /// Every problem of the rules files of `folder` (nil: the built-in one), and
    /// the number of rules files found in `folder`.
    static func check(folder: String?) -> (problems: [MappingProblem], files: Int) {
        var found: [MappingProblem] = []
        var files = 0
        if let folder {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
                .filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.sorted()
            for name in names {
                let path = (folder.hasSuffix("/") ? folder : folder + "/") + name
                guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8),
                    InsightsRulesParser.isRulesFile(text)
                else { continue }
                files += 1
                var parser = InsightsRulesParser(file: path)
                _ = parser.parse(text)
                found += parser.problems
            }
        } else {
            do { _ = try defaultRules() } catch let problems as MappingProblems { found += problems.problems } catch {}
        }
        return (found, files)
    }
}
