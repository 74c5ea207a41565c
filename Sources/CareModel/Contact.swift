import Foundation

/// Someone the patient may get in touch with (CareKit `OCKContact`): a care team member, friend or family.
///
/// `carePlanUUID` is CareKit's link to one care plan version; `carePlanID` links the plan's stable id.
public struct Contact: VersionedEntity {
    public static let kind = EntityKind.contact

    public let id: String
    public var name: PersonName
    public var address: PostalAddress?
    public var emailAddresses: [LabeledValue]?
    public var messagingNumbers: [LabeledValue]?
    public var phoneNumbers: [LabeledValue]?
    public var otherContactInfo: [LabeledValue]?
    public var organization: String?
    public var title: String?
    public var role: String?
    public var category: ContactCategory?
    public var carePlanUUID: UUID?
    public var carePlanID: String?
    public var metadata: EntityMetadata

    public init(
        id: String,
        name: PersonName,
        address: PostalAddress? = nil,
        emailAddresses: [LabeledValue]? = nil,
        messagingNumbers: [LabeledValue]? = nil,
        phoneNumbers: [LabeledValue]? = nil,
        otherContactInfo: [LabeledValue]? = nil,
        organization: String? = nil,
        title: String? = nil,
        role: String? = nil,
        category: ContactCategory? = nil,
        carePlanUUID: UUID? = nil,
        carePlanID: String? = nil,
        metadata: EntityMetadata
    ) {
        self.id = id
        self.name = name
        self.address = address
        self.emailAddresses = emailAddresses
        self.messagingNumbers = messagingNumbers
        self.phoneNumbers = phoneNumbers
        self.otherContactInfo = otherContactInfo
        self.organization = organization
        self.title = title
        self.role = role
        self.category = category
        self.carePlanUUID = carePlanUUID
        self.carePlanID = carePlanID
        self.metadata = metadata
    }
}

extension Contact: Codable {
    enum CodingKeys: String, CodingKey {
        case id, name, address, emailAddresses, messagingNumbers, phoneNumbers, otherContactInfo
        case organization, title, role, category, carePlanUUID, carePlanID
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decode(PersonName.self, forKey: .name)
        address = try container.decodeIfPresent(PostalAddress.self, forKey: .address)
        emailAddresses = try container.decodeIfPresent([LabeledValue].self, forKey: .emailAddresses)
        messagingNumbers = try container.decodeIfPresent([LabeledValue].self, forKey: .messagingNumbers)
        phoneNumbers = try container.decodeIfPresent([LabeledValue].self, forKey: .phoneNumbers)
        otherContactInfo = try container.decodeIfPresent([LabeledValue].self, forKey: .otherContactInfo)
        organization = try container.decodeIfPresent(String.self, forKey: .organization)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        role = try container.decodeIfPresent(String.self, forKey: .role)
        category = try container.decodeIfPresent(ContactCategory.self, forKey: .category)
        carePlanUUID = try container.decodeIfPresent(UUID.self, forKey: .carePlanUUID)
        carePlanID = try container.decodeIfPresent(String.self, forKey: .carePlanID)
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
        try container.encodeIfPresent(address, forKey: .address)
        try container.encodeIfPresent(emailAddresses, forKey: .emailAddresses)
        try container.encodeIfPresent(messagingNumbers, forKey: .messagingNumbers)
        try container.encodeIfPresent(phoneNumbers, forKey: .phoneNumbers)
        try container.encodeIfPresent(otherContactInfo, forKey: .otherContactInfo)
        try container.encodeIfPresent(organization, forKey: .organization)
        try container.encodeIfPresent(title, forKey: .title)
        try container.encodeIfPresent(role, forKey: .role)
        try container.encodeIfPresent(category, forKey: .category)
        try container.encodeIfPresent(carePlanUUID, forKey: .carePlanUUID)
        try container.encodeIfPresent(carePlanID, forKey: .carePlanID)
    }
}
