import Foundation

/// The fields every versioned care entity carries besides its own content: version identity and links,
/// CareKit's bookkeeping fields (`OCKVersionable` + `OCKObjectCompatible`) and the FHIR provenance.
///
/// It is encoded flat, into the same JSON object as the entity's own fields, with CareKitStore's key
/// names, so that a CareKit app decodes it as its own: CareKit 3 (`OCKVersionedObjectCompatible`:
/// `uuid`, `effectiveDate`, `deletedDate`, `previousVersionUUIDs`, `nextVersionUUIDs`) and, beside them,
/// CareKit 2.1's single links (`previousVersionUUID`, `nextVersionUUID`); then `OCKObjectCompatible`'s
/// `createdDate`, `updatedDate`, `schemaVersion`, `groupIdentifier`, `tags`, `remoteID`, `source`,
/// `userInfo`, `asset`, `notes`, `timezone`. `provenance` is CareGate's addition; CareKit's synthesized
/// decoders ignore keys they do not know.
public struct EntityMetadata: Sendable, Hashable {
    /// The identifier of this version (CareKit `uuid`).
    public var uuid: UUID
    /// When this version takes precedence over the previous one.
    public var effectiveDate: Date
    /// Set on a tombstone: the entity counts as deleted from this date on.
    public var deletedDate: Date?
    /// The versions this one replaces.
    public var previousVersionUUIDs: [UUID]
    /// The versions that replace this one; empty for the current tip.
    public var nextVersionUUIDs: [UUID]
    /// When this version was written to a store.
    public var createdDate: Date?
    /// When this version was last touched by a store.
    public var updatedDate: Date?
    /// The CareKit schema version the record was written with.
    public var schemaVersion: SemanticVersion?
    /// A free grouping key (CareKit `groupIdentifier`).
    public var groupIdentifier: String?
    /// Free tags.
    public var tags: [String]?
    /// The identifier of the entity on a remote server.
    public var remoteID: String?
    /// A free description of where the entity came from (CareKit `source`).
    public var source: String?
    /// Free key/value annotations.
    public var userInfo: [String: String]?
    /// A free asset name (an image, for example).
    public var asset: String?
    /// Notes attached to the entity.
    public var notes: [Note]?
    /// The time zone the entity was created in.
    public var timezone: TimeZone
    /// The FHIR resource the entity was made from, when it was imported.
    public var provenance: Provenance?

    /// A first version (no links) in effect from `effectiveDate`.
    public init(
        uuid: UUID = VersionUUIDGenerator.random(),
        effectiveDate: Date,
        deletedDate: Date? = nil,
        previousVersionUUIDs: [UUID] = [],
        nextVersionUUIDs: [UUID] = [],
        createdDate: Date? = nil,
        updatedDate: Date? = nil,
        schemaVersion: SemanticVersion? = nil,
        groupIdentifier: String? = nil,
        tags: [String]? = nil,
        remoteID: String? = nil,
        source: String? = nil,
        userInfo: [String: String]? = nil,
        asset: String? = nil,
        notes: [Note]? = nil,
        timezone: TimeZone = .current,
        provenance: Provenance? = nil
    ) {
        self.uuid = uuid
        self.effectiveDate = effectiveDate
        self.deletedDate = deletedDate
        self.previousVersionUUIDs = previousVersionUUIDs
        self.nextVersionUUIDs = nextVersionUUIDs
        self.createdDate = createdDate
        self.updatedDate = updatedDate
        self.schemaVersion = schemaVersion
        self.groupIdentifier = groupIdentifier
        self.tags = tags
        self.remoteID = remoteID
        self.source = source
        self.userInfo = userInfo
        self.asset = asset
        self.notes = notes
        self.timezone = timezone
        self.provenance = provenance
    }
}

extension EntityMetadata: Codable {
    enum CodingKeys: String, CodingKey {
        case uuid, effectiveDate, deletedDate, previousVersionUUIDs, nextVersionUUIDs
        case previousVersionUUID, nextVersionUUID
        case createdDate, updatedDate, schemaVersion, groupIdentifier, tags, remoteID, source
        case userInfo, asset, notes, timezone, provenance
    }

