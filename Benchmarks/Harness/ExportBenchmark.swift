import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store

/// The measurements behind `caregate-bench export`: a folder imported into a fresh store (the import
/// rate, the baseline), outcomes recorded as an app records them across the imported tasks, then all of
/// them exported as Observations (with their Provenances) into one transaction Bundle file: outcomes/s.
/// Exporting again, with nothing due, is timed too.
public struct ExportBenchmark {
    public struct Figures: Sendable {
        public var importedResources = 0
        public var importSeconds = 0.0
        public var outcomes = 0
        public var recordSeconds = 0.0
        public var exported = 0
        public var exportSeconds = 0.0
        public var bundleBytes = 0
        public var refused = 0
    }

    public let folder: String
    /// Outcomes to record and export.
    public let outcomes: Int
    public let report: (String) -> Void

    public init(folder: String, outcomes: Int = 100_000, report: @escaping (String) -> Void) {
        self.folder = folder
        self.outcomes = outcomes
        self.report = report
    }

    public func run() throws -> Figures {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-bench-export-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        var figures = Figures()
        let store = try SQLiteStore(path: scratch.appendingPathComponent("store.sqlite").path)
        let mappings = try MappingSet.defaults()
        guard mappings.export != nil else { throw ExportError.noExportMapping }

        // Baseline: the import of the same run.
        var start = Date()
        let gateway = Gateway(store: store, mappings: mappings, options: Gateway.Options(timeZone: TimeZone(identifier: "UTC") ?? .gmt))
        let imported = try gateway.importFHIR(FHIRInput.sources(for: [folder]))
        figures.importedResources = imported.resourcesRead
        figures.importSeconds = Date().timeIntervalSince(start)
        report(String(format: "import: %d resources in %.2f s, %.0f resources/s", figures.importedResources, figures.importSeconds,
                      Double(figures.importedResources) / figures.importSeconds))

        // Outcomes as an app records them, each queued for export.
        start = Date()
        figures.outcomes = try record(into: store)
        figures.recordSeconds = Date().timeIntervalSince(start)
        report(String(format: "record: %d outcomes in %.2f s, %.0f outcomes/s (each written and queued)", figures.outcomes,
                      figures.recordSeconds, Double(figures.outcomes) / figures.recordSeconds))

        // The export into one transaction Bundle file.
        let bundle = scratch.appendingPathComponent("export.json").path
        let cpuBefore = Self.cpuSeconds()
        start = Date()
        let exported = try gateway.export(to: .file(bundle))
        figures.exportSeconds = Date().timeIntervalSince(start)
        let cpu = Self.cpuSeconds() - cpuBefore
        figures.exported = exported.observations
        figures.refused = exported.refused.count
        figures.bundleBytes = (try? FileManager.default.attributesOfItem(atPath: bundle)[.size] as? Int) ?? 0
        report(String(format: "export: %d outcomes in %.2f s, %.0f outcomes/s into a %.1f MB transaction Bundle (%.2fx the import rate)",
                      figures.exported, figures.exportSeconds, Double(figures.exported) / figures.exportSeconds,
                      Double(figures.bundleBytes) / 1_048_576,
                      (Double(figures.exported) / figures.exportSeconds) / (Double(figures.importedResources) / figures.importSeconds)))
        report(String(format: "        %.2f s of CPU: %.1f cores busy, %.0f µs of CPU per outcome", cpu, cpu / figures.exportSeconds, cpu / Double(max(1, figures.exported)) * 1e6))
        if figures.refused > 0 { report("note: \(figures.refused) outcome(s) refused (dead letters)") }

        start = Date()
        let again = try gateway.export(to: .file(bundle))
        report(String(format: "export again: %d written in %.3f s (nothing was due)", again.observations, Date().timeIntervalSince(start)))
        report("peak memory: \(ImportBenchmark.peakMemoryMB()) MB")
        return figures
    }

    /// CPU time (user and system) of the process so far, on all threads.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Records `outcomes` outcomes over the imported tasks whose patient came from a FHIR Patient, a
    /// few occurrences per task in turn, each valued as its task suggests (its target's type and units,
    /// else done/not done); every tenth has two values, as a blood pressure does.
    private func record(into store: SQLiteStore) throws -> Int {
        var tasks = try store.tasks(.current).filter { $0.schedule.occurrenceCount.map { $0 > 0 } ?? true }
        tasks.sort { $0.id < $1.id }
        guard !tasks.isEmpty else { return 0 }
        // Each task's first occurrence in the time its current version owns.
        var next: [Int] = tasks.map { task in
            let first = (task.schedule.occurrence(at: task.metadata.effectiveDate) ?? -1) + 1
            return first
        }
        var written = 0
        var batch = StoreBatch()
        var round = 0
        while written < outcomes && round < 10_000 {
            var progressed = false
            for (position, task) in tasks.enumerated() where written < outcomes {
                let occurrence = next[position]
                guard task.schedule.hasOccurrence(occurrence), let eventStart = task.schedule.eventStart(occurrence: occurrence),
                      eventStart >= task.metadata.effectiveDate else { continue }
                next[position] += 1
                var metadata = EntityMetadata(effectiveDate: eventStart, timezone: task.metadata.timezone)
                metadata.source = "BenchApp"
                let values = Self.values(for: task, occurrence: occurrence, at: eventStart.addingTimeInterval(60))
                batch.upsert(Outcome(taskUUID: task.uuid, taskOccurrenceIndex: occurrence, values: values, metadata: metadata))
                written += 1
                progressed = true
                if batch.count == 10_000 {
                    try store.apply(batch)
                    batch = StoreBatch()
                }
            }
            round += 1
            if !progressed { break }
        }
        if !batch.isEmpty { try store.apply(batch) }
        return written
    }

    private static func values(for task: CareTask, occurrence: Int, at time: Date) -> [OutcomeValue] {
        let zone = task.metadata.timezone
        if occurrence % 10 == 9 {
            return [
                OutcomeValue(.integer(110 + occurrence % 30), units: "mm[Hg]", kind: "http://loinc.org|8480-6", index: 0, createdDate: time, timezone: zone),
                OutcomeValue(.integer(70 + occurrence % 20), units: "mm[Hg]", kind: "http://loinc.org|8462-4", index: 1, createdDate: time, timezone: zone),
            ]
        }
        let target = task.schedule.elements.first?.targetValues.first
        switch target?.value {
        case .double(let number): return [OutcomeValue(.double(number + Double(occurrence % 7) / 4), units: target?.units, createdDate: time, timezone: zone)]
        case .integer(let number): return [OutcomeValue(.integer(number + occurrence % 3), units: target?.units, createdDate: time, timezone: zone)]
        default: return [OutcomeValue(.boolean(occurrence % 5 != 0), createdDate: time, timezone: zone)]
        }
    }
}
