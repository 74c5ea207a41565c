import Foundation

// Decode-only stand-ins for CareKit 4.0's Codable structs (carekit-apple/CareKit, tag 4.0.0,
// CareKitStore/CareKitStore/Structs/*.swift and Synchronization/OCKRevisionRecord.swift), declaring
// exactly what their decoders demand. Synthesized decoders require every non-optional stored `var`,
// even one with a default (`uuid = UUID()`, `id = UUID().uuidString`, `impactsAdherence = true`,
// `nextVersionUUIDs = []`); optionals may be missing. OCKOutcomeValue, OCKBiologicalSex, OCKEntity and
// the knowledge vector decode by hand (mirrored as written). Decoding CareGate's wire JSON with them
// shows a CareKit 4.0 app accepts it.

/// The fields of `OCKVersionedObjectCompatible` + `OCKObjectCompatible` every entity declares.
struct CareKit4VersionedMirror: Decodable {
    let effectiveDate: Date
    let deletedDate: Date?
    let uuid: UUID
    let nextVersionUUIDs: [UUID]
    let previousVersionUUIDs: [UUID]
    let createdDate: Date?
    let updatedDate: Date?
    let schemaVersion: CareKit4SemanticVersionMirror?
    let groupIdentifier: String?
    let tags: [String]?
    let remoteID: String?
    let source: String?
    let userInfo: [String: String]?
    let asset: String?
    let notes: [CareKit4NoteMirror]?
    let timezone: TimeZone
}

struct CareKit4NoteMirror: Decodable {
    let author: String?
    let title: String?
    let content: String?
}

struct CareKit4SemanticVersionMirror: Decodable {
    let majorVersion: Int
    let minorVersion: Int
    let patchNumber: Int
}

/// OCKOutcomeValue's hand-written `init(from:)` (4.0): `type`, then `value` in that type, `kind` and
/// `units` if present, `createdDate` required (`decode(Date.self)`).
struct CareKit4OutcomeValueMirror: Decodable {
    enum Kind: String, Decodable { case integer, double, boolean, text, binary, date }
    enum CodingKeys: String, CodingKey { case kind, units, value, type, createdDate }
    let type: Kind
    let value: String
    let kind: String?
    let units: String?
    let createdDate: Date

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decode(Kind.self, forKey: .type)
        switch type {
        case .integer: value = String(try container.decode(Int.self, forKey: .value))
        case .double: value = String(try container.decode(Double.self, forKey: .value))
        case .boolean: value = String(try container.decode(Bool.self, forKey: .value))
        case .text: value = try container.decode(String.self, forKey: .value)
        case .binary: value = try container.decode(Data.self, forKey: .value).base64EncodedString()
        case .date: value = String(try container.decode(Date.self, forKey: .value).timeIntervalSinceReferenceDate)
        }
        kind = try container.decodeIfPresent(String.self, forKey: .kind)
        units = try container.decodeIfPresent(String.self, forKey: .units)
        createdDate = try container.decode(Date.self, forKey: .createdDate)
    }
}

/// OCKScheduleElement (synthesized): `calendar` is a required public `var` in 4.0.
struct CareKit4ScheduleElementMirror: Decodable {
    /// OCKScheduleElement.Duration's hand-written decoder: `isAllDay` true, else `seconds`.
    struct Duration: Decodable {
        let isAllDay: Bool?
        let seconds: Double?
    }
    let text: String?
    let duration: Duration
    let start: Date
    let end: Date?
    let interval: DateComponents
    let targetValues: [CareKit4OutcomeValueMirror]
    let calendar: Calendar
}

struct CareKit4ScheduleMirror: Decodable {
    let elements: [CareKit4ScheduleElementMirror]
}

struct CareKit4PatientMirror: Decodable {
    let id: String
    let name: PersonNameComponents
    let sex: String?
    let birthday: Date?
    let allergies: [String]?
}

struct CareKit4CarePlanMirror: Decodable {
    let patientUUID: UUID?
    let id: String
    let title: String
}

/// OCKPostalAddress (synthesized in 4.0): eight required strings.
struct CareKit4PostalAddressMirror: Decodable {
    let street, city, state, postalCode, country, isoCountryCode, subAdministrativeArea, subLocality: String
}

