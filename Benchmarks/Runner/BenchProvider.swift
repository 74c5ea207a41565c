import ArgumentParser
import Benchmarks
import CommandSupport

/// `caregate-bench provider`: writes a larger provider folder for load tests (not a measurement).
struct BenchProvider: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provider",
        abstract: "Write copies of a folder's FHIR JSON files under fresh ids, as a larger provider for load tests.",
        discussion: """
            Each file is written --copies times into --out as <copy>-<name>, every UUID shifted per copy \
            and identifiers suffixed (copy 0 is the file as it is), so that every copy is new to a store. \
            Scripts/bench-app-api.sh syncs such a folder beside the app server.
            """
    )

    @Option(help: "The folder of FHIR JSON files (Synthea-style: UUID ids).")
    var folder = "../shared/corpus/synthea-r4"

    @Option(help: "How many copies of each file (1-1000).")
    var copies = 10

    @Option(help: "The folder to write (made when missing).")
    var out: String

    func validate() throws {
        try CommandInputs.requireFolder(folder)
        guard (1...1_000).contains(copies) else { throw ValidationError("--copies must be 1...1000 (got \(copies))") }
    }

    func run() throws {
        let written = try ProviderCopies(folder: folder, copies: copies).write(to: out)
        print("wrote \(written) files to \(out)")
    }
}
