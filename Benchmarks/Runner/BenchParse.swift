import ArgumentParser
import CommandSupport
import Benchmarks
import Foundation

/// `caregate-bench parse`: JSON and XML parse/serialize throughput beside Foundation, on Synthea Bundles.
struct BenchParse: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parse",
        abstract: "Benchmark FHIR JSON and XML parsing and serialization against Foundation.",
        discussion: """
            Reads every .json Bundle of the corpus folder, converts each to XML once, then measures in \
            several passes: JSON parse into the element model and serialize, beside JSONSerialization on \
            the same bytes; XML parse and serialize, beside XMLParser building nested dictionaries and \
            XMLDocument. Prints MB/s and resources/s (best and median of the passes) and the ratios. \
            Build with -c release for meaningful figures.
            """
    )

    @Option(help: "The folder of FHIR JSON Bundles to read.")
    var corpus = "../shared/corpus/synthea-r4"

    @Option(help: "How many passes to make over the corpus (best and median are reported).")
    var passes = 5

    enum Only: String, ExpressibleByArgument, CaseIterable { case json, xml }

    @Option(help: "Measure only one format: json or xml (default: both).")
    var only: Only?

    func validate() throws {
        guard passes >= 1 && passes <= 100 else { throw ValidationError("--passes must be between 1 and 100") }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: corpus, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("corpus folder \(corpus) does not exist")
        }
    }

    func run() throws {
        Bench.warnIfDebugBuild("parse")
        let files = try FileManager.default.contentsOfDirectory(atPath: corpus)
            .filter { $0.hasSuffix(".json") }.sorted()
        guard !files.isEmpty else { throw CommandFailure("\(corpus): no .json files") }
        let documents = try files.map { try Data(contentsOf: URL(fileURLWithPath: corpus).appendingPathComponent($0)) }
        var benchmark: ParseBenchmark
        do {
            benchmark = try ParseBenchmark(jsonDocuments: documents)
        } catch {
            throw CommandFailure("\(corpus): \(error)")
        }
        let jsonMB = Double(documents.reduce(0) { $0 + $1.count }) / 1_000_000
        let xmlMB = Double(benchmark.xmlDocuments.reduce(0) { $0 + $1.count }) / 1_000_000
        print("corpus \(corpus): \(files.count) files, \(benchmark.resourceCount) resources, "
            + "JSON \(format(jsonMB)) MB, as XML \(format(xmlMB)) MB; \(passes) passes, best / median")
        let pairs = try benchmark.run(passes: passes, json: only != .xml, xml: only != .json) { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
        for (ours, baseline) in pairs where !ours.seconds.isEmpty {
            print(line(ours))
            print(line(baseline))
            print("  -> caregate is \(format(baseline.best / ours.best))x (best) / \(format(baseline.median / ours.median))x (median) the Foundation figure")
        }
        let jsonParse = pairs[0], xmlParse = pairs[2]
        var targets: [String] = []
        if only != .xml {
            let ratio = jsonParse.1.best / jsonParse.0.best
            let speed = jsonParse.0.megabytesPerSecond(jsonParse.0.best)
            targets.append("JSON parse \(format(ratio))x JSONSerialization (>= 3x: \(ratio >= 3 ? "met" : "NOT met")), "
                + "\(format(speed)) MB/s (>= 100: \(speed >= 100 ? "met" : "NOT met"))")
        }
        if only != .json {
            let ratio = xmlParse.1.best / xmlParse.0.best
            targets.append("XML parse \(format(ratio))x XMLParser (>= 2x: \(ratio >= 2 ? "met" : "NOT met"))")
        }
        print("targets: " + targets.joined(separator: "; "))
        print("checksum \(benchmark.checksum)")
    }

    private func line(_ figure: ParseBenchmark.Figure) -> String {
        let label = figure.label.padding(toLength: 44, withPad: " ", startingAt: 0)
        return "\(label) \(format(figure.megabytesPerSecond(figure.best))) / \(format(figure.megabytesPerSecond(figure.median))) MB/s   "
            + "\(Int(figure.resourcesPerSecond(figure.best))) / \(Int(figure.resourcesPerSecond(figure.median))) resources/s"
    }

    private func format(_ value: Double) -> String { String(format: value < 10 ? "%.2f" : "%.1f", value) }
}
