import Foundation

/// What the patient did for one occurrence of one task version (CareKit `OCKOutcome`).
///
/// It names the task version by `taskUUID` and the occurrence by `taskOccurrenceIndex` (the index counts
/// across all elements of the schedule, in time order). Its `id` is CareKit's: `<taskUUID>_<index>`.
/// `taskID` (CareGate's addition) is the task's stable id.
public struct Outcome: VersionedEntity {
    public static let kind = EntityKind.outcome

    public var taskUUID: UUID
    public var taskID: String?
    public var taskOccurrenceIndex: Int
    public var values: [OutcomeValue]
    public var metadata: EntityMetadata

    /// CareKit's outcome identity: one outcome per task version and occurrence.
    public var id: String { Self.id(taskUUID: taskUUID, occurrence: taskOccurrenceIndex) }

    /// The id of the outcome of occurrence `occurrence` of task version `taskUUID`.
    public static func id(taskUUID: UUID, occurrence: Int) -> String { "\(taskUUID.canonicalString)_\(occurrence)" }

    public init(
        taskUUID: UUID,
        taskID: String? = nil,
        taskOccurrenceIndex: Int,
        values: [OutcomeValue],
        metadata: EntityMetadata
    ) {
        self.taskUUID = taskUUID
        self.taskID = taskID
        self.taskOccurrenceIndex = taskOccurrenceIndex
        self.values = values
        self.metadata = metadata
    }
}

extension Outcome: Codable {
    enum CodingKeys: String, CodingKey {
        case taskUUID, taskID, taskOccurrenceIndex, values
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        taskUUID = try container.decode(UUID.self, forKey: .taskUUID)
        taskID = try container.decodeIfPresent(String.self, forKey: .taskID)
        taskOccurrenceIndex = try container.decode(Int.self, forKey: .taskOccurrenceIndex)
        values = try container.decodeIfPresent([OutcomeValue].self, forKey: .values) ?? []
        metadata = try EntityMetadata(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(taskUUID, forKey: .taskUUID)
        try container.encodeIfPresent(taskID, forKey: .taskID)
        try container.encode(taskOccurrenceIndex, forKey: .taskOccurrenceIndex)
        try container.encode(values, forKey: .values)
        try metadata.encode(to: encoder)
    }
}
