import Foundation

/// FHIR date, dateTime and instant text as a point in time, checked strictly: `2025-02-30` and
/// `T25:00:00Z` are refused, never rolled over. Partial dates (`2024`, `2024-03`) stand for the start of
/// that year or month; values without a time or offset are read in the given zone, as FHIR says they
/// are local. The mappings and the command line read dates through it; the grammar is ``FHIRTemporal``'s.
public enum FHIRDateText {
    /// The start of `text`, or nil when it is not a FHIR date, dateTime or instant.
    ///
    /// Lenient where data in the wild is (a time without seconds or without a zone is read in `zone`),
    /// strict on the calendar; a time needs a full date before it and at least hours and minutes.
    public static func date(_ text: String, in zone: TimeZone) -> Date? {
        value(text)?.date(in: zone)
    }

    /// `text` read by the same rules, with its precision (what a Period's end includes depends on it).
    public static func value(_ text: String) -> FHIRTemporal? {
        guard let value = FHIRTemporal(text, as: .fhirPath) else { return nil }
        if value.kind == .dateTime {
            // `YYYY-MM-DDThh:mm`: FHIRPath's partial forms (`2024T10:00`, `2024-01-01T`) are not data.
            guard value.precision >= .minute, text.utf8.count > 10, text.utf8[text.utf8.index(text.utf8.startIndex, offsetBy: 10)] == UInt8(ascii: "T")
            else { return nil }
        }
        return value
    }
}

extension FHIRTemporal {
    /// `date` in `zone` to the millisecond, as FHIR writes a dateTime (``FHIRDateFormat``).
    public init(_ date: Date, in zone: TimeZone) {
        // Civil arithmetic on the local time rather than Calendar.dateComponents, which cost more than
        // the rest of building an Observation's effective time.
        let offset = zone.secondsFromGMT(for: date)
        let local = date.timeIntervalSince1970 + Double(offset)
        let wholeSeconds = local.rounded(.down)
        let milliseconds = Int(((local - wholeSeconds) * 1000).rounded())
        let days = Int((wholeSeconds / 86_400).rounded(.down))
        let secondOfDay = Int(wholeSeconds) - days * 86_400
        self.init(kind: .dateTime, precision: .second)
        (year, month, day) = CivilCalendar.date(days: days)
        hour = secondOfDay / 3600
        minute = secondOfDay / 60 % 60
        second = secondOfDay % 60
        if milliseconds > 0, milliseconds < 1000 {
            precision = .fraction
            nanosecond = milliseconds * 1_000_000
            fractionDigits = 3
        }
        offsetMinutes = offset / 60
    }

    /// The instant this value starts at; a value without an offset is read in `zone`. Nil for a time of
    /// day alone.
    public func date(in zone: TimeZone) -> Date? {
        guard kind != .time else { return nil }
        let second = min(self.second, 59)  // A leap second is read as the second before it.
        let local = Double(((CivilCalendar.days(year: year, month: month, day: day) * 24 + hour) * 60 + minute) * 60 + second)
        let fraction = Double(nanosecond) / 1_000_000_000
        if let offsetMinutes { return Date(timeIntervalSince1970: local - Double(offsetMinutes * 60) + fraction) }
        // A local time: the zone's offset, when it is the same a day either side; near a change of
        // offset, Calendar decides what a skipped or repeated hour means.
        let before = zone.secondsFromGMT(for: Date(timeIntervalSince1970: local - 86_400))
        if before == zone.secondsFromGMT(for: Date(timeIntervalSince1970: local + 86_400)) {
            return Date(timeIntervalSince1970: local - Double(before) + fraction)
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return calendar.date(from: components)?.addingTimeInterval(fraction)
    }
}

/// FHIR date and time text from points in time: the one writer, through ``FHIRTemporal/text``.
public enum FHIRDateFormat {
    /// `yyyy-MM-ddTHH:mm:ss[.SSS]±hh:mm` (or `Z`) in `zone`.
    public static func dateTime(_ date: Date, in zone: TimeZone) -> String { FHIRTemporal(date, in: zone).text }

    /// An instant: a dateTime in UTC, with seconds.
    public static func instant(_ date: Date) -> String { dateTime(date, in: TimeZone(secondsFromGMT: 0) ?? .gmt) }

    /// Whether `text` is an R4 `time` (`hh:mm:ss`, optional fraction).
    public static func isTime(_ text: String) -> Bool { FHIRTemporal(text, as: .fhir(.time)) != nil }
}
