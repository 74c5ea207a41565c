import FHIR
import Foundation
import Mapping
import Pipeline
import Store

/// The measurements behind `caregate bench import`: end-to-end import (parse, map, store) of a folder
/// into a fresh store, beside the parse-only rate of the same input in the same run; then the same
/// resources as one large Bundle, to show that cost per resource does not grow with Bundle size
/// (references resolve through indexes, never a scan).
public struct ImportBenchmark {
    public struct Figure: Sendable {
        public let label: String
        public let resources: Int
        public let seconds: Double
        public var resourcesPerSecond: Double { Double(resources) / seconds }
    }

    public let folder: String
    public let report: (String) -> Void

    public init(folder: String, report: @escaping (String) -> Void) {
        self.folder = folder
        self.report = report
    }

    public func run() throws -> [Figure] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-bench-import-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let sources = FHIRInput.sources(for: [folder])
        _ = FHIRMetadata.r4.resourceTypes.count  // decode the metadata outside every figure

        // Baseline: parse only.
        var parsed = 0
        var start = Date()
        for source in sources {
            try FHIRInput.forEachEntry(of: source) { entry, _ in
                guard case .success(let resource) = entry.result else { return }
                parsed += resource.resourceType == "Bundle" ? resource.children(named: "entry").count : 1
            }
        }
        let parse = Figure(label: "parse only", resources: parsed, seconds: Date().timeIntervalSince(start))
        report(line(parse))

        // End to end into a fresh store.
        start = Date()
        let imported = try importInto(scratch.appendingPathComponent("files.sqlite").path, sources)
        let files = Figure(label: "import, \(sources.count) files", resources: imported, seconds: Date().timeIntervalSince(start))
        report(line(files) + String(format: "  (%.1fx the parse time)", files.seconds / parse.seconds))

        // The same resources as one transaction Bundle.
        var entries: [Element] = []
        for source in sources {
            try FHIRInput.forEachEntry(of: source) { entry, _ in
                guard case .success(let resource) = entry.result else { return }
                if resource.resourceType == "Bundle" {
                    entries += resource.children(named: "entry")
                } else {
                    entries.append(Element(name: "entry", children: [Element(name: "resource", resourceType: resource.resourceType ?? "", children: resource.children)]))
                }
            }
        }
        let bundle = Element.resource("Bundle", children: [Element(name: "type", value: "transaction")] + entries)
        let bundlePath = scratch.appendingPathComponent("one-bundle.json").path
        try FHIRJSON.write(bundle).write(to: URL(fileURLWithPath: bundlePath))
        entries = []
        start = Date()
        let fromBundle = try importInto(scratch.appendingPathComponent("bundle.sqlite").path, [.file(bundlePath)])
        let large = Figure(label: "import, one \(fromBundle)-entry Bundle", resources: fromBundle, seconds: Date().timeIntervalSince(start))
        report(line(large) + String(format: "  (%.2fx the per-resource time of the files)", (large.seconds / Double(large.resources)) / (files.seconds / Double(files.resources))))
        report("peak memory: \(Self.peakMemoryMB()) MB")
        return [parse, files, large]
    }

    private func importInto(_ path: String, _ sources: [FHIRInput.Source]) throws -> Int {
        let store = try SQLiteStore(path: path)
        let options = ImportOptions(mapping: MappingOptions(timeZone: TimeZone(identifier: "UTC") ?? .current))
        let importer = Importer(store: store, engine: MappingEngine(mappings: try MappingSet.defaults(), options: options.mapping), options: options)
        let result = try importer.run(sources)
        if !result.failures.isEmpty { report("note: \(result.failures.count) resource(s) failed") }
        return result.resourcesRead
    }

    private func line(_ figure: Figure) -> String {
        String(format: "%@: %d resources in %.2f s, %.0f resources/s", figure.label, figure.resources, figure.seconds, figure.resourcesPerSecond)
    }

    /// The process's peak resident memory.
    static func peakMemoryMB() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Int(usage.ru_maxrss / 1024)
    }
}
