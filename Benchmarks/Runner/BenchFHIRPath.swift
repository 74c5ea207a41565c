import ArgumentParser
import CommandSupport
import Benchmarks
import FHIR
import Foundation

/// `caregate-bench fhirpath`: evaluates realistic mapping expressions over every Observation of the
/// Synthea bundles, compiled once and reused, beside a baseline that makes the same selections by hand
/// in Swift over the element tree. Parse time and evaluation time are reported apart.
struct BenchFHIRPath: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fhirpath",
        abstract: "Benchmark FHIRPath evaluation over the Synthea Observations (use a release build).",
        discussion: """
            Reads every JSON bundle in the folder (reading is timed separately and not part of the \
            figures), then for each expression: parses it --parse-iterations times, and evaluates the \
            compiled expression on every Observation --rounds times. The baseline does the same \
            selections as hand-written Swift over the same Element trees; both sides must select the \
            same number of items, or the command fails.
            """
    )

    @Option(name: .long, help: "The folder of Synthea R4 bundles (JSON).")
    var folder = "../shared/corpus/synthea-r4"

    @Option(name: .long, help: "How many times the Observations are evaluated per expression.")
    var rounds = 5

    @Option(name: .long, help: "How many times each expression is parsed for the parse figure.")
    var parseIterations = 2000

    func validate() throws {
        try CommandInputs.requireFolder(folder)
        guard rounds > 0, parseIterations > 0 else { throw ValidationError("--rounds and --parse-iterations must be positive") }
    }

    func run() throws {
        Bench.warnIfDebugBuild("fhirpath")
        let readStart = DispatchTime.now()
        var observations: [Element] = []
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }.sorted()
        for file in files {
            let bundle = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: folder).appendingPathComponent(file)))
            for entry in bundle.children(named: "entry") {
                if let resource = entry.child(named: "resource"), resource.resourceType == "Observation" { observations.append(resource) }
            }
        }
        let readSeconds = seconds(since: readStart)
        print("read \(files.count) bundles, \(observations.count) Observations in \(format(readSeconds * 1000)) ms (not counted below)")
        guard !observations.isEmpty else { throw ValidationError("no Observations found in \(folder)") }

        // Decode the metadata now, so that its one-time cost lands in no figure.
        _ = FHIRMetadata.r4.resourceTypes.count
        // Parse: each expression compiled parseIterations times.
        let parseStart = DispatchTime.now()
        var compiled: [FHIRPathExpression] = []
        for workload in FHIRPathBenchmark.workloads {
            for _ in 0..<(parseIterations - 1) { _ = try FHIRPathExpression(workload.expression) }
            compiled.append(try FHIRPathExpression(workload.expression))
        }
        let parseSeconds = seconds(since: parseStart)
        let parses = Double(parseIterations * FHIRPathBenchmark.workloads.count)
        print("parse: \(format(parseSeconds / parses * 1_000_000)) µs per expression (\(format(parses / parseSeconds)) parses/s)")
        print("")
        print("expression".padding(toLength: 64, withPad: " ", startingAt: 0) + "  fhirpath µs/res   baseline µs/res   ratio  selected")

        let environment = FHIRPathEnvironment()
        var totalFHIRPath = 0.0, totalBaseline = 0.0
        for (index, workload) in FHIRPathBenchmark.workloads.enumerated() {
            var selectedFHIRPath = 0, selectedBaseline = 0
            // Bound once, as the baseline's closure is: `compiled[index]` in the loop copied the expression
            // (a retain of each of its fields) for every evaluation, which no caller does.
            let expression = compiled[index]
            let start = DispatchTime.now()
            for _ in 0..<rounds {
                for observation in observations {
                    selectedFHIRPath += try expression.evaluate(on: observation, environment: environment).count
                }
            }
            let fhirPathSeconds = seconds(since: start)
            let baselineStart = DispatchTime.now()
            for _ in 0..<rounds {
                for observation in observations { selectedBaseline += workload.baseline(observation).count }
            }
            let baselineSeconds = seconds(since: baselineStart)
            guard selectedFHIRPath == selectedBaseline else {
                throw ValidationError("\(workload.expression): FHIRPath selected \(selectedFHIRPath / rounds) items, the baseline \(selectedBaseline / rounds)")
            }
            totalFHIRPath += fhirPathSeconds
            totalBaseline += baselineSeconds
            let evaluations = Double(rounds * observations.count)
            let name = workload.expression.count > 62 ? String(workload.expression.prefix(59)) + "..." : workload.expression
            print(name.padding(toLength: 64, withPad: " ", startingAt: 0)
                  + "  " + format(fhirPathSeconds / evaluations * 1_000_000).leftPadded(14)
                  + "  " + format(baselineSeconds / evaluations * 1_000_000).leftPadded(16)
                  + "  " + format(fhirPathSeconds / max(baselineSeconds, 1e-9)).leftPadded(6) + "x"
                  + "  " + String(selectedFHIRPath / rounds).leftPadded(8))
        }
        let evaluations = Double(rounds * observations.count * FHIRPathBenchmark.workloads.count)
        let resourcePasses = Double(rounds * observations.count)
        print("")
        print("FHIRPath (compiled once): \(format(evaluations / totalFHIRPath)) expressions/s, "
              + "\(format(resourcePasses / totalFHIRPath)) resources/s with all \(FHIRPathBenchmark.workloads.count) expressions, "
              + "evaluation \(format(totalFHIRPath * 1000)) ms")
        print("baseline (hand-written Swift): \(format(evaluations / totalBaseline)) expressions/s, "
              + "\(format(resourcePasses / totalBaseline)) resources/s, \(format(totalBaseline * 1000)) ms")
        print("parse, once per expression: \(format(parseSeconds / parses * Double(FHIRPathBenchmark.workloads.count) * 1_000_000)) µs for all \(FHIRPathBenchmark.workloads.count); "
              + "re-parsing per resource would add \(format(parseSeconds / parses * evaluations * 1000)) ms to the evaluation above")
    }

    private func seconds(since start: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }

    private func format(_ value: Double) -> String {
        if value >= 100 { return String(Int(value.rounded())) }
        if value >= 10 { return String(format: "%.1f", value) }
        return String(format: "%.2f", value)
    }
}
