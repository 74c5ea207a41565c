import ArgumentParser
import CommandSupport
import Benchmarks
import FHIR
import Foundation

/// `caregate-bench validate`: validation throughput beside the parse alone and beside fhirkit-rs on
/// the same files, and the cost of one transaction Bundle per 1,000 entries as it grows.
struct BenchValidate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Benchmark validation: MB/s beside the parse and fhirkit-rs, and Bundle cost as it grows.",
        discussion: """
            Reads the folder's .json files once, then in passes (best of them): parses them alone, \
            validates the parsed resources on one thread, parses and validates them on one thread (what \
            fhirkit-rs is compared with), and runs what `caregate validate` runs (read, parse, validate on \
            every core). Beside them, fhirkit-rs (a Rust R4 validator from PyPI, pinned in \
            Scripts/bench-requirements.txt and installed into .venv on first use) validates the same \
            files from their bytes. Then it validates generated transaction Bundles of each --scale size (Patients \
            and Observations referring to them by urn:uuid) and prints seconds per 1,000 entries, which \
            must stay flat as the Bundle grows. Use a release build.
            """
    )

    @Option(help: "The folder of FHIR JSON files to validate.")
    var folder = "../shared/corpus/synthea-r4"

    @Option(help: "Passes over the files (the best is reported).")
    var passes = 3

    @Option(help: "Bundle sizes (entries, comma-separated) for the scale figures.")
    var scale = "1000,10000,100000"

    @Flag(help: "Skip fhirkit-rs (no Python environment needed).")
    var noReference = false

    @Flag(help: "Only parse and validate the files on one thread, --passes times, and print nothing else: for a profiler (valgrind --tool=callgrind) on the path fhirkit-rs is compared with.")
    var profileOneThread = false

    func validate() throws {
        guard (1...50).contains(passes) else { throw ValidationError("--passes must be between 1 and 50") }
        guard !sizes.isEmpty else { throw ValidationError("--scale is a comma-separated list of entry counts, such as 1000,10000") }
        try CommandInputs.requireInputs([folder])
    }

    private var sizes: [Int] { scale.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 > 0 } }

    func run() throws {
        Bench.warnIfDebugBuild("validate")
        let paths = FHIRInput.sources(for: [folder]).compactMap { source -> String? in
            if case .file(let path) = source, path.hasSuffix(".json") { return path }
            return nil
        }
        guard !paths.isEmpty else { throw CommandFailure("\(folder): no .json files") }
        let documents = try paths.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        let megabytes = Double(documents.reduce(0) { $0 + $1.count }) / 1e6
        print("\(folder): \(paths.count) files, \(format(megabytes)) MB; best of \(passes) pass(es)")
        if profileOneThread {
            let validator = StructureValidator()
            var errors = 0
            for _ in 0..<passes {
                for document in documents { errors += validator.validate(try FHIRJSON.read(document)).errors.count }
            }
            print("  parsed and validated \(passes) time(s) on one thread: \(errors) error(s)")
            return
        }

        let parse = try best { for document in documents { _ = try FHIRJSON.read(document) } }
        let parsed = try documents.map { try FHIRJSON.read($0) }
        var errors = 0
        let validateOnly = try best {
            errors = 0
            let validator = StructureValidator()
            for resource in parsed { errors += validator.validate(resource).errors.count }
        }
        // What fhirkit.validate(bytes) does: parse and validate, one document after the other.
        let parseAndValidate = try best {
            let validator = StructureValidator()
            for document in documents { _ = validator.validate(try FHIRJSON.read(document)) }
        }
        let whole = try best {
            try DocumentValidator().validate(paths.map(FHIRInput.Source.file)) { _ in }
        }
        print("  parse only (1 thread):                 \(rate(megabytes, parse))")
        print("  validate parsed resources (1 thread):  \(rate(megabytes, validateOnly))  (\(errors) error(s))")
        print("  parse and validate (1 thread):         \(rate(megabytes, parseAndValidate))")
        print("  caregate validate (read, parse, validate, \(OrderedParallelMap.defaultWorkers) core(s)): \(rate(megabytes, whole))")
        if !noReference {
            if let (seconds, referenceMB) = try fhirkit(paths) {
                print("  fhirkit-rs 0.1.0 (1 thread, parse and validate): \(rate(referenceMB, seconds))")
                print("  -> on one thread, parsing included, caregate runs at \(format(seconds / parseAndValidate))x fhirkit-rs's rate; "
                    + "\(format(seconds / whole))x with every core")
            }
        }

        print("transaction Bundle of Patients and Observations (1 thread, validation of the parsed Bundle):")
        for size in sizes {
            let bundle = try FHIRJSON.read(ValidationBenchmark.transactionBundle(entries: size))
            let (seconds, bundleErrors) = ValidationBenchmark.validateOnce(bundle)
            print("  \(size) entries: \(String(format: "%.3f", seconds)) s, \(String(format: "%.4f", seconds / Double(size) * 1000)) s per 1,000 entries"
                + (bundleErrors > 0 ? " (\(bundleErrors) error(s)!)" : ""))
        }
    }

    /// The best time of `passes` runs of `body`.
    private func best(_ body: () throws -> Void) throws -> Double {
        var best = Double.infinity
        for _ in 0..<passes {
            let started = DispatchTime.now()
            try body()
            best = min(best, Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9)
        }
        return best
    }

    /// fhirkit-rs's best time and the megabytes it read, through Scripts/bench-fhirkit.py in .venv
    /// (installed there from Scripts/bench-requirements.txt when missing); nil, with a notice, when it
    /// cannot be had.
    private func fhirkit(_ paths: [String]) throws -> (Double, Double)? {
        let python = ".venv/bin/python"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            print("  fhirkit-rs: skipped, no .venv (run bash Scripts/setup-test-tools.sh)")
            return nil
        }
        if try runProcess(python, ["-c", "import fhirkit"]).status != 0 {
            printError("installing fhirkit-rs into .venv (Scripts/bench-requirements.txt)")
            let install = try runProcess(".venv/bin/pip", ["install", "-q", "-r", "Scripts/bench-requirements.txt"])
            guard install.status == 0 else {
                print("  fhirkit-rs: skipped, it could not be installed: \(install.output.suffix(300))")
                return nil
            }
        }
        let run = try runProcess(python, ["Scripts/bench-fhirkit.py", String(passes)] + paths)
        let fields = run.output.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
        guard run.status == 0, fields.count == 2 else {
            print("  fhirkit-rs: failed: \(run.output.suffix(300))")
            return nil
        }
        return (fields[0], fields[1])
    }

    private func runProcess(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    private func rate(_ megabytes: Double, _ seconds: Double) -> String {
        "\(format(megabytes / seconds)) MB/s (\(String(format: "%.3f", seconds)) s)"
    }

    private func format(_ value: Double) -> String { String(format: "%.1f", value) }
}
