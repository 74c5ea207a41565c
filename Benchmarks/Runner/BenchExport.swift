import ArgumentParser
import CommandSupport
import Benchmarks
import Foundation

/// `caregate-bench export`: outcomes exported per second, beside the import rate of the same run.
struct BenchExport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Benchmark the export of outcomes as Observations against the import (use a release build).",
        discussion: """
            Imports the folder into a fresh temporary store (the import rate is the baseline), records \
            --outcomes outcomes across its tasks as an app would (each queued for export), then exports \
            them all, with their Provenances, validated, into one transaction Bundle file, and prints \
            outcomes/s beside the import rate; then exports again, with nothing due.
            """
    )

    @Option(help: "The folder of FHIR input to import first.")
    var folder = "../shared/corpus/synthea-r4"

    @Option(help: "Outcomes to record and export.")
    var outcomes = 100_000

    func validate() throws {
        try CommandInputs.requireFolder(folder)
        guard outcomes > 0 else { throw ValidationError("--outcomes must be more than 0 (got \(outcomes))") }
    }

    func run() throws {
        Bench.warnIfDebugBuild("export")
        _ = try ExportBenchmark(folder: folder, outcomes: outcomes) { print($0) }.run()
    }
}
