import Foundation

/// What every stored care entity shares: a stable `id`, the per-version header (``EntityMetadata``)
/// and a kind the store can file it under.
///
/// Mirrors CareKitStore's `OCKVersionedObjectCompatible` (+ `OCKObjectCompatible`): an entity is never
/// changed in place; each change is a new version with its own `uuid`, linked to its neighbours by
/// `previousVersionUUIDs` / `nextVersionUUIDs`, in effect from `effectiveDate`. The forwarding properties
/// below let callers write `task.uuid` instead of `task.metadata.uuid`.
public protocol VersionedEntity: Sendable, Hashable, Codable, Identifiable where ID == String {
    /// Which entity table this type belongs to.
    static var kind: EntityKind { get }
    /// The stable identifier shared by all versions of the entity.
    var id: String { get }
    /// Version links, dates, CareKit bookkeeping fields and provenance.
    var metadata: EntityMetadata { get set }
}

/// The kinds of versioned care entities.
public enum EntityKind: String, Sendable, Hashable, Codable, CaseIterable {
    case patient, carePlan, contact, task, outcome
}

extension VersionedEntity {
    /// The identifier of this version.
    public var uuid: UUID {
        get { metadata.uuid }
        set { metadata.uuid = newValue }
    }
    /// When this version takes precedence over the previous one.
    public var effectiveDate: Date {
        get { metadata.effectiveDate }
        set { metadata.effectiveDate = newValue }
    }
    /// Set on a tombstone version: the entity is deleted from this date on.
    public var deletedDate: Date? {
        get { metadata.deletedDate }
        set { metadata.deletedDate = newValue }
    }
    /// The versions this one replaces (one in a linear history).
    public var previousVersionUUIDs: [UUID] {
        get { metadata.previousVersionUUIDs }
        set { metadata.previousVersionUUIDs = newValue }
    }
    /// The versions that replace this one; empty for the current tip.
    public var nextVersionUUIDs: [UUID] {
        get { metadata.nextVersionUUIDs }
        set { metadata.nextVersionUUIDs = newValue }
    }
    /// Where the entity came from (FHIR source), if imported.
    public var provenance: Provenance? {
        get { metadata.provenance }
        set { metadata.provenance = newValue }
    }
    /// The time zone the entity was created in.
    public var timezone: TimeZone {
        get { metadata.timezone }
        set { metadata.timezone = newValue }
    }
}
