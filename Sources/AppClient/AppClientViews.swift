import CareModel
import Foundation

/// One event of a patient's day, as `GET /carekit/v1/events` serves it: the occurrence of a task version,
/// with that version and the outcome recorded for it, if any. CareKit has no Codable event; an app builds
/// its `OCKEvent` from ``task`` and ``outcome``.
public struct DayEvent: Sendable, Decodable, Equatable {
    public var taskID: String
    public var taskUUID: UUID
    public var taskTitle: String?
    /// The occurrence index (CareKit's `OCKScheduleEvent.occurrence`), counted across the schedule's elements.
    public var occurrence: Int
    public var start: Date
    public var end: Date
    /// The task version that owns the occurrence (`OCKTask`).
    public var task: CareTask
    /// The outcome of the occurrence (`OCKOutcome`): the tip created last when devices' versions conflict.
    public var outcome: Outcome?

    private enum CodingKeys: String, CodingKey {
        case taskID, taskUUID, taskTitle, occurrence, start, end, task, outcome
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        taskID = try container.decode(String.self, forKey: .taskID)
        taskUUID = try container.decode(UUID.self, forKey: .taskUUID)
        taskTitle = try container.decodeIfPresent(String.self, forKey: .taskTitle)
        occurrence = try container.decode(Int.self, forKey: .occurrence)
        start = try Self.instant(container, .start)
        end = try Self.instant(container, .end)
        task = try container.decode(CareTask.self, forKey: .task)
        outcome = try container.decodeIfPresent(Outcome.self, forKey: .outcome)
    }

    /// `start` and `end` are ISO 8601 text (the entities inside use CareKit's seconds since 2001).
    private static func instant(_ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> Date {
        let text = try container.decode(String.self, forKey: key)
        guard let date = try? Date(text, strategy: .iso8601) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "not an ISO 8601 date-time")
        }
        return date
    }
}

/// A patient's Insights, as `GET /carekit/v1/insights` serves them: one value per day per series, what
/// CareKit's chart views (`OCKDataSeries`) take.
public struct InsightsChart: Sendable, Decodable, Equatable {
    /// One series: adherence (percent) or a measurement's daily mean, with its target band.
    public struct Series: Sendable, Decodable, Equatable {
        /// `adherence`, or the measurement's kind (e.g. `http://loinc.org|8480-6`).
        public var id: String
        public var title: String
        public var unit: String?
        /// One value per day of ``InsightsChart/days``; nil for a day without one.
        public var values: [Double?]
        public var targetLow: Double?
        public var targetHigh: Double?
    }

    /// The first day, `YYYY-MM-DD`.
    public var from: String
    public var to: String
    /// The IANA zone the days are read in.
    public var timeZone: String
    /// Each day, `YYYY-MM-DD`.
    public var days: [String]
    /// The x-axis markers under each day (the weekday's initial).
    public var markers: [String]
    public var series: [Series]
}
