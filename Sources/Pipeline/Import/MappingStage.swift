import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// An outcome-making resource as mapped on a worker thread, with its source record made there too.
struct MappedInput: Sendable {
    let mapped: MappedResource
    let origin: ImportOrigin
    let raw: Element
    let source: SourceResource
}

/// The mapping stage of an import: resources through the `MappingEngine` on worker threads, with the
/// record of each resource as received (serialized there rather than on the thread that writes).
///
/// It reads the index of pass 1 and the task catalog, and changes nothing: what it returns goes to
/// reconciliation (entities) or outcome planning (outcome-making resources), in input order.
struct MappingStage: Sendable {
    let engine: MappingEngine
    let index: ResourceIndex
    let catalog: ImportTaskCatalog
    let sourceSystem: String

    /// Maps the indexed resource `key` (not an outcome-making one); nil when the index no longer has it.
    /// The record comes with it when it makes entities.
    func mapIndexed(_ key: ResourceKey) -> (MappedResource, SourceResource?)? {
        let resource: Element
        do {
            guard let found = try index.reread(key) else { return nil }
            resource = found
        } catch {
            return (MappedResource(key: key, result: .failed(MappingFailure(at: key.type, "cannot be read again from the input: \(error)"))), nil)
        }
        if engine.mappings.mapping(for: key.type) != nil { engine.coverage?.count(resource) }
        let result = engine.map(resource, key: key, index: index, tasks: catalog)
        guard case .mapped(let entities, _) = result.result, !entities.isEmpty else { return (result, nil) }
        return (result, Self.source(resource, key: key, system: sourceSystem))
    }

    /// Maps an outcome-making resource; nil when it cannot be known by a key.
    func mapOutcomeMaking(_ resource: Element, fullUrl: String?, origin: ImportOrigin) -> MappedInput? {
        guard let key = ResourceKey.of(resource, fullUrl: fullUrl) else { return nil }
        engine.coverage?.count(resource)
        return MappedInput(
            mapped: engine.map(resource, key: key, index: index, tasks: catalog), origin: origin, raw: resource,
            source: Self.source(resource, key: key, system: sourceSystem))
    }

    /// The record of `resource` as received from `system`.
    static func source(_ resource: Element, key: ResourceKey, system: String) -> SourceResource {
        let meta = resource.child(named: "meta")
        return SourceResource(
            sourceSystem: system, resourceType: key.type, resourceID: key.id, versionID: meta?.childValue("versionId"),
            lastUpdated: meta?.childValue("lastUpdated"), body: FHIRJSON.write(resource),
            activitiesWithDetail: key.type == "CarePlan" ? activitiesWithDetail(of: resource) : nil)
    }

    /// The paths (`CarePlan.activity[2]`, as a task's `fhir.element` names it) of the activities of
    /// CarePlan `plan` that have a `detail`, whose status an export can set: kept with the record, read
    /// here from the resource already parsed.
    static func activitiesWithDetail(of plan: Element) -> [String] {
        plan.children(named: "activity").enumerated().compactMap { position, activity in
            activity.child(named: "detail") == nil ? nil : "CarePlan.activity[\(position)]"
        }
    }

    /// Items mapped per worker task.
    static let chunk = 64

    /// Runs `transform` over `items` on worker threads, a chunk per task, and hands the results to
    /// `consume` in order, on this thread. Workers `behindTheWriter` yield to the import's other threads
    /// (``WorkerPriority/yielding``): while outcomes are written, the store's one writer thread is the
    /// slowest stage, and the mapping ahead of it need not take half its core.
    static func inParallel<Item, Output>(
        _ items: [Item], window: Int? = nil, behindTheWriter: Bool = false, _ transform: @escaping @Sendable (Item) -> Output,
        consume: (Output) -> Void
    ) {
        OrderedParallelMap.run(
            items.chunked(chunk).makeIterator(), window: window, priority: behindTheWriter ? .yielding : .normal,
            transform: { slice in slice.map(transform) }
        ) { outputs in
            for output in outputs { consume(output) }
        }
    }
}

extension Array {
    func chunked(_ size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
