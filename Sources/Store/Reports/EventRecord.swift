import CareModel
import Foundation

/// One event in the JSON of `caregate store events --format json`: the occurrence, the task version that
/// owns it, and its outcome (CareModel's encoding) when there is one.
public struct EventRecord: Encodable, Sendable {
    public var taskID: String
    public var taskUUID: UUID
    public var taskTitle: String?
    public var occurrence: Int
    public var start: Date
    public var end: Date
    public var outcome: Outcome?

    public init(_ event: Event) {
        taskID = event.task.id
        taskUUID = event.task.uuid
        taskTitle = event.task.title
        occurrence = event.scheduleEvent.occurrence
        start = event.scheduleEvent.start
        end = event.scheduleEvent.end
        outcome = event.outcome
    }

    /// One event as a JSON object, dates in ISO 8601, for an array written element by element.
    public static func json(_ event: Event) throws -> Data {
        try encoder.encode(EventRecord(event))
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}
