import FHIRCore
import Foundation

/// FHIR dates as the mappings use them, beyond reading them (``FHIRDateText``): day numbers in a zone.
enum FHIRDates {
    /// The occurrence of a daily all-day schedule starting on `start`'s day that `time` falls on: the
    /// number of calendar days between them in `zone` (what the schedule's own arithmetic gives, without
    /// walking it); nil before `start`.
    static func dayIndex(of time: Date, from start: Date, in zone: TimeZone) -> Int? {
        guard time >= start else { return nil }
        return CivilCalendar.localDay(of: time, in: zone) - CivilCalendar.localDay(of: start, in: zone)
    }

    /// The minutes after midnight of a FHIR `time` (`Timing.repeat.timeOfDay`), read by the core grammar;
    /// seconds may be left out, as data in the wild does.
    static func minutesOfDay(_ text: String) -> Int? {
        guard let time = FHIRTemporal(text, as: .fhirPathTime), time.precision >= .minute, time.second < 60 else { return nil }
        return time.hour * 60 + time.minute
    }

    /// The instant a Period whose `end` is `text` ends. A FHIR Period's end includes everything its
    /// precision covers (an end of 2025-06-30 includes that whole day), so an end without a time of day
    /// ends at the start of the next day, month or year in `zone`.
    static func periodEnd(_ text: String, in zone: TimeZone) -> Date? {
        guard let value = FHIRDateText.value(text), let date = value.date(in: zone) else { return nil }
        guard value.kind == .date else { return date }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let unit: Calendar.Component = value.precision == .year ? .year : value.precision == .month ? .month : .day
        return calendar.date(byAdding: unit, value: 1, to: date)
    }
}

/// The waking hours over which "N times a day" without times of day is spread: the first dose at the
/// start, the last at the end, the others evenly between (3 a day in 08:00-20:00: 08:00, 14:00, 20:00).
/// A mapping names them with `waking-hours: "08:00-20:00"` (the default).
public struct WakingHours: Sendable, Hashable {
    public let startMinutes: Int
    public let endMinutes: Int

    public static let standard = WakingHours(startMinutes: 8 * 60, endMinutes: 20 * 60)

    init(startMinutes: Int, endMinutes: Int) {
        self.startMinutes = startMinutes
        self.endMinutes = endMinutes
    }

    /// Parses `HH:MM-HH:MM` (start before end).
    public init?(_ text: String) {
        let parts = text.split(separator: "-").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, let start = Self.minutes(parts[0]), let end = Self.minutes(parts[1]), start < end else { return nil }
        startMinutes = start
        endMinutes = end
    }

    /// The minutes after midnight of `count` times spread over the waking hours.
    func times(_ count: Int) -> [Int] {
        guard count > 1 else { return [startMinutes] }
        let step = Double(endMinutes - startMinutes) / Double(count - 1)
        return (0..<count).map { startMinutes + Int((Double($0) * step).rounded()) }
    }

    /// `HH:MM` or `HH:MM:SS` as minutes after midnight.
    static func minutes(_ text: String) -> Int? {
        let parts = text.split(separator: ":")
        guard parts.count >= 2, parts.count <= 3, let hour = Int(parts[0]), let minute = Int(parts[1]),
              (0..<24).contains(hour), (0..<60).contains(minute) else { return nil }
        return hour * 60 + minute
    }
}
