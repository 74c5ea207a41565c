import Foundation

/// CareKit's JSON shape for schedule elements: `OCKScheduleElement`'s synthesized coding writes `start`,
/// `end`, `interval` (Foundation's `DateComponents` coding), `text`, `targetValues`, `duration`
/// (`{"isAllDay": Bool, "seconds": Double}`) and its private `calendar` (Foundation's `Calendar` coding,
/// which carries the time zone). Decoding re-runs the initializer's checks, so a bad schedule in a file
/// is a typed error.
extension ScheduleElement: Codable {
    enum CodingKeys: String, CodingKey {
        case calendar, text, duration, start, end, interval, targetValues
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let calendar = try container.decodeIfPresent(Calendar.self, forKey: .calendar)
        try self.init(
            start: try container.decode(Date.self, forKey: .start),
            end: try container.decodeIfPresent(Date.self, forKey: .end),
            interval: try container.decode(DateComponents.self, forKey: .interval),
            text: try container.decodeIfPresent(String.self, forKey: .text),
            targetValues: try container.decodeIfPresent([OutcomeValue].self, forKey: .targetValues) ?? [],
            duration: try container.decodeIfPresent(Duration.self, forKey: .duration) ?? .hours(1),
            timeZone: calendar?.timeZone ?? TimeZone(identifier: "UTC") ?? .current
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(calendar, forKey: .calendar)
        try container.encodeIfPresent(text, forKey: .text)
        try container.encode(duration, forKey: .duration)
        try container.encode(start, forKey: .start)
        try container.encodeIfPresent(end, forKey: .end)
        try container.encode(interval, forKey: .interval)
        try container.encode(targetValues, forKey: .targetValues)
    }
}

extension ScheduleElement.Duration: Codable {
    enum CodingKeys: String, CodingKey {
        case isAllDay, seconds
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if try container.decodeIfPresent(Bool.self, forKey: .isAllDay) == true {
            self = .allDay
        } else if let seconds = try container.decodeIfPresent(Double.self, forKey: .seconds) {
            self = .seconds(seconds)
        } else {
            throw DecodingError.dataCorruptedError(
                forKey: .seconds, in: container, debugDescription: "duration has neither isAllDay nor seconds")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self == .allDay, forKey: .isAllDay)
        if case .seconds(let seconds) = self {
            try container.encode(seconds, forKey: .seconds)
        }
    }
}

/// `OCKSchedule`'s synthesized coding: `{"elements": [...]}`.
extension Schedule: Codable {
    enum CodingKeys: String, CodingKey {
        case elements
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(composing: try container.decode([ScheduleElement].self, forKey: .elements))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(elements, forKey: .elements)
    }
}
