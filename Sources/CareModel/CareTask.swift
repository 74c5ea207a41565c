import Foundation

/// Something the patient is to do on a schedule (CareKit `OCKTask`).
///
/// Named `CareTask`, not `Task`, so that it does not shadow Swift's concurrency `Task` in modules that
/// import CareModel. `carePlanUUID` is CareKit's link to one care plan version; `carePlanID` links the
/// plan's stable id.
public struct CareTask: VersionedEntity {
    public static let kind = EntityKind.task

    public let id: String
    public var title: String?
    public var instructions: String?
    /// Whether the task counts towards the patient's adherence (CareKit default: true).
    public var impactsAdherence: Bool
    public var schedule: Schedule
    public var carePlanUUID: UUID?
    public var carePlanID: String?
    /// CareKit's link to a HealthKit quantity type: with one, the task is an `OCKHealthKitTask` (entity type
    /// `healthKitTask`) whose outcomes the app reads from HealthKit. A task keeps it, or its absence, for
    /// its whole version chain: CareKit links versions only within one entity type.
    public var healthKitLinkage: HealthKitLinkage?
    public var metadata: EntityMetadata

    public init(
        id: String,
        title: String?,
        instructions: String? = nil,
        impactsAdherence: Bool = true,
        schedule: Schedule,
        carePlanUUID: UUID? = nil,
        carePlanID: String? = nil,
        healthKitLinkage: HealthKitLinkage? = nil,
        metadata: EntityMetadata
    ) {
        self.id = id
        self.title = title
        self.instructions = instructions
        self.impactsAdherence = impactsAdherence
        self.schedule = schedule
        self.carePlanUUID = carePlanUUID
        self.carePlanID = carePlanID
        self.healthKitLinkage = healthKitLinkage
        self.metadata = metadata
    }
}

extension CareTask: Codable {
    enum CodingKeys: String, CodingKey {
        case id, title, instructions, impactsAdherence, schedule, carePlanUUID, carePlanID, healthKitLinkage
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        instructions = try container.decodeIfPresent(String.self, forKey: .instructions)
        impactsAdherence = try container.decodeIfPresent(Bool.self, forKey: .impactsAdherence) ?? true
        schedule = try container.decode(Schedule.self, forKey: .schedule)
        carePlanUUID = try container.decodeIfPresent(UUID.self, forKey: .carePlanUUID)
        carePlanID = try container.decodeIfPresent(String.self, forKey: .carePlanID)
        healthKitLinkage = try container.decodeIfPresent(HealthKitLinkage.self, forKey: .healthKitLinkage)
        metadata = try EntityMetadata(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(title, forKey: .title)
        try container.encodeIfPresent(instructions, forKey: .instructions)
        try container.encode(impactsAdherence, forKey: .impactsAdherence)
        try container.encode(schedule, forKey: .schedule)
        try container.encodeIfPresent(carePlanUUID, forKey: .carePlanUUID)
        try container.encodeIfPresent(carePlanID, forKey: .carePlanID)
        // Only when set: an unlinked task's stored JSON, and so its content hash, is what it always was.
        try container.encodeIfPresent(healthKitLinkage, forKey: .healthKitLinkage)
        try metadata.encode(to: encoder)
    }
}

extension CareTask {
    /// The tag of an Observation log: the all-day daily task an import logs a patient's readings of one
    /// code on when no plan or order asked for them. Its occurrences are no to-dos; its readings are.
    public static let observationLogTag = "log"

    /// Whether this task is an Observation log (tagged ``observationLogTag``).
    public var isObservationLog: Bool { metadata.tags?.contains(Self.observationLogTag) ?? false }

    /// Whether this task is linked to HealthKit (served as CareKit's `OCKHealthKitTask`).
    public var isHealthKitTask: Bool { healthKitLinkage != nil }
}
