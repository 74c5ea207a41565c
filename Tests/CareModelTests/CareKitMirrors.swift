import Foundation

// Decode-only stand-ins for CareKitStore's structs, declaring exactly what CareKit's decoders demand:
// non-optional stored properties are required keys (synthesized Decodable), optional ones may be missing.
// OCKOutcomeValue and OCKPostalAddress decode by hand and require every key (see their mirrors).
// Decoding CareGate's output with them shows a CareKit app would accept it. Shapes follow
// carekit-apple/CareKit CareKitStore/CareKitStore/Structs/*.swift (2.1 and 3.0).

/// `OCKVersionedObjectCompatible` + `OCKObjectCompatible` required keys (CareKit 3.0).
struct CareKitVersionedMirror: Decodable {
    let uuid: UUID
    let effectiveDate: Date
    let previousVersionUUIDs: [UUID]
    let nextVersionUUIDs: [UUID]
    let timezone: TimeZone
    let deletedDate: Date?
    let createdDate: Date?
    let groupIdentifier: String?
    let tags: [String]?
    let remoteID: String?
    let source: String?
    let userInfo: [String: String]?
    let asset: String?
    let notes: [CareKitNoteMirror]?
}

struct CareKitNoteMirror: Decodable {
    let author: String?
    let title: String?
    let content: String?
}

/// OCKOutcomeValue's hand-written init(from:) (CareKit 2.1): `decode(T?.self)` on every key, so every key
/// must be present (null allowed), and `timezone` must be a time zone.
struct CareKitOutcomeValueMirror: Decodable {
    enum Kind: String, Decodable { case integer, double, boolean, text, binary, date }
    enum CodingKeys: String, CodingKey {
        case kind, units, uuid, value, type, index, createdDate, updatedDate, schemaVersion, tags, group, remoteID, userInfo, source, timezone
    }
    let type: Kind
    let value: String

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        type = try c.decode(Kind.self, forKey: .type)
        switch type {
        case .integer: value = String(try c.decode(Int.self, forKey: .value))
        case .double: value = String(try c.decode(Double.self, forKey: .value))
        case .boolean: value = String(try c.decode(Bool.self, forKey: .value))
        case .text: value = try c.decode(String.self, forKey: .value)
        case .binary: value = try c.decode(Data.self, forKey: .value).base64EncodedString()
        case .date: value = String(try c.decode(Date.self, forKey: .value).timeIntervalSinceReferenceDate)
        }
        _ = try c.decode(String?.self, forKey: .kind)
        _ = try c.decode(String?.self, forKey: .units)
        _ = try c.decode(Int?.self, forKey: .index)
        _ = try c.decode(UUID?.self, forKey: .uuid)
        _ = try c.decode(Date?.self, forKey: .createdDate)
        _ = try c.decode(Date?.self, forKey: .updatedDate)
        _ = try c.decode(CareKitSemanticVersionMirror?.self, forKey: .schemaVersion)
        _ = try c.decode(String?.self, forKey: .group)
        _ = try c.decode([String]?.self, forKey: .tags)
        _ = try c.decode(String?.self, forKey: .remoteID)
        _ = try c.decode(String?.self, forKey: .source)
        _ = try c.decode([String: String]?.self, forKey: .userInfo)
        _ = try c.decode(TimeZone.self, forKey: .timezone)
    }
}

struct CareKitSemanticVersionMirror: Decodable {
    let majorVersion: Int
    let minorVersion: Int
    let patchNumber: Int
}

/// OCKScheduleElement (3.0): synthesized, including its private `calendar`.
struct CareKitScheduleElementMirror: Decodable {
    struct Duration: Decodable {
        let isAllDay: Bool?
        let seconds: Double?
    }
    let calendar: Calendar
    let text: String?
    let duration: Duration
    let start: Date
    let end: Date?
    let interval: DateComponents
    let targetValues: [CareKitOutcomeValueMirror]
}

struct CareKitScheduleMirror: Decodable {
    let elements: [CareKitScheduleElementMirror]
}

struct CareKitTaskMirror: Decodable {
    let id: String
    let title: String?
    let instructions: String?
    let impactsAdherence: Bool
    let schedule: CareKitScheduleMirror
    let carePlanUUID: UUID?
}

struct CareKitPatientMirror: Decodable {
    let id: String
    let name: PersonNameComponents
    let sex: String?
    let birthday: Date?
    let allergies: [String]?
}

struct CareKitCarePlanMirror: Decodable {
    let id: String
    let title: String
    let patientUUID: UUID?
}

/// OCKPostalAddress decodes all eight keys with `decode(String.self)`.
struct CareKitPostalAddressMirror: Decodable {
    let street, subLocality, city, subAdministrativeArea, state, postalCode, country, isoCountryCode: String
}

struct CareKitLabeledValueMirror: Decodable {
    let label: String
    let value: String
}

struct CareKitContactMirror: Decodable {
    enum Category: String, Decodable { case careProvider, friendsAndFamily }
    let id: String
    let name: PersonNameComponents
    let address: CareKitPostalAddressMirror?
    let emailAddresses: [CareKitLabeledValueMirror]?
    let messagingNumbers: [CareKitLabeledValueMirror]?
    let phoneNumbers: [CareKitLabeledValueMirror]?
    let otherContactInfo: [CareKitLabeledValueMirror]?
    let organization: String?
    let title: String?
    let role: String?
    let category: Category?
    let carePlanUUID: UUID?
}

struct CareKitOutcomeMirror: Decodable {
    let taskUUID: UUID
    let taskOccurrenceIndex: Int
    let values: [CareKitOutcomeValueMirror]
}
