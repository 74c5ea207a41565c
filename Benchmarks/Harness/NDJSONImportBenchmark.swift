import FHIR
import Foundation

/// The measurement behind `caregate-bench import-ndjson`: the peak memory of importing one large NDJSON
/// file, made from a Bulk Data export under fresh ids, in a process of its own (so that nothing the
/// benchmark itself holds counts).
public struct NDJSONImportBenchmark {
    /// The folder of FHIR input the file is made of (the corpus's bulk-ndjson export).
    public let source: String
    /// The size of the file to make, in bytes.
    public let bytes: Int
    /// The `caregate` executable that runs the import.
    public let executable: String
    public let report: (String) -> Void

    public init(source: String, bytes: Int, executable: String, report: @escaping (String) -> Void) {
        self.source = source
        self.bytes = bytes
        self.executable = executable
        self.report = report
    }

    public struct Result: Sendable {
        public let resources: Int
        public let fileBytes: Int
        public let seconds: Double
        public let peakMemoryMB: Int
        public let exitStatus: Int32
    }

    public func run() throws -> Result {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-bench-ndjson-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let file = scratch.appendingPathComponent("large.ndjson")
        var start = Date()
        let (resources, written) = try Self.makeFile(at: file, from: source, bytes: bytes) { report($0) }
        report(String(format: "input: %d resources, %.0f MB of NDJSON (made in %.1f s)", resources, Double(written) / 1_048_576, Date().timeIntervalSince(start)))

        start = Date()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["import", file.path, "--store", scratch.appendingPathComponent("store.sqlite").path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let seconds = Date().timeIntervalSince(start)
        let result = Result(
            resources: resources, fileBytes: written, seconds: seconds, peakMemoryMB: ImportBenchmark.peakMemoryMB(children: true),
            exitStatus: process.terminationStatus)
        report(String(format: "import, one %.0f MB NDJSON file: %d resources in %.1f s, %.0f resources/s (exit status %d)",
                      Double(written) / 1_048_576, resources, seconds, Double(resources) / seconds, process.terminationStatus))
        report("peak memory of the import: \(result.peakMemoryMB) MB")
        return result
    }

    /// Writes copies of every resource under `folder`, each copy under fresh ids (``FreshCopies``), one
    /// per line into `file`, until it holds at least `bytes`; returns the resources and bytes written.
    public static func makeFile(at file: URL, from folder: String, bytes: Int, progress: (String) -> Void = { _ in }) throws -> (Int, Int) {
        var originals: [Element] = []
        try FHIRInput.forEachEntry(of: FHIRInput.sources(for: [folder])) { event in
            guard case .entry(_, let entry, _) = event, case .success(let resource) = entry.result else { return }
            if resource.resourceType == "Bundle" {
                originals += resource.children(named: "entry").compactMap { $0.child(named: "resource") }
            } else if FHIRMetadata.r4.isResourceType(resource.resourceType ?? "") {
                originals.append(resource)
            }
        }
        guard !originals.isEmpty else { throw NDJSONBenchmarkError("\(folder) holds no FHIR resource to copy") }
        guard FileManager.default.createFile(atPath: file.path, contents: nil), let handle = try? FileHandle(forWritingTo: file) else {
            throw NDJSONBenchmarkError("cannot write \(file.path)")
        }
        defer { try? handle.close() }
        var (resources, written, copy, reported) = (0, 0, 0, 0)
        let newline = Data([0x0A])
        while written < bytes {
            let fresh = FreshCopies(copy: copy)
            var chunk = Data()
            for resource in originals {
                chunk.append(FHIRJSON.write(fresh.apply(resource)))
                chunk.append(newline)
                resources += 1
            }
            try handle.write(contentsOf: chunk)
            written += chunk.count
            copy += 1
            if written - reported >= 100 << 20 {
                reported = written
                progress(String(format: "  writing the input: %.0f MB", Double(written) / 1_048_576))
            }
        }
        return (resources, written)
    }
}

public struct NDJSONBenchmarkError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
