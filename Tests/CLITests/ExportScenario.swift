import Foundation
import TestSupport

/// A scratch store with Fixtures/provider imported and blood-pressure outcomes recorded through the CLI,
/// with an empty `out` folder to export into, and what an export left there.
struct ExportScenario {
    static let bloodPressure = "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic"

    /// A `caregate` run that did not exit 0.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let folder: URL
    let store: String
    var out: URL { folder.appendingPathComponent("out") }

    /// Imports Fixtures/provider and records `count` outcomes (occurrences 10, 11...), each queued for export.
    init(outcomes count: Int) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("export-cli-\(UUID().uuidString)")
        store = folder.appendingPathComponent("s.sqlite").path
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("out"), withIntermediateDirectories: true)
        try Self.succeed(["import", "Fixtures/provider", "--time-zone", "America/Chicago", "--store", store])
        for occurrence in 0..<count {
            try Self.succeed([
                "outcomes", "add", "--store", store, "--task", Self.bloodPressure, "--occurrence", "\(occurrence + 10)",
                "--value", "\(120 + occurrence)", "--value", "80", "--unit", "mm[Hg]",
                "--kind", "http://loinc.org|8480-6", "--kind", "http://loinc.org|8462-4",
            ])
        }
    }

    /// Deletes the scratch folder.
    func remove() {
        try? FileManager.default.removeItem(at: folder)
    }

    /// Runs `caregate arguments...`; a failure unless it exits 0.
    @discardableResult
    static func succeed(_ arguments: [String]) throws -> CLIRunner.Result {
        let result = try CLIRunner.run(arguments)
        guard result.status == 0 else {
            throw Failure(description: "caregate \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)")
        }
        return result
    }

    /// How many outbox entries `caregate outbox --state state` lists.
    func outbox(state: String) throws -> Int {
        try Self.succeed(["outbox", "--store", store, "--state", state]).stdout.split(separator: "\n").count
    }

    /// The export files in place in `out`, sorted.
    func exported() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasPrefix("export-") }.sorted()
    }

    /// The hidden partial files left in `out`.
    func partialFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasSuffix(".partial") }
    }

    /// The Observations of every export file in place in `out`.
    func observationCount() throws -> Int {
        try exported().reduce(0) { total, name in
            let bundle = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent(name))) as? [String: Any]
            let entries = bundle?["entry"] as? [[String: Any]] ?? []
            return total + entries.filter { ($0["resource"] as? [String: Any])?["resourceType"] as? String == "Observation" }.count
        }
    }
}
