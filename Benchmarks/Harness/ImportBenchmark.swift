import FHIR
import Foundation
import Mapping
import Pipeline
import Store

/// The measurements behind `caregate-bench import`: end-to-end import (parse, map, store) of a folder
/// into a fresh store, beside the parse-only rate of the same input in the same run, and the time SQLite
/// alone takes to write the rows it stored (``StoreCopyFloor``, the floor of any import); then the same
/// resources as one large Bundle; then copies of them under fresh ids as one Bundle of 50,000 entries
/// and as fifty Bundles of the same entries, to show that cost per resource does not grow with Bundle
/// size (references resolve through indexes, never a scan).
public struct ImportBenchmark {
    public struct Figure: Sendable {
        public let label: String
        public let resources: Int
        public let seconds: Double
        public var resourcesPerSecond: Double { Double(resources) / seconds }
    }

    public let folder: String
    /// The size of the large Bundle of the bundle-size figures (made of copies of the input under fresh
    /// ids); 0 leaves them out.
    public let largeBundleEntries: Int
    public let report: (String) -> Void

    public init(folder: String, largeBundleEntries: Int = 50_000, report: @escaping (String) -> Void) {
        self.folder = folder
        self.largeBundleEntries = largeBundleEntries
        self.report = report
    }

    public func run() throws -> [Figure] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-bench-import-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let sources = FHIRInput.sources(for: [folder])
        _ = FHIRMetadata.r4.resourceTypes.count  // decode the metadata outside every figure
        _ = try MappingSet.defaults()  // and parse the default mappings (once a process), as the export benchmark does

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
        // The floor: SQLite alone writing the rows this import stored (`StoreCopyFloor`).
        let floor = try StoreCopyFloor.measure(
            importedPath: scratch.appendingPathComponent("files.sqlite").path, freshPath: scratch.appendingPathComponent("floor.sqlite").path)
        report(String(
            format: "floor: SQLite copying the %d rows (%.1f MB) the import stored, nothing else: %.2f s  (%.1fx the parse time, %.0f%% of the import's)",
            floor.rows, Double(floor.bytes) / 1e6, floor.seconds, floor.seconds / parse.seconds, 100 * floor.seconds / files.seconds))

        // The same resources as one transaction Bundle.
        let entries = try Self.entries(of: sources)
        let bundlePath = try write(entries, to: scratch, name: "one-bundle")
        start = Date()
        let fromBundle = try importInto(scratch.appendingPathComponent("bundle.sqlite").path, [.file(bundlePath)])
        let large = Figure(label: "import, one \(fromBundle)-entry Bundle", resources: fromBundle, seconds: Date().timeIntervalSince(start))
        report(line(large) + String(format: "  (%.2fx the per-resource time of the files)", perResource(large, over: files)))
        report("peak memory: \(Self.peakMemoryMB()) MB")
        guard largeBundleEntries > 0 else { return [parse, files, large] }

        // Bundle size: copies of the input under fresh ids, as one transaction Bundle of
        // `largeBundleEntries` entries and as fifty Bundles of the same entries.
        var copies: [Element] = []
        var copy = 0
        while copies.count < largeBundleEntries && !entries.isEmpty {
            let fresh = FreshCopies(copy: copy)
            copies += entries.prefix(largeBundleEntries - copies.count).map(fresh.apply)
            copy += 1
        }
        let onePath = try write(copies, to: scratch, name: "large-bundle")
        let step = (copies.count + 49) / 50
        let smallPaths = try stride(from: 0, to: copies.count, by: step).enumerated().map { number, first in
            try write(Array(copies[first..<min(first + step, copies.count)]), to: scratch, name: "small-\(number)")
        }
        copies = []
        start = Date()
        let fromSmall = try importInto(scratch.appendingPathComponent("small.sqlite").path, smallPaths.map { .file($0) })
        let small = Figure(label: "import, \(smallPaths.count) Bundles of \(step) entries", resources: fromSmall, seconds: Date().timeIntervalSince(start))
        report(line(small))
        start = Date()
        let fromOne = try importInto(scratch.appendingPathComponent("large.sqlite").path, [.file(onePath)])
        let one = Figure(label: "import, one \(fromOne)-entry Bundle", resources: fromOne, seconds: Date().timeIntervalSince(start))
        report(line(one) + String(format: "  (%.2fx the per-resource time of the \(smallPaths.count) Bundles)", perResource(one, over: small)))
        report("peak memory: \(Self.peakMemoryMB()) MB")
        return [parse, files, large, small, one]
    }

    /// The ratio of the time per resource of `figure` to that of `baseline`.
    private func perResource(_ figure: Figure, over baseline: Figure) -> Double {
        (figure.seconds / Double(figure.resources)) / (baseline.seconds / Double(baseline.resources))
    }

    /// Every resource of `sources` as a Bundle entry (Bundles unpacked, their entries' fullUrls kept).
    private static func entries(of sources: [FHIRInput.Source]) throws -> [Element] {
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
        return entries
    }

    /// Writes `entries` as a transaction Bundle into `folder` and returns its path.
    private func write(_ entries: [Element], to folder: URL, name: String) throws -> String {
        let bundle = Element.resource("Bundle", children: [Element(name: "type", value: "transaction")] + entries)
        let path = folder.appendingPathComponent("\(name).json").path
        try FHIRJSON.write(bundle).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func importInto(_ path: String, _ sources: [FHIRInput.Source]) throws -> Int {
        let gateway = try Gateway(path: path, options: Gateway.Options(timeZone: TimeZone(identifier: "UTC") ?? .current))
        let result = try gateway.importFHIR(sources)
        if !result.failures.isEmpty { report("note: \(result.failures.count) resource(s) failed") }
        return result.resourcesRead
    }

    private func line(_ figure: Figure) -> String {
        String(format: "%@: %d resources in %.2f s, %.0f resources/s", figure.label, figure.resources, figure.seconds, figure.resourcesPerSecond)
    }

    /// The process's peak resident memory, or with `children` the largest of its finished children's.
    static func peakMemoryMB(children: Bool = false) -> Int {
        var usage = rusage()
        getrusage((children ? RUSAGE_CHILDREN : RUSAGE_SELF).rawValue, &usage)
        return Int(usage.ru_maxrss / 1024)
    }
}
