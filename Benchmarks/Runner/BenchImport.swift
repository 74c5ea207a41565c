import ArgumentParser
import CommandSupport
import Benchmarks
import Foundation

/// `caregate-bench import`: end-to-end import throughput beside the parse-only rate.
struct BenchImport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Benchmark the import (parse, map, store) against parsing alone (use a release build).",
        discussion: """
            Imports every FHIR file of the folder into a fresh temporary store and prints resources/s \
            beside the parse-only rate measured in the same run, and the floor: the time SQLite alone \
            takes to copy the rows the import stored into a fresh store (no import storing the same \
            rows can take less); then imports the same resources as one \
            transaction Bundle; then copies of them under fresh ids (every UUID shifted per copy, \
            identifiers suffixed) as one Bundle of --large-bundle entries and as fifty Bundles of the \
            same entries, to show the cost per resource does not grow with Bundle size. Prints the \
            process's peak memory after each part.
            """
    )

    @Option(help: "The folder of FHIR input to import.")
    var folder = "../shared/corpus/synthea-r4"

    @Option(help: "Entries of the large Bundle of the bundle-size figures (0 leaves them out).")
    var largeBundle = 50_000

    func validate() throws {
        try CommandInputs.requireFolder(folder)
        guard largeBundle >= 0 else { throw ValidationError("--large-bundle must be 0 or more (got \(largeBundle))") }
    }

    func run() throws {
        Bench.warnIfDebugBuild("import")
        _ = try ImportBenchmark(folder: folder, largeBundleEntries: largeBundle) { print($0) }.run()
    }
}
