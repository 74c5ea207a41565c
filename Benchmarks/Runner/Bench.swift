import ArgumentParser
import CommandSupport

/// `caregate-bench`: CareGate's throughput and latency benchmarks, an executable of their own so that
/// the harness stays out of the production `caregate` binary. Each prints its figures beside a baseline
/// measured in the same run; build with `-c release` for meaningful numbers.
@main
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "caregate-bench",
        abstract: "Run a CareGate benchmark (use a release build: swift run -c release caregate-bench ...).",
        discussion: """
            Each benchmark prints its figures beside a baseline measured in the same run. Benchmarks are \
            measurements, never tests: compare runs made in one sitting on one machine.
            """,
        subcommands: [BenchParse.self, BenchStore.self, BenchFHIRPath.self, BenchImport.self, BenchImportNDJSON.self, BenchExport.self, BenchValidate.self, BenchProvider.self, BenchPostgresOutbox.self]
    )

    static func main() { CommandLineRunner.run(Bench.self) }
}

extension Bench {
    /// Says so when this is a debug build, whose figures mean little; `name` is the subcommand's.
    static func warnIfDebugBuild(_ name: String) {
        #if DEBUG
        print("warning: this is a debug build; measure with `swift run -c release caregate-bench \(name)`")
        #endif
    }
}
