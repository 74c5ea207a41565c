import CareModel
import Foundation
import Mapping

/// Which resource each value of an outcome came from: the outcome's provenance when they all came from
/// one resource (most outcomes), else a list in the outcome's linkage (``FHIRLinkage/valueSources``), in
/// value order.
enum OutcomeValueSources {
    /// The resources an outcome's values came from, in value order, as `userInfo` keeps them: nil when
    /// every value came from the resource its provenance names (most outcomes), so that the store keeps
    /// no JSON for them.
    static func encode(_ sources: [ResourceKey], provenance: Provenance?) -> [ResourceKey]? {
        if let provenance, sources.allSatisfy({ $0 == provenance.resource }) { return nil }
        return sources
    }

    /// An outcome's values, each with the resource it came from (`userInfo` keeps them in value order;
    /// without it, they all came from the resource of its provenance).
    static func valuesWithSources(_ outcome: Outcome) -> [(source: ResourceKey, value: OutcomeValue)] {
        let sources = outcome.metadata.linkage.valueSources ?? outcome.metadata.provenance.map { provenance in
            Array(repeating: provenance.resource, count: outcome.values.count)
        } ?? []
        return withoutPositions(outcome.values).enumerated().map { position, value in
            (position < sources.count ? sources[position] : ResourceKey(type: "unknown", id: String(position)), value)
        }
    }

    /// `values` without their positions in an outcome, which are given when it is assembled.
    static func withoutPositions(_ values: [OutcomeValue]) -> [OutcomeValue] {
        guard values.contains(where: { $0.index != nil }) else { return values }
        return values.map { var value = $0; value.index = nil; return value }
    }
}
