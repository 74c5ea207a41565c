import Foundation

/// How often a patient's care-team report is made: calendar periods in a time zone, so that "once per
/// patient and period" names one report.
///
/// - `weekly`: Monday to Sunday (ISO weeks);
/// - `monthly`: calendar months;
/// - `days(n)`: runs of `n` days counted from Monday 2001-01-01 (CareKit's reference date), so that
///   every run of the job cuts the same periods (`days(7)` is `weekly`).
public enum ReportFrequency: Sendable, Equatable, CustomStringConvertible {
    case weekly
    case monthly
    case days(Int)

    /// The most days a `days(n)` period may have.
    public static let maximumDays = 366

    /// `weekly`, `monthly`, or a number of days (`14`, `14d`, `14 days`); nil otherwise.
    public init?(_ text: String) {
        let words = text.trimmingCharacters(in: .whitespaces).lowercased()
        switch words {
        case "weekly", "week": self = .weekly
        case "monthly", "month": self = .monthly
        default:
            var digits = Substring(words)
            for suffix in [" days", " day", "days", "d"] where digits.hasSuffix(suffix) {
                digits = digits.dropLast(suffix.count)
                break
            }
            guard let count = Int(digits.trimmingCharacters(in: .whitespaces)), (1...Self.maximumDays).contains(count) else { return nil }
            self = count == 7 ? .weekly : .days(count)
        }
    }

    public var description: String {
        switch self {
        case .weekly: return "weekly"
        case .monthly: return "monthly"
        case .days(let count): return "every \(count) day\(count == 1 ? "" : "s")"
        }
    }

    /// The period holding `date`, from its first day's midnight to the next period's.
    public func period(containing date: Date, calendar: Calendar) -> DateInterval {
        switch self {
        case .monthly:
            let start = calendar.dateInterval(of: .month, for: date)?.start ?? calendar.startOfDay(for: date)
            return DateInterval(start: start, end: calendar.date(byAdding: .month, value: 1, to: start) ?? start.addingTimeInterval(86_400 * 28))
        case .weekly, .days:
            let length: Int
            if case .days(let count) = self { length = count } else { length = 7 }
            let anchor = calendar.date(from: DateComponents(year: 2001, month: 1, day: 1)) ?? Date(timeIntervalSinceReferenceDate: 0)
            let days = calendar.dateComponents([.day], from: anchor, to: calendar.startOfDay(for: date)).day ?? 0
            // Floor division, so that days before the anchor fall in the period before it.
            let index = days >= 0 ? days / length : -((-days + length - 1) / length)
            let start = calendar.date(byAdding: .day, value: index * length, to: anchor) ?? anchor
            return DateInterval(start: start, end: calendar.date(byAdding: .day, value: length, to: start) ?? start.addingTimeInterval(Double(length) * 86_400))
        }
    }

    /// The completed periods (ended by `now`), oldest first: from the one starting on or after `since`
    /// (its midnight) to the last; only the last when `since` is nil. At most `limit`, the newest.
    public func completedPeriods(since: Date?, now: Date, calendar: Calendar, limit: Int = 1000) -> [DateInterval] {
        var periods: [DateInterval] = []
        var period = self.period(containing: now, calendar: calendar)
        while periods.count < limit {
            guard let previousDay = calendar.date(byAdding: .day, value: -1, to: period.start) else { break }
            period = self.period(containing: previousDay, calendar: calendar)
            guard let since else {
                periods.append(period)
                break
            }
            guard period.start >= calendar.startOfDay(for: since) else { break }
            periods.append(period)
        }
        return periods.reversed()
    }
}
