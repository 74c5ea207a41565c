import CareModel
import Foundation

/// What one entity change of a batch came to.
public enum VersionChange: Sendable, Equatable {
    /// A first version (or a new version after an outcome's tombstone, which CareKit counts as new).
    case created
    /// A new version after the current one.
    case updated
    /// A tombstone.
    case deleted
    /// Nothing: the content was the current version's (or the version or tombstone was there already).
    case unchanged
}

extension VersionChange {
    /// What upserting `incoming` comes to over `current`, the entity's current version (`nil` when the
    /// store has none, or only a tombstone of it): the store's rule, which a dry run (writing nothing)
    /// asks to tell what it would do.
    public static func ofUpsert(_ incoming: CareEntity, over current: CareEntity?) -> VersionChange {
        guard let current else { return .created }
        let same = sameContent(
            incomingHash: incoming.metadata.provenance?.contentHash, storedHash: current.metadata.provenance?.contentHash
        ) { incoming.content == current.content }
        return same ? .unchanged : .updated
    }

    /// Whether incoming content is the stored version's: by provenance content hash when both have one,
    /// else by `compareContent`.
    static func sameContent(incomingHash: String?, storedHash: String?, otherwise compareContent: () throws -> Bool) rethrows -> Bool {
        if let incomingHash, let storedHash { return incomingHash == storedHash }
        return try compareContent()
    }
}
