import Foundation

/// A care plan (CareKit `OCKCarePlan`): a titled set of tasks for one patient.
///
/// `patientUUID` is CareKit's link to one version of the patient; `patientID` is CareGate's link to the
/// patient's stable id (CareKit ignores the extra key).
public struct CarePlan: VersionedEntity {
    public static let kind = EntityKind.carePlan

    public let id: String
    public var title: String
    public var patientUUID: UUID?
    public var patientID: String?
    public var metadata: EntityMetadata

    public init(id: String, title: String, patientUUID: UUID? = nil, patientID: String? = nil, metadata: EntityMetadata) {
        self.id = id
        self.title = title
        self.patientUUID = patientUUID
        self.patientID = patientID
        self.metadata = metadata
    }
}

extension CarePlan: Codable {
    enum CodingKeys: String, CodingKey {
        case id, title, patientUUID, patientID
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        title = try container.decode(String.self, forKey: .title)
        patientUUID = try container.decodeIfPresent(UUID.self, forKey: .patientUUID)
        patientID = try container.decodeIfPresent(String.self, forKey: .patientID)
        metadata = try EntityMetadata(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try encodeFields(to: encoder)
        try metadata.encode(to: encoder)
    }

    /// Encodes the entity's own fields (not its metadata): the same in the stored and the wire shape.
    func encodeFields(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(title, forKey: .title)
        try container.encodeIfPresent(patientUUID, forKey: .patientUUID)
        try container.encodeIfPresent(patientID, forKey: .patientID)
    }
}
