/// The numbers of a FHIR Timing that CareGate's schedules can represent (CareKit's model: events from a
/// start, a step of at least a second, at most a century between events). The import's Timing transform
/// refuses a Timing outside them, and `caregate validate` warns of one, from this one definition.
public enum TimingLimits {
    /// The longest period, duration or bound, in seconds (a hundred years).
    public static let maximumSpan: Double = 100 * 365.25 * 86_400
    public static let maximumSpanText = "100 years"
    /// The most events per period.
    public static let maximumFrequency = 10_000
    /// The most occurrences a `count` ends after.
    public static let maximumCount = 1_000_000

    /// Seconds in one `unit` of UCUM's time units as Timing uses them (s, min, h, d, wk, mo, a); a month
    /// and a year as their mean lengths. Nil for another unit.
    public static func seconds(per unit: String) -> Double? {
        switch unit {
        case "s": return 1
        case "min": return 60
        case "h": return 3600
        case "d": return 86_400
        case "wk": return 604_800
        case "mo": return 2_629_746
        case "a": return 31_556_952
        default: return nil
        }
    }

    /// What is wrong with the numbers of a `Timing.repeat` (given as their texts), each with the
    /// element it concerns; empty when a schedule can take them.
    public static func problems(
        frequency: String?, period: String?, periodUnit: String?, duration: String?, durationUnit: String?, count: String?,
        boundsDuration: (value: String?, unit: String?)?
    ) -> [(element: String, message: String)] {
        var found: [(String, String)] = []
        func number(_ text: String?) -> Double? { text.flatMap(Double.init).flatMap { $0.isFinite ? $0 : nil } }
        let frequencyValue = number(frequency) ?? 1
        if frequencyValue > Double(maximumFrequency) {
            found.append(("frequency", "frequency \(frequency ?? "") is more than the \(maximumFrequency) events per period a schedule holds"))
        }
        if let value = number(period), let unit = periodUnit, let seconds = Self.seconds(per: unit), value > 0 {
            if value * seconds > maximumSpan {
                found.append(("period", "a period of \(period ?? "") \(unit) is longer than the \(maximumSpanText) a schedule can step by"))
            } else if frequencyValue >= 1, value * seconds / frequencyValue < 1 {
                found.append(("frequency", "\(frequency ?? "") times per \(period ?? "") \(unit) is more often than once a second, the finest step a schedule has"))
            }
        }
        if let value = number(duration), let unit = durationUnit, let seconds = Self.seconds(per: unit), value * seconds > maximumSpan {
            found.append(("duration", "a duration of \(duration ?? "") \(unit) is longer than the \(maximumSpanText) a schedule spans"))
        }
        if let value = number(count), value > Double(maximumCount) {
            found.append(("count", "count \(count ?? "") is more than the \(maximumCount) occurrences a schedule counts to"))
        }
        if let bound = boundsDuration, let value = number(bound.value), let unit = bound.unit, let seconds = Self.seconds(per: unit),
           value * seconds > maximumSpan {
            found.append(("boundsDuration", "a bound of \(bound.value ?? "") \(unit) is longer than the \(maximumSpanText) a schedule spans"))
        }
        return found
    }
}
