import Foundation

// Decode-only stand-ins, shared by the test targets, for CareKit 4.0's Codable structs (carekit-apple/CareKit, tag 4.0.0,
// CareKitStore/CareKitStore/Structs/*.swift and Synchronization/OCKRevisionRecord.swift), declaring
// exactly what their decoders demand. Synthesized decoders require every non-optional stored `var`,
// even one with a default (`uuid = UUID()`, `id = UUID().uuidString`, `impactsAdherence = true`,
// `nextVersionUUIDs = []`); optionals may be missing. OCKOutcomeValue, OCKBiologicalSex, OCKEntity and
// the knowledge vector decode by hand (mirrored as written). Decoding CareGate's wire JSON with them
// shows a CareKit 4.0 app accepts it.

/// The fields of `OCKVersionedObjectCompatible` + `OCKObjectCompatible` every entity declares.
public struct CareKit4VersionedMirror: Decodable {
    public let effectiveDate: Date
    public let deletedDate: Date?
    public let uuid: UUID
    public let nextVersionUUIDs: [UUID]
    public let previousVersionUUIDs: [UUID]
    public let createdDate: Date?
    public let updatedDate: Date?
    public let schemaVersion: CareKit4SemanticVersionMirror?
    public let groupIdentifier: String?
    public let tags: [String]?
    public let remoteID: String?
    public let source: String?
    public let userInfo: [String: String]?
    public let asset: String?
    public let notes: [CareKit4NoteMirror]?
    public let timezone: TimeZone
}

public struct CareKit4NoteMirror: Decodable {
    public let author: String?
    public let title: String?
    public let content: String?
}

public struct CareKit4SemanticVersionMirror: Decodable {
    public let majorVersion: Int
    public let minorVersion: Int
    public let patchNumber: Int
}

/// OCKOutcomeValue's hand-written `init(from:)` (4.0): `type`, then `value` in that type, `kind` and
/// `units` if present, `createdDate` required (`decode(Date.self)`).
public struct CareKit4OutcomeValueMirror: Decodable {
    public enum Kind: String, Decodable { case integer, double, boolean, text, binary, date }
    public enum CodingKeys: String, CodingKey { case kind, units, value, type, createdDate }
    public let type: Kind
    public let value: String
    public let kind: String?
    public let units: String?
    public let createdDate: Date

