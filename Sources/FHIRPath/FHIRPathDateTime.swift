import FHIRCore
import Foundation

/// A FHIRPath Date, DateTime or Time with partial precision (`@2014`, `@2014-01-05T10:30`,
/// `@T10:30:00.000`) and an optional time-zone offset.
///
/// Comparison follows the specification: values are compared precision by precision; when one value
/// stops before the other and all shared precisions are equal, the result is unknown (`nil`). Seconds
/// and milliseconds count as one precision. DateTimes with offsets are compared in UTC; a DateTime with
/// an offset and one without cannot be ordered below day precision.
public struct FHIRPathDateTime: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Sendable { case date, dateTime, time }
    public enum Precision: Int, Comparable, Sendable {
        case year, month, day, hour, minute, second, millisecond
        public static func < (lhs: Precision, rhs: Precision) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    public var kind: Kind
    public var precision: Precision
    public var year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0, millisecond = 0
    /// Offset from UTC in minutes, when written.
    public var timeZoneOffset: Int?

    init(kind: Kind, precision: Precision) {
        self.kind = kind
        self.precision = precision
    }

    // MARK: Parsing

    /// The value of a literal body (the text after `@`), as a FHIRPath value of the right kind.
    static func literal(_ text: String) -> FHIRPathValue? {
        if text.hasPrefix("T") {
            guard let time = parseTime(String(text.dropFirst())) else { return nil }
            return .time(time)
        }
        guard let (value, hasT) = parse(text, allowPartialTime: true) else { return nil }
        if value.kind == .date && !hasT { return .date(value) }
        var dateTime = value
        dateTime.kind = .dateTime
        return .dateTime(dateTime)
    }

    /// Parses `YYYY[-MM[-DD]][T[hh[:mm[:ss[.fff]]]][Z|±hh:mm]]` (``FHIRTemporal``'s FHIRPath grammar); the
    /// flag says whether a `T` was present.
    static func parse(_ text: String, allowPartialTime: Bool) -> (FHIRPathDateTime, Bool)? {
        guard let temporal = FHIRTemporal(text, as: .fhirPath), let value = FHIRPathDateTime(temporal) else { return nil }
        let hasT = temporal.kind == .dateTime
        if hasT, !allowPartialTime, temporal.precision >= .hour, temporal.precision < .second { return nil }
        return (value, hasT)
    }

    /// Parses a FHIR `dateTime`/`instant` or `date` element value, or a string being converted.
    static func parseDateTime(_ text: String) -> FHIRPathDateTime? {
        guard var (value, _) = parse(text, allowPartialTime: true) else { return nil }
        value.kind = .dateTime
        return value
    }

    static func parseDate(_ text: String) -> FHIRPathDateTime? {
        guard let (value, hasT) = parse(text, allowPartialTime: false), !hasT else { return nil }
        return value
    }

    /// Parses `hh[:mm[:ss[.fff]]]` (no time zone: FHIRPath times have none).
    static func parseTime(_ text: String) -> FHIRPathDateTime? {
        FHIRTemporal(text, as: .fhirPathTime).flatMap(FHIRPathDateTime.init)
    }

    /// A value of the core grammar, with milliseconds for the fraction; nil for a leap second, which
    /// FHIRPath's arithmetic has no place for.
    init?(_ temporal: FHIRTemporal) {
        guard temporal.second < 60 else { return nil }
        let kind: Kind = switch temporal.kind {
        case .date: .date
        case .dateTime: .dateTime
        case .time: .time
        }
        let precision: Precision = switch temporal.precision {
        case .year: .year
        case .month: .month
        case .day: .day
        case .hour: .hour
        case .minute: .minute
        case .second: .second
        case .fraction: .millisecond
        }
        self.init(kind: kind, precision: precision)
        (year, month, day) = (temporal.year, temporal.month, temporal.day)
        (hour, minute, second) = (temporal.hour, temporal.minute, temporal.second)
        millisecond = temporal.nanosecond / 1_000_000
        timeZoneOffset = temporal.offsetMinutes
    }

    /// The core value: what ``description`` writes.
    var temporal: FHIRTemporal {
        let kind: FHIRTemporal.Kind = switch self.kind {
        case .date: .date
        case .dateTime: .dateTime
        case .time: .time
        }
        let precision: FHIRTemporal.Precision = switch self.precision {
        case .year: .year
        case .month: .month
        case .day: .day
        case .hour: .hour
        case .minute: .minute
        case .second: .second
        case .millisecond: .fraction
        }
        var value = FHIRTemporal(kind: kind, precision: precision)
        (value.year, value.month, value.day) = (year, month, day)
        (value.hour, value.minute, value.second) = (hour, minute, second)
        if precision == .fraction {
            value.nanosecond = millisecond * 1_000_000
            value.fractionDigits = 3
        }
        value.offsetMinutes = timeZoneOffset
        return value
    }

    // MARK: Output

    public var description: String { temporal.text }

    /// The value as a FHIR element writes it: as ``description``, except that a DateTime of date
    /// precision is its date (`2015-01-16`, which FHIR's dateTime allows), not FHIRPath's partial form
    /// `2015-01-16T`, which no FHIR date reader takes.
    public var fhirText: String {
        var value = temporal
        if kind == .dateTime, precision < .hour { value.kind = .date }
        return value.text
    }

    /// The FHIRPath precision() figure: digits of the value as written (`@2014` 4, ms DateTime 17, ms Time 9).
    var precisionDigits: Int {
        let dateDigits = [4, 6, 8, 10, 12, 14, 17]
        if kind == .time { return [2, 2, 2, 2, 4, 6, 9][precision.rawValue] }
        return dateDigits[precision.rawValue]
    }

    // MARK: Comparison

    /// This value shifted to UTC (offset 0); only meaningful at hour precision or finer.
    func inUTC() -> FHIRPathDateTime {
        guard let offset = timeZoneOffset, offset != 0, kind == .dateTime, precision >= .hour else { return self }
        var copy = self
        let minutes = (CivilCalendar.days(year: year, month: month, day: day) * 24 + hour) * 60 + minute - offset
        let days = Int((Double(minutes) / 1440).rounded(.down))
        let rest = minutes - days * 1440
        (copy.year, copy.month, copy.day) = CivilCalendar.date(days: days)
        copy.hour = rest / 60
        copy.minute = rest % 60
        copy.timeZoneOffset = 0
        return copy
    }

    /// Precision level for comparison, with seconds and milliseconds merged.
    private var comparisonLevel: Int { min(precision.rawValue, Precision.second.rawValue) }

    /// -1, 0 or 1; nil when the order is unknown (different precisions, or one offset missing).
    /// Callers check the kinds are compatible first.
    static func compare(_ a: FHIRPathDateTime, _ b: FHIRPathDateTime) -> Int? {
        var left = a, right = b
        if left.kind == .date { left.kind = .dateTime }
        if right.kind == .date { right.kind = .dateTime }
        if left.kind == .dateTime && left.precision >= .hour && right.precision >= .hour {
            if (left.timeZoneOffset == nil) != (right.timeZoneOffset == nil) { return nil }
            left = left.inUTC()
            right = right.inUTC()
        }
        let leftParts: [Int], rightParts: [Int]
        if left.kind == .time {
            leftParts = [left.hour, left.minute, left.second * 1000 + left.millisecond]
            rightParts = [right.hour, right.minute, right.second * 1000 + right.millisecond]
        } else {
            leftParts = [left.year, left.month, left.day, left.hour, left.minute, left.second * 1000 + left.millisecond]
            rightParts = [right.year, right.month, right.day, right.hour, right.minute, right.second * 1000 + right.millisecond]
        }
        let base = left.kind == .time ? Precision.hour.rawValue : 0
        let leftLevel = left.comparisonLevel - base, rightLevel = right.comparisonLevel - base
        for level in 0...min(leftLevel, rightLevel) {
            if leftParts[level] != rightParts[level] { return leftParts[level] < rightParts[level] ? -1 : 1 }
        }
        return leftLevel == rightLevel ? 0 : nil
    }

    /// True when both are of comparable kinds (Date with DateTime, Time with Time).
    static func comparable(_ a: FHIRPathDateTime, _ b: FHIRPathDateTime) -> Bool {
        (a.kind == .time) == (b.kind == .time)
    }

    // MARK: Arithmetic

    /// The value moved by `amount` of a calendar or definite-duration unit (`year`, `month`, `week`, `day`,
    /// `hour`, `minute`, `second`, `millisecond`); amounts are truncated to whole units.
    func adding(_ amount: FHIRPathDecimal, unit: String) -> FHIRPathDateTime? {
        // FHIRPath dates lie in years 1-9999: a larger move leaves them (and could overflow the arithmetic).
        guard let whole = amount.integerPart, whole.magnitude <= 120_000 * 31 * 86_400_000 else { return nil }
        guard let moved = movedWithinRange(whole, unit: unit) else { return nil }
        return (1...9999).contains(moved.year) || moved.kind == .time ? moved : nil
    }

    private func movedWithinRange(_ whole: Int, unit: String) -> FHIRPathDateTime? {
        var copy = self
        switch unit {
        case "year":
            guard kind != .time, whole.magnitude <= 10_000 else { return nil }
            copy.year += whole
            if precision >= .day { copy.day = min(copy.day, CivilCalendar.daysInMonth(year: copy.year, month: copy.month)) }
            return copy
        case "month":
            guard kind != .time, whole.magnitude <= 120_000 else { return nil }
            if precision < .month { copy.year += whole / 12; return copy }
            let total = (copy.year * 12 + copy.month - 1) + whole
            copy.year = Int((Double(total) / 12).rounded(.down))
            copy.month = total - copy.year * 12 + 1
            if precision >= .day { copy.day = min(copy.day, CivilCalendar.daysInMonth(year: copy.year, month: copy.month)) }
            return copy
        default:
            break
        }
        let millisPerUnit: [String: Int] = [
            "week": 604_800_000, "day": 86_400_000, "hour": 3_600_000, "minute": 60_000, "second": 1000, "millisecond": 1,
        ]
        guard let factor = millisPerUnit[unit] else { return nil }
        let (product, overflow) = whole.multipliedReportingOverflow(by: factor)
        guard !overflow, product.magnitude <= 10_000 * 366 * 86_400_000 else { return nil }
        var delta = product
        if kind != .time {
            if precision < .day {
                // Coarser than days: convert to the value's own precision, truncating.
                let days = delta / 86_400_000
                if precision == .month { return copy.movedWithinRange(days / 30, unit: "month") }
                return copy.movedWithinRange(days / 365, unit: "year")
            }
            let unitMillis = [86_400_000, 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1][precision.rawValue]
            delta = (delta / unitMillis) * unitMillis
            let start = CivilCalendar.days(year: year, month: month, day: day) * 86_400_000 + ((hour * 60 + minute) * 60 + second) * 1000 + millisecond
            let total = start + delta
            let days = Int((Double(total) / 86_400_000).rounded(.down))
            var rest = total - days * 86_400_000
            (copy.year, copy.month, copy.day) = CivilCalendar.date(days: days)
            copy.hour = rest / 3_600_000; rest %= 3_600_000
            copy.minute = rest / 60_000; rest %= 60_000
            copy.second = rest / 1000
            copy.millisecond = rest % 1000
            return copy
        }
        let unitMillis = [1, 1, 1, 3_600_000, 60_000, 1000, 1][precision.rawValue]
        delta = (delta / unitMillis) * unitMillis
        let dayMillis = 86_400_000
        var total = (((hour * 60 + minute) * 60 + second) * 1000 + millisecond + delta) % dayMillis
        if total < 0 { total += dayMillis }
        copy.hour = total / 3_600_000; total %= 3_600_000
        copy.minute = total / 60_000; total %= 60_000
        copy.second = total / 1000
        copy.millisecond = total % 1000
        return copy
    }

    // MARK: Boundaries

    /// The earliest (`low`) or latest value this partial value may stand for, at `digits` precision
    /// (4 year ... 17 milliseconds for dates; 2 ... 9 for times). Nil for an unsupported precision.
    func boundary(low: Bool, digits: Int?) -> FHIRPathDateTime? {
        var copy = self
        let target: Precision
        if kind == .time {
            switch digits ?? 9 {
            case 2: target = .hour
            case 4: target = .minute
            case 6: target = .second
            case 9: target = .millisecond
            default: return nil
            }
        } else {
            switch digits ?? (kind == .date ? 8 : 17) {
            case 4: target = .year
            case 6: target = .month
            case 8: target = .day
            case 10: target = .hour
            case 12: target = .minute
            case 14: target = .second
            case 17: target = .millisecond
            default: return nil
            }
        }
        // An hour-only DateTime is read as hh:00, as FHIR has no hour-precision values.
        if kind == .dateTime && copy.precision == .hour { copy.minute = 0; copy.precision = .minute }
        if target > copy.precision {
            if copy.precision < .month { copy.month = low ? 1 : 12 }
            if copy.precision < .day { copy.day = low ? 1 : CivilCalendar.daysInMonth(year: copy.year, month: copy.month) }
            if copy.precision < .hour { copy.hour = low ? 0 : 23 }
            if copy.precision < .minute { copy.minute = low ? 0 : 59 }
            if copy.precision < .second { copy.second = low ? 0 : 59 }
            if copy.precision < .millisecond { copy.millisecond = low ? 0 : 999 }
        }
        copy.precision = target
        if kind != .time {
            if target >= .hour {
                copy.kind = .dateTime
                if copy.timeZoneOffset == nil { copy.timeZoneOffset = low ? 14 * 60 : -12 * 60 }
            } else if kind == .dateTime && target <= .day {
                copy.kind = .date
            }
        }
        return copy
    }
}
