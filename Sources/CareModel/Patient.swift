import Foundation

/// A patient (CareKit `OCKPatient`): name, sex, birthday and allergies, plus the version header.
public struct Patient: VersionedEntity {
    public static let kind = EntityKind.patient

    public let id: String
    public var name: PersonName
    public var sex: BiologicalSex?
    public var birthday: Date?
    public var allergies: [String]?
    public var metadata: EntityMetadata

    public init(
        id: String,
        name: PersonName,
        sex: BiologicalSex? = nil,
        birthday: Date? = nil,
        allergies: [String]? = nil,
        metadata: EntityMetadata
    ) {
        self.id = id
        self.name = name
        self.sex = sex
        self.birthday = birthday
        self.allergies = allergies
        self.metadata = metadata
    }
}

extension Patient: Codable {
    // OCKPatient's Codable keys (synthesized in CareKitStore): id, name, sex, birthday, allergies.
    enum CodingKeys: String, CodingKey {
        case id, name, sex, birthday, allergies
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decode(PersonName.self, forKey: .name)
        sex = try container.decodeIfPresent(BiologicalSex.self, forKey: .sex)
        birthday = try container.decodeIfPresent(Date.self, forKey: .birthday)
        allergies = try container.decodeIfPresent([String].self, forKey: .allergies)
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
        try container.encode(name, forKey: .name)
        try container.encodeIfPresent(sex, forKey: .sex)
        try container.encodeIfPresent(birthday, forKey: .birthday)
        try container.encodeIfPresent(allergies, forKey: .allergies)
    }
}
