import CareModel
import FHIR
import Foundation

/// The words of Timing: its limits, the GTS abbreviation codes, days and event times, units of time,
/// and how they are written in notes.
extension TimingSchedule {
    /// The bounds every number of a Timing is checked against before it becomes a date or a whole number
    /// of seconds (one definition, which `caregate validate` warns from too).
    static let maximumSpan = TimingLimits.maximumSpan
    static let maximumSpanText = TimingLimits.maximumSpanText
    static let maximumFrequency = TimingLimits.maximumFrequency
    static let maximumCount = TimingLimits.maximumCount

    /// The Timing.repeat a GTS abbreviation code stands for (R4 timing-abbreviation value set).
    mutating func codedRepeat(_ code: Element, path: String) -> Element? {
        let codes = code.children(named: "coding").compactMap { $0.childValue("code") }
        for value in codes {
            if let (frequency, period, unit) = Self.abbreviations[value] {
                var children = [
                    Element(name: "frequency", value: String(frequency)), Element(name: "period", value: String(period)),
                    Element(name: "periodUnit", value: unit),
                ]
                if value == "AM" { children.append(Element(name: "when", value: "MORN")) }
                if value == "PM" { children.append(Element(name: "when", value: "EVE")) }
                return Element(name: "repeat", children: children)
            }
        }
        notes.append(MappingNote(.warning, at: path, "timing code \(codes.isEmpty ? "(text only)" : codes.joined(separator: ", ")) has no defined frequency"))
        return nil
    }

    static let abbreviations: [String: (Int, Int, String)] = [
        "QD": (1, 1, "d"), "BID": (2, 1, "d"), "TID": (3, 1, "d"), "QID": (4, 1, "d"), "AM": (1, 1, "d"), "PM": (1, 1, "d"),
        "QOD": (1, 2, "d"), "Q1H": (1, 1, "h"), "Q2H": (1, 2, "h"), "Q3H": (1, 3, "h"), "Q4H": (1, 4, "h"), "Q6H": (1, 6, "h"),
        "Q8H": (1, 8, "h"), "WK": (1, 1, "wk"), "MO": (1, 1, "mo"),
    ]

    static let weekdays: [String: Int] = ["sun": 1, "mon": 2, "tue": 3, "wed": 4, "thu": 5, "fri": 6, "sat": 7]

    /// R4 EventTiming codes as words.
    static let eventTimingText: [String: String] = [
        "MORN": "morning", "MORN.early": "early morning", "MORN.late": "late morning", "NOON": "noon", "AFT": "afternoon",
        "AFT.early": "early afternoon", "AFT.late": "late afternoon", "EVE": "evening", "EVE.early": "early evening",
        "EVE.late": "late evening", "NIGHT": "night", "PHS": "after sleep", "HS": "before sleep", "WAKE": "on waking",
        "C": "with a meal", "CM": "with breakfast", "CD": "with lunch", "CV": "with dinner", "AC": "before a meal",
        "ACM": "before breakfast", "ACD": "before lunch", "ACV": "before dinner", "PC": "after a meal",
        "PCM": "after breakfast", "PCD": "after lunch", "PCV": "after dinner",
    ]

    /// Seconds in one `unit` (UCUM units of time as Timing uses them; months and years as averages).
    static func seconds(per unit: String) -> Double? {
        TimingLimits.seconds(per: unit)
    }

    /// `value` `unit` as calendar components, when it is whole in that unit (and the unit is at least
    /// `minimumUnit`); nil otherwise.
    static func components(_ value: Double, unit: String, minimumUnit: String) -> DateComponents? {
        let order = ["s", "min", "h", "d", "wk", "mo", "a"]
        guard let index = order.firstIndex(of: unit), let minimum = order.firstIndex(of: minimumUnit), index >= minimum,
              value == value.rounded(), value >= 1, value < 1_000_000 else { return nil }
        let whole = Int(value)
        switch unit {
        case "s": return DateComponents(second: whole)
        case "min": return DateComponents(minute: whole)
        case "h": return DateComponents(hour: whole)
        case "d": return DateComponents(day: whole)
        case "wk": return DateComponents(weekOfYear: whole)
        case "mo": return DateComponents(month: whole)
        default: return DateComponents(year: whole)
        }
    }

    static func describe(_ value: Double, _ unit: String) -> String {
        let names = ["s": "second", "min": "minute", "h": "hour", "d": "day", "wk": "week", "mo": "month", "a": "year"]
        let name = names[unit] ?? unit
        // Whole numbers without ".0", as long as they are whole numbers an Int holds (the text of any other).
        let whole = value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
        return value == 1 ? name : "\(whole) \(name)s"
    }

    static func clock(_ minutes: Int) -> String {
        String(format: "%02d:%02d", minutes / 60, minutes % 60)
    }

    static func isoDay(_ date: Date, _ zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}

extension TimingSchedule.DefaultRule: CustomStringConvertible {
    var description: String {
        switch self {
        case .dailyAllDay: return "daily, all day"
        case .daily: return "daily at the start of the waking hours"
        case .once: return "once"
        case .none: return "no schedule"
        }
    }
}
