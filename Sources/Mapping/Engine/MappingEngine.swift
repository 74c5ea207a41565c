import CareModel
import FHIR
import Foundation

/// Runs the mappings: one FHIR resource in, the care entities it makes (or why not) out, with notes on
/// what was assumed or not carried over. It reads the input's index and a task catalog, and writes
/// nothing; two caches (in `MappingCaches.swift`: the log tasks it built, the reverse references of an
/// input) keep it from building the same thing twice, and change no result.
///
/// Each resource is mapped by a ``MappingRun`` (its entities, its field values, and its outcome values,
/// whose task the rules of ``OutcomeTaskMatching`` find).
///
/// ```swift
/// let engine = MappingEngine(mappings: try .defaults(), options: MappingOptions(timeZone: zone))
/// let mapped = engine.map(carePlan, key: key, index: index, tasks: catalog)
/// ```
public struct MappingEngine: Sendable {
    public let mappings: MappingSet
    public let options: MappingOptions
    /// Log tasks already built, by id: one per patient and code, built (and hashed) once per run.
    let logTasks = LogTaskCache()
    /// The reverse references of `reverse:` fields, each built once per input.
    let reverseIndexes = ReverseIndexCache()
    /// When set, learns which source elements the mappings read (`--coverage`).
    public let coverage: CoverageCollector?

    public init(mappings: MappingSet, options: MappingOptions, coverage: CoverageCollector? = nil) {
        self.mappings = mappings
        self.options = options
        self.coverage = coverage
    }

    /// Whether resources of `type` make outcomes (and so are mapped after everything else, streamed).
    public func makesOutcomes(_ type: String) -> Bool {
        mappings.mapping(for: type)?.entities.contains { $0.kind == .outcome } ?? false
    }

    /// Maps `resource`, known as `key`, resolving references in `index`.
    public func map(_ resource: Element, key: ResourceKey, index: ResourceIndex, tasks: (any TaskCatalog)? = nil) -> MappedResource {
        guard let mapping = mappings.mapping(for: key.type) else {
            return MappedResource(key: key, result: .skipped("no mapping for \(key.type)"), notes: [])
        }
        var run = MappingRun(engine: self, mapping: mapping, resource: resource, key: key, index: index, tasks: tasks)
        do {
            let result = try run.map()
            return MappedResource(key: key, result: result, notes: run.notes)
        } catch {
            return MappedResource(key: key, result: .failed(error), notes: run.notes)
        }
    }
}
