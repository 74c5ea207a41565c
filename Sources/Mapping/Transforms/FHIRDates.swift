import FHIRCore
import Foundation

/// FHIR date, dateTime and instant text as a point in time. Partial dates (`2024`, `2024-03`) stand for
/// the start of that year or month; values without a time or offset are read in the given zone (the
/// import's `--time-zone`), as FHIR says they are local to the patient.
enum FHIRDates {
    /// The start of `text`, or nil when it is not a FHIR date, dateTime or instant.
    static func date(_ text: String, in zone: TimeZone) -> Date? {
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ length: Int) -> Int? {
            guard start + length <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<start + length] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard let year = number(0, 4) else { return nil }
        var components = DateComponents(year: year, month: 1, day: 1, hour: 0, minute: 0, second: 0)
        var index = 4
        if bytes.count > index {
            guard bytes[index] == UInt8(ascii: "-"), let month = number(index + 1, 2), (1...12).contains(month) else { return nil }
            components.month = month
            index += 3
        }
        if bytes.count > index {
            guard bytes[index] == UInt8(ascii: "-"), let day = number(index + 1, 2), (1...31).contains(day) else { return nil }
            components.day = day
            index += 3
        }
        var offsetSeconds: Int?
        var fraction = 0.0
        if bytes.count > index {
            guard bytes[index] == UInt8(ascii: "T"), let hour = number(index + 1, 2), hour < 24,
                  bytes.count > index + 3, bytes[index + 3] == UInt8(ascii: ":"), let minute = number(index + 4, 2), minute < 60
            else { return nil }
            components.hour = hour
            components.minute = minute
            index += 6
            if bytes.count > index, bytes[index] == UInt8(ascii: ":") {
                guard let second = number(index + 1, 2), second < 61 else { return nil }
                components.second = min(second, 59)
                index += 3
                if bytes.count > index, bytes[index] == UInt8(ascii: ".") {
                    var end = index + 1
                    while end < bytes.count, bytes[end] >= 48 && bytes[end] <= 57 { end += 1 }
                    fraction = Double("0" + String(decoding: bytes[index..<end], as: UTF8.self)) ?? 0
                    index = end
                }
            }
            if bytes.count > index {
                if bytes[index] == UInt8(ascii: "Z") {
                    offsetSeconds = 0
                    index += 1
                } else if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    guard let hours = number(index + 1, 2), bytes.count > index + 3, bytes[index + 3] == UInt8(ascii: ":"),
                          let minutes = number(index + 4, 2) else { return nil }
                    offsetSeconds = (hours * 3600 + minutes * 60) * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
                    index += 6
                }
            }
        }
        guard index == bytes.count, let month = components.month, let day = components.day, let hour = components.hour,
              let minute = components.minute, let second = components.second,
              day <= CivilCalendar.daysInMonth(year: year, month: month)  // 2025-02-30
        else { return nil }
        let local = Double(((CivilCalendar.days(year: year, month: month, day: day) * 24 + hour) * 60 + minute) * 60 + second)
        if let offsetSeconds { return Date(timeIntervalSince1970: local - Double(offsetSeconds) + fraction) }
        // A local time: the zone's offset, when it is the same a day either side; near a change of
        // offset, Calendar decides what a skipped or repeated hour means.
        let before = zone.secondsFromGMT(for: Date(timeIntervalSince1970: local - 86_400))
        if before == zone.secondsFromGMT(for: Date(timeIntervalSince1970: local + 86_400)) {
            return Date(timeIntervalSince1970: local - Double(before) + fraction)
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar.date(from: components)?.addingTimeInterval(fraction)
    }

    /// The occurrence of a daily all-day schedule starting on `start`'s day that `time` falls on: the
    /// number of calendar days between them in `zone` (what the schedule's own arithmetic gives, without
    /// walking it); nil before `start`.
    static func dayIndex(of time: Date, from start: Date, in zone: TimeZone) -> Int? {
        guard time >= start else { return nil }
        return CivilCalendar.localDay(of: time, in: zone) - CivilCalendar.localDay(of: start, in: zone)
    }

    /// Whether `text` carries a time of day (a dateTime with `T`), not only a date.
    static func hasTime(_ text: String) -> Bool { text.contains("T") }
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
