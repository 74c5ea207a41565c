import ArgumentParser
import CommandSupport
import Benchmarks
import Foundation

/// `caregate-bench import-ndjson`: the peak memory of importing one large NDJSON file.
struct BenchImportNDJSON: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-ndjson",
        abstract: "Benchmark the memory of importing one large NDJSON file (use a release build).",
        discussion: """
            Makes one NDJSON file of --megabytes from copies of the FHIR resources of --source, each copy \
            under fresh ids (every UUID shifted per copy, identifiers suffixed), then imports it with \
            `caregate import` in a process of its own into a fresh temporary store, and prints its \
            duration, resources/s and peak resident memory. The file and the store are removed afterwards.
            """
    )

    @Option(help: "The folder of FHIR resources to copy (a Bulk Data export).")
    var source = "../shared/corpus/bulk-ndjson"

    @Option(help: "The size of the NDJSON file to make, in megabytes.")
    var megabytes = 1024

    func validate() throws {
        try CommandInputs.requireFolder(source)
        guard megabytes > 0 else { throw ValidationError("--megabytes must be 1 or more (got \(megabytes))") }
        guard megabytes <= 65_536 else { throw ValidationError("--megabytes must be at most 65536 (got \(megabytes))") }
    }

    func run() throws {
        Bench.warnIfDebugBuild("import-ndjson")
        // The import runs in the `caregate` built beside this executable, as a user would run it.
        let this = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let executable = URL(fileURLWithPath: this).deletingLastPathComponent().appendingPathComponent("caregate").path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw CommandFailure("no caregate beside caregate-bench (\(executable)): build it first with `swift build -c release --product caregate`")
        }
        let result = try NDJSONImportBenchmark(source: source, bytes: megabytes << 20, executable: executable) { print($0) }.run()
        if result.exitStatus > 1 { throw CommandFailure("the import exited with status \(result.exitStatus)") }
    }
}