    public init(from decoder: any Decoder) throws {
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
public struct CareKit4ScheduleElementMirror: Decodable {
    /// OCKScheduleElement.Duration's hand-written decoder: `isAllDay` true, else `seconds`.
    public struct Duration: Decodable {
        public let isAllDay: Bool?
        public let seconds: Double?
    }
    public let text: String?
    public let duration: Duration
    public let start: Date
    public let end: Date?
    public let interval: DateComponents
    public let targetValues: [CareKit4OutcomeValueMirror]
    public let calendar: Calendar
}

public struct CareKit4ScheduleMirror: Decodable {
    public let elements: [CareKit4ScheduleElementMirror]
}

public struct CareKit4PatientMirror: Decodable {
    public let id: String
    public let name: PersonNameComponents
    public let sex: String?
    public let birthday: Date?
    public let allergies: [String]?
}

public struct CareKit4CarePlanMirror: Decodable {
    public let patientUUID: UUID?
    public let id: String
    public let title: String
}

/// OCKPostalAddress (synthesized in 4.0): eight required strings.
public struct CareKit4PostalAddressMirror: Decodable {
    public let street, city, state, postalCode, country, isoCountryCode, subAdministrativeArea, subLocality: String
}

public struct CareKit4LabeledValueMirror: Decodable {
    public let label: String
    public let value: String
}

public struct CareKit4ContactMirror: Decodable {
    public enum Category: String, Decodable { case careProvider, friendsAndFamily }
    public let carePlanUUID: UUID?
    public let id: String
    public let name: PersonNameComponents
    public let address: CareKit4PostalAddressMirror?
    public let emailAddresses: [CareKit4LabeledValueMirror]?
    public let messagingNumbers: [CareKit4LabeledValueMirror]?
    public let phoneNumbers: [CareKit4LabeledValueMirror]?
    public let otherContactInfo: [CareKit4LabeledValueMirror]?
    public let organization: String?
    public let title: String?
    public let role: String?
    public let category: Category?
}

public struct CareKit4TaskMirror: Decodable {
    public let carePlanUUID: UUID?
    public let id: String
    public let title: String?
    public let instructions: String?
    public let impactsAdherence: Bool
    public let schedule: CareKit4ScheduleMirror
    public let groupIdentifier: String?
    public let tags: [String]?
}

/// OCKHealthKitLinkage (CareKitStore/Structs/OCKHealthKitLinkage.swift, synthesized): `quantityIdentifier`
/// (HKQuantityTypeIdentifier, a RawRepresentable String: its raw value), `quantityType` (its
/// QuantityType: `cumulative` or `discrete`) and the private `unitString` (HKUnit's unitString), all
/// required.
public struct CareKit4HealthKitLinkageMirror: Decodable {
    public enum QuantityType: String, Decodable { case cumulative, discrete }
    public let quantityIdentifier: String
    public let quantityType: QuantityType
    public let unitString: String
}

/// OCKHealthKitTask (CareKitStore/HealthKit/OCKHealthKitTask.swift, synthesized): OCKTask's fields and a
/// required `healthKitLinkage`.
public struct CareKit4HealthKitTaskMirror: Decodable {
    public let carePlanUUID: UUID?
    public let healthKitLinkage: CareKit4HealthKitLinkageMirror
    public let id: String
    public let title: String?
    public let instructions: String?
    public let impactsAdherence: Bool
    public let schedule: CareKit4ScheduleMirror
    public let groupIdentifier: String?
    public let tags: [String]?
}

public struct CareKit4OutcomeMirror: Decodable {
    public let taskUUID: UUID
    public let id: String
    public let taskOccurrenceIndex: Int
    public let values: [CareKit4OutcomeValueMirror]
}

/// An entity decoded as both its own mirror and the versioned fields, as CareKit's one struct would.
public struct CareKit4Decoded<Mirror: Decodable>: Decodable {
    public let own: Mirror
    public let versioned: CareKit4VersionedMirror

    public init(from decoder: any Decoder) throws {
        own = try Mirror(from: decoder)
        versioned = try CareKit4VersionedMirror(from: decoder)
    }
}

/// OCKEntity's hand-written decoder: `type` (OCKEntity.EntityType), then `object` as that type.
public enum CareKit4EntityMirror: Decodable {
    case patient(CareKit4Decoded<CareKit4PatientMirror>)
    case carePlan(CareKit4Decoded<CareKit4CarePlanMirror>)
    case contact(CareKit4Decoded<CareKit4ContactMirror>)
    case task(CareKit4Decoded<CareKit4TaskMirror>)
    case healthKitTask(CareKit4Decoded<CareKit4HealthKitTaskMirror>)
    case outcome(CareKit4Decoded<CareKit4OutcomeMirror>)

    public enum EntityType: String, Decodable { case patient, carePlan, contact, task, healthKitTask, outcome }
    public enum Keys: CodingKey { case type, object }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        switch try container.decode(EntityType.self, forKey: .type) {
        case .patient: self = .patient(try container.decode(CareKit4Decoded<CareKit4PatientMirror>.self, forKey: .object))
        case .carePlan: self = .carePlan(try container.decode(CareKit4Decoded<CareKit4CarePlanMirror>.self, forKey: .object))
        case .contact: self = .contact(try container.decode(CareKit4Decoded<CareKit4ContactMirror>.self, forKey: .object))
        case .task: self = .task(try container.decode(CareKit4Decoded<CareKit4TaskMirror>.self, forKey: .object))
        case .healthKitTask: self = .healthKitTask(try container.decode(CareKit4Decoded<CareKit4HealthKitTaskMirror>.self, forKey: .object))
        case .outcome: self = .outcome(try container.decode(CareKit4Decoded<CareKit4OutcomeMirror>.self, forKey: .object))
        }
    }
}

/// OCKRevisionRecord.KnowledgeVector's hand-written decoder: an array of `{id, clock}`, made a dictionary
/// with `uniqueKeysWithValues` (a repeated id traps in CareKit; here it is reported).
public struct CareKit4KnowledgeVectorMirror: Decodable {
    public struct ClockInfo: Decodable {
        public let id: UUID
        public let clock: Int
    }
    public enum Keys: CodingKey { case processes }
    public let processes: [UUID: Int]

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let clocks = try container.decode([ClockInfo].self, forKey: .processes)
        processes = try Dictionary(clocks.map { ($0.id, $0.clock) }) { _, _ in
            throw DecodingError.dataCorruptedError(forKey: .processes, in: container, debugDescription: "a process twice")
        }
    }
}

/// OCKRevisionRecord (synthesized): `entities`, `knowledgeVector`.
public struct CareKit4RevisionRecordMirror: Decodable {
    public let entities: [CareKit4EntityMirror]
    public let knowledgeVector: CareKit4KnowledgeVectorMirror
}