    /// Decodes from the entity's own JSON object (the fields are flat, as CareKit writes them).
    ///
    /// Accepts what both CareKit generations write: version links as arrays (3) or single values (2.1).
    /// CareKit 2.1 leaves `uuid` out of objects never stored (a fresh one is made) and has no
    /// `effectiveDate` on outcomes (their `createdDate` stands in).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        uuid = try container.decodeIfPresent(UUID.self, forKey: .uuid) ?? VersionUUIDGenerator.random()
        createdDate = try container.decodeIfPresent(Date.self, forKey: .createdDate)
        if let effective = try container.decodeIfPresent(Date.self, forKey: .effectiveDate) ?? createdDate {
            effectiveDate = effective
        } else {
            throw DecodingError.keyNotFound(CodingKeys.effectiveDate, DecodingError.Context(
                codingPath: container.codingPath, debugDescription: "neither effectiveDate nor createdDate is present"))
        }
        deletedDate = try container.decodeIfPresent(Date.self, forKey: .deletedDate)
        previousVersionUUIDs = try container.decodeIfPresent([UUID].self, forKey: .previousVersionUUIDs)
            ?? container.decodeIfPresent(UUID.self, forKey: .previousVersionUUID).map { [$0] } ?? []
        nextVersionUUIDs = try container.decodeIfPresent([UUID].self, forKey: .nextVersionUUIDs)
            ?? container.decodeIfPresent(UUID.self, forKey: .nextVersionUUID).map { [$0] } ?? []
        updatedDate = try container.decodeIfPresent(Date.self, forKey: .updatedDate)
        schemaVersion = try container.decodeIfPresent(SemanticVersion.self, forKey: .schemaVersion)
        groupIdentifier = try container.decodeIfPresent(String.self, forKey: .groupIdentifier)
        tags = try container.decodeIfPresent([String].self, forKey: .tags)
        remoteID = try container.decodeIfPresent(String.self, forKey: .remoteID)
        source = try container.decodeIfPresent(String.self, forKey: .source)
        userInfo = try container.decodeIfPresent([String: String].self, forKey: .userInfo)
        asset = try container.decodeIfPresent(String.self, forKey: .asset)
        notes = try container.decodeIfPresent([Note].self, forKey: .notes)
        timezone = try container.decodeIfPresent(TimeZone.self, forKey: .timezone) ?? .gmt
        provenance = try container.decodeIfPresent(Provenance.self, forKey: .provenance)
    }

    /// Encodes into the entity's own JSON object, leaving out absent optionals as CareKit's synthesized
    /// coding does (its decoders use `decodeIfPresent` for them).
    public func encode(to encoder: any Encoder) throws {
        try encode(to: encoder, singleLinks: true)
    }

    /// Encodes into the entity's own JSON object; CareKit 2.1's single version links only with
    /// `singleLinks` (the stored shape has them, CareKit 4.0's wire shape not).
    func encode(to encoder: any Encoder, singleLinks: Bool) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uuid, forKey: .uuid)
        try container.encode(effectiveDate, forKey: .effectiveDate)
        try container.encodeIfPresent(deletedDate, forKey: .deletedDate)
        try container.encode(previousVersionUUIDs, forKey: .previousVersionUUIDs)
        try container.encode(nextVersionUUIDs, forKey: .nextVersionUUIDs)
        if singleLinks {
            try container.encodeIfPresent(previousVersionUUIDs.first, forKey: .previousVersionUUID)
            try container.encodeIfPresent(nextVersionUUIDs.first, forKey: .nextVersionUUID)
        }
        try container.encodeIfPresent(createdDate, forKey: .createdDate)
        try container.encodeIfPresent(updatedDate, forKey: .updatedDate)
        try container.encodeIfPresent(schemaVersion, forKey: .schemaVersion)
        try container.encodeIfPresent(groupIdentifier, forKey: .groupIdentifier)
        try container.encodeIfPresent(tags, forKey: .tags)
        try container.encodeIfPresent(remoteID, forKey: .remoteID)
        try container.encodeIfPresent(source, forKey: .source)
        try container.encodeIfPresent(userInfo, forKey: .userInfo)
        try container.encodeIfPresent(asset, forKey: .asset)
        try container.encodeIfPresent(notes, forKey: .notes)
        try container.encode(timezone, forKey: .timezone)
        try container.encodeIfPresent(provenance, forKey: .provenance)
    }
}
