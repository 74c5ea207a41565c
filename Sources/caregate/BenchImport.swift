import ArgumentParser
import Benchmarks
import Foundation

/// `caregate bench import`: end-to-end import throughput beside the parse-only rate.
struct BenchImport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Benchmark the import (parse, map, store) against parsing alone (use a release build).",
        discussion: """
            Imports every FHIR file of the folder into a fresh temporary store and prints resources/s \
            beside the parse-only rate measured in the same run; then imports the same resources as one \
            transaction Bundle, to show the cost per resource does not grow with Bundle size. Ends with \
            the process's peak memory.
            """
    )

    @Option(help: "The folder of FHIR input to import.")
    var folder = "../shared/corpus/synthea-r4"

    func validate() throws {
        try CommandInputs.requireFolder(folder)
    }

    func run() throws {
        #if DEBUG
        print("warning: this is a debug build; measure with `swift run -c release caregate bench import`")
        #endif
        _ = try ImportBenchmark(folder: folder) { print($0) }.run()
    }
}
