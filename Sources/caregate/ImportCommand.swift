import ArgumentParser
import CommandSupport
import FHIR
import Foundation
import Mapping
import Pipeline
import Store

/// `caregate import`: FHIR input through the mappings into the store.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import FHIR resources into the store: care plans, tasks, outcomes and contacts.",
        discussion: """
            Reads resources, Bundles, NDJSON and folders (JSON or XML) and maps them with the default mappings, \
            or yours layered over them (--mappings). Idempotent: the same input again changes nothing; a \
            resource that fails is a dead letter and the rest imports; the report counts each type's outcome. \
            Exit status: 0 when every resource imported or was skipped, 1 when any failed, 2 on bad usage.

            Examples:
              caregate import Fixtures/provider --time-zone America/Chicago
              caregate import export.ndjson --store ehr.sqlite --mappings mine/

            More: Docs/converting.md (Import), Mappings/README.md.
            """
    )

    @Argument(help: ArgumentHelp("Files or folders to import (JSON, NDJSON, XML); - reads standard input.", valueName: "path"))
    var paths: [String]

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var mappings: MappingsOption

    @OptionGroup var timeZone: TimeZoneOption

    @Option(name: .long, help: ArgumentHelp("The name of the provider system (prefixes entity ids unless 'default').", valueName: "name"))
    var sourceSystem = MappingOptions.defaultSourceSystem

    @Flag(name: .long, help: "Validate each resource first; one with structural errors fails instead of being mapped.")
    var strict = false

    @Flag(name: .long, help: "Map and report, but write nothing to the store.")
    var dryRun = false

    @Option(name: .long, help: "Report: text or json.")
    var format: ReportFormat = .text

    @Flag(name: .long, help: "Also list, per type, the elements present in the input that no mapping reads, with counts.")
    var coverage = false

    @Flag(name: .long, help: "List the information notes too (assumed schedules, skipped resources).")
    var verbose = false

    enum ReportFormat: String, ExpressibleByArgument, CaseIterable { case text, json }

    func validate() throws {
        guard !paths.isEmpty else { throw ValidationError("give at least one file or folder to import") }
        if paths.filter({ $0 == "-" }).count > 1 { throw ValidationError("standard input (-) can be read only once") }
        try CommandInputs.requireInputs(paths)
        guard !sourceSystem.isEmpty, sourceSystem.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_" }) else {
            throw ValidationError("--source-system takes letters, digits, '-', '.' and '_' only")
        }
    }

    func run() throws {
        var options = Gateway.Options(sourceSystem: sourceSystem, timeZone: timeZone.zone)
        options.strict = strict
        let store = dryRun ? try storeOptions.openForDryRun() : try storeOptions.open(creating: true)
        let gateway = Gateway(store: store, mappings: try mappings.load(), options: options)
        let importer = try gateway.importer(dryRun: dryRun, coverage: coverage ? CoverageCollector() : nil)
        if isatty(STDERR_FILENO) != 0 {
            importer.progress = { line in FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8)) }
        }
        let report = try importer.run(FHIRInput.sources(for: paths))
        if importer.progress != nil { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        if !dryRun, let unread = report.coverage { Self.keepCoverage(unread, of: report, in: store) }
        switch format {
        case .text:
            print(report.text(verbose: verbose))
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            FileHandle.standardOutput.write(try encoder.encode(report))
            FileHandle.standardOutput.write(Data("\n".utf8))
        }
        if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
    }

    /// Keeps the coverage of this import in the store (the operator page shows the last one); one that
    /// cannot be kept is a warning, never a failure of the import.
    private static func keepCoverage(_ unread: [String: [String: Int]], of report: ImportReport, in store: any Store) {
        let record = ImportCoverageRecord(resourcesRead: report.resourcesRead, counts: report.totals.byOutcome, seconds: report.seconds, coverage: unread)
        do {
            try store.importCoverage?.recordImportCoverage(record)
        } catch {
            FileHandle.standardError.write(Data("warning: the import's coverage was not kept in the store: \(error)\n".utf8))
        }
    }
}
