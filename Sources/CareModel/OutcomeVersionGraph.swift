import Foundation

/// Which outcome versions one pull carries, by CareKit's version graph: a version is left out when a
/// version that descends from it (names it, or names one that does, and so on) is in the same pull, so
/// that a device never meets an outcome together with a later version of itself (CareKit #700). Versions
/// that do not descend from each other, the tips of a conflict, all go: the device must see a conflict
/// to resolve it.
///
/// A version that stays names, besides a version left out (which the device may have: its own versions
/// come back in its pulls), the versions that one named, and so on through versions left out: the device
/// links it after the versions it has, as the store links them, and never meets a spurious conflict
/// because a version it lacks stands between (CareKit's store drops a link to a version it lacks).
///
/// ## Topics
///
/// - ``select(_:knownPrevious:)``
public enum OutcomeVersionGraph {
    /// `records` without the outcome versions a later version of the same pull descends from, the
    /// others' `previousVersionUUIDs` rewritten around them. `knownPrevious` gives what versions not in
    /// the records name (the store's whole graph), so that descent through them is seen too.
    public static func select(_ records: [CareKitRevisionRecord], knownPrevious: [UUID: [UUID]] = [:]) -> [CareKitRevisionRecord] {
        var previous = knownPrevious
        var inPull: Set<UUID> = []
        for record in records {
            for item in record.entities where item.type == .outcome {
                previous[item.entity.metadata.uuid] = item.entity.metadata.previousVersionUUIDs
                inPull.insert(item.entity.metadata.uuid)
            }
        }
        // Every version some version of the pull descends from.
        var ancestors: Set<UUID> = []
        var stack = inPull.flatMap { previous[$0] ?? [] }
        while let uuid = stack.popLast() {
            guard ancestors.insert(uuid).inserted else { continue }
            stack += previous[uuid] ?? []
        }
        let leftOut = inPull.intersection(ancestors)
        guard !leftOut.isEmpty else { return records }

        // What a version names, and through versions left out what they name, in that order (with a
        // stack of its own: a pull may hold a long run of versions of one outcome).
        func served(_ names: [UUID]) -> [UUID] {
            var result: [UUID] = []
            var seen: Set<UUID> = []
            var stack = Array(names.reversed())
            while let uuid = stack.popLast() {
                guard seen.insert(uuid).inserted else { continue }
                result.append(uuid)
                if leftOut.contains(uuid) { stack += (previous[uuid] ?? []).reversed() }
            }
            return result
        }
        return records.map { record in
            var kept = record
            kept.entities = record.entities.compactMap { item in
                guard item.type == .outcome else { return item }
                guard !leftOut.contains(item.entity.metadata.uuid) else { return nil }
                var entity = item.entity
                entity.metadata.previousVersionUUIDs = served(entity.metadata.previousVersionUUIDs)
                return CareKitEntity(entity)
            }
            return kept
        }
    }
}
