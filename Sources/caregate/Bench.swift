import ArgumentParser

/// `caregate bench`: throughput and latency benchmarks. Each prints its figures beside a baseline
/// measured in the same run; build with `-c release` for meaningful numbers.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a benchmark (use a release build: swift run -c release caregate bench ...).",
        subcommands: [BenchParse.self, BenchStore.self, BenchFHIRPath.self, BenchImport.self, BenchImportNDJSON.self, BenchExport.self, BenchValidate.self]
    )
}

extension Bench {
    /// Says so when this is a debug build, whose figures mean little; `name` is the subcommand's.
    static func warnIfDebugBuild(_ name: String) {
        #if DEBUG
        print("warning: this is a debug build; measure with `swift run -c release caregate bench \(name)`")
        #endif
    }
}