struct CareKit4LabeledValueMirror: Decodable {
    let label: String
    let value: String
}

struct CareKit4ContactMirror: Decodable {
    enum Category: String, Decodable { case careProvider, friendsAndFamily }
    let carePlanUUID: UUID?
    let id: String
    let name: PersonNameComponents
    let address: CareKit4PostalAddressMirror?
    let emailAddresses: [CareKit4LabeledValueMirror]?
    let messagingNumbers: [CareKit4LabeledValueMirror]?
    let phoneNumbers: [CareKit4LabeledValueMirror]?
    let otherContactInfo: [CareKit4LabeledValueMirror]?
    let organization: String?
    let title: String?
    let role: String?
    let category: Category?
}

struct CareKit4TaskMirror: Decodable {
    let carePlanUUID: UUID?
    let id: String
    let title: String?
    let instructions: String?
    let impactsAdherence: Bool
    let schedule: CareKit4ScheduleMirror
    let groupIdentifier: String?
    let tags: [String]?
}

struct CareKit4OutcomeMirror: Decodable {
    let taskUUID: UUID
    let id: String
    let taskOccurrenceIndex: Int
    let values: [CareKit4OutcomeValueMirror]
}

/// An entity decoded as both its own mirror and the versioned fields, as CareKit's one struct would.
struct CareKit4Decoded<Mirror: Decodable>: Decodable {
    let own: Mirror
    let versioned: CareKit4VersionedMirror

    init(from decoder: any Decoder) throws {
        own = try Mirror(from: decoder)
        versioned = try CareKit4VersionedMirror(from: decoder)
    }
}

/// OCKEntity's hand-written decoder: `type` (OCKEntity.EntityType), then `object` as that type.
enum CareKit4EntityMirror: Decodable {
    case patient(CareKit4Decoded<CareKit4PatientMirror>)
    case carePlan(CareKit4Decoded<CareKit4CarePlanMirror>)
    case contact(CareKit4Decoded<CareKit4ContactMirror>)
    case task(CareKit4Decoded<CareKit4TaskMirror>)
    case outcome(CareKit4Decoded<CareKit4OutcomeMirror>)

    enum EntityType: String, Decodable { case patient, carePlan, contact, task, healthKitTask, outcome }
    enum Keys: CodingKey { case type, object }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        switch try container.decode(EntityType.self, forKey: .type) {
        case .patient: self = .patient(try container.decode(CareKit4Decoded<CareKit4PatientMirror>.self, forKey: .object))
        case .carePlan: self = .carePlan(try container.decode(CareKit4Decoded<CareKit4CarePlanMirror>.self, forKey: .object))
        case .contact: self = .contact(try container.decode(CareKit4Decoded<CareKit4ContactMirror>.self, forKey: .object))
        case .task, .healthKitTask: self = .task(try container.decode(CareKit4Decoded<CareKit4TaskMirror>.self, forKey: .object))
        case .outcome: self = .outcome(try container.decode(CareKit4Decoded<CareKit4OutcomeMirror>.self, forKey: .object))
        }
    }
}

/// OCKRevisionRecord.KnowledgeVector's hand-written decoder: an array of `{id, clock}`, made a dictionary
/// with `uniqueKeysWithValues` (a repeated id traps in CareKit; here it is reported).
struct CareKit4KnowledgeVectorMirror: Decodable {
    struct ClockInfo: Decodable {
        let id: UUID
        let clock: Int
    }
    enum Keys: CodingKey { case processes }
    let processes: [UUID: Int]

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let clocks = try container.decode([ClockInfo].self, forKey: .processes)
        processes = try Dictionary(clocks.map { ($0.id, $0.clock) }) { _, _ in
            throw DecodingError.dataCorruptedError(forKey: .processes, in: container, debugDescription: "a process twice")
        }
    }
}

/// OCKRevisionRecord (synthesized): `entities`, `knowledgeVector`.
struct CareKit4RevisionRecordMirror: Decodable {
    let entities: [CareKit4EntityMirror]
    let knowledgeVector: CareKit4KnowledgeVectorMirror
}
