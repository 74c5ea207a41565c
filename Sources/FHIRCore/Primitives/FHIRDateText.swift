import Foundation

/// FHIR date, dateTime and instant text as a point in time, checked strictly: `2025-02-30` and
/// `T25:00:00Z` are refused, never rolled over. Partial dates (`2024`, `2024-03`) stand for the start of
/// that year or month; values without a time or offset are read in the given zone, as FHIR says they
/// are local. The one date parser of CareGate: the mappings and the command line both use it.
public enum FHIRDateText {
    /// The start of `text`, or nil when it is not a FHIR date, dateTime or instant.
    public static func date(_ text: String, in zone: TimeZone) -> Date? {
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
}
