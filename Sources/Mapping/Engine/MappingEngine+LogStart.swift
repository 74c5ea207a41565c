import CareModel
import FHIR
import Foundation

/// What the import needs to start log tasks on their patient's first day rather than on the epoch: the
/// day of an outcome-making resource, read before the input's index exists, and the patient it names,
/// resolved once it does.
extension MappingEngine {
    /// The day an outcome-making resource makes outcomes on, and the patients it names: the references of
    /// its mapping's outcome `patient` field (as written: the index that resolves them is being built) and
    /// the number (``MappingOptions/dayNumber(of:)``) of the earliest day its `time` field gives. Nil when
    /// the mapping gives no patient or no time, or cannot read them.
    ///
    /// The mapping's `when` is not applied (its `resolve()` needs the index), so the resources this reads
    /// are a superset of those that make outcomes: a log may start a little earlier than its first outcome,
    /// never later.
    public func outcomeDay(of resource: Element, key: ResourceKey) -> (patientReferences: [String], day: Int)? {
        guard let mapping = mappings.mapping(for: key.type) else { return nil }
        var run = MappingRun(engine: self, mapping: mapping, resource: resource, key: key, index: Self.noIndex, tasks: nil)
        return try? run.outcomeDay()
    }

    /// The entity id of the patient `reference` names, resolved in `index` as the mapping resolves an
    /// outcome's patient; nil when it names no Patient.
    public func patientID(ofReference reference: String, in index: ResourceIndex) -> String? {
        switch index.resolve(reference) {
        case .found(let key), .outside(let key): return key.type == "Patient" ? options.entityID(key) : nil
        case .unresolved: return nil
        }
    }

    /// The index of an input with no resources: what references resolve in before the input's is built.
    private static let noIndex = ResourceIndex.Builder().build()
}

extension MappingRun {
    /// See ``MappingEngine/outcomeDay(of:key:)``.
    mutating func outcomeDay() throws(MappingFailure) -> (patientReferences: [String], day: Int)? {
        var references: [String] = []
        var earliest: Int?
        for entity in mapping.entities where entity.kind == .outcome {
            guard let patientField = entity.field("patient") else { continue }
            let items = try entity.each.map { each throws(MappingFailure) in try nodes(each, on: root) } ?? [root]
            for item in items {
                if let filter = entity.filter, !(try truth(filter, on: item)) { continue }
                guard let time = try date(entity.field("time"), item: item), let day = options.dayNumber(of: time) else { continue }
                let named = try source(patientField, item: item).compactMap { $0.element.childValue("reference") ?? $0.element.value }
                guard !named.isEmpty else { continue }
                references += named
                earliest = min(earliest ?? day, day)
            }
        }
        return earliest.map { (references, $0) }
    }
}
