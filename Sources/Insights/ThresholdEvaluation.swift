import Foundation

/// What one rule found over a period: whether it fired, its message (filled in), and the readings (or
/// days of adherence) behind it.
public struct ThresholdFinding: Sendable, Hashable, Codable {
    public let rule: String
    public let severity: ThresholdRule.Severity
    public let fired: Bool
    /// The rule's message when it fired; otherwise why not.
    public let message: String
    /// The readings behind the message: the run that fired (the latest), or, when it did not fire, the
    /// latest readings compared (at most ``ThresholdEvaluator/maximumShown``).
    public let readings: [Reading]
    /// For an adherence rule: the days of the window that fired (the latest), or the latest window.
    public let days: [DayAdherence]
    /// Readings of the kind in another unit, not compared.
    public let readingsInOtherUnits: Int
}

/// Checks ``ThresholdRule``s against a period's measurements and adherence.
public enum ThresholdEvaluator {
    /// The most readings shown behind a finding.
    public static let maximumShown = 50

    public static func evaluate(_ rules: [ThresholdRule], series: [MeasurementSeries], days: [DayAdherence]) -> [ThresholdFinding] {
        rules.map { rule in
            switch rule.condition {
            case .measurement(let kind, let unit, let comparison, let threshold, let inARow):
                return measurement(rule, kind: kind, unit: unit, comparison: comparison, threshold: threshold, inARow: inARow, series: series)
            case .adherence(let below, let window):
                return adherence(rule, below: below, window: window, days: days)
            }
        }
    }

    private static func measurement(
        _ rule: ThresholdRule, kind: String, unit: String?, comparison: Comparison, threshold: Double, inARow: Int,
        series: [MeasurementSeries]
    ) -> ThresholdFinding {
        let ofKind = series.filter { $0.kind == kind }
        let compared = ofKind.filter { unit == nil || $0.unit == unit }.flatMap(\.readings)
            .sorted { ($0.time, $0.taskID, $0.occurrence) < ($1.time, $1.taskID, $1.occurrence) }
        let otherUnits = ofKind.filter { unit != nil && $0.unit != unit }.reduce(0) { $0 + $1.readings.count }
        var run: [Reading] = []
        var fired: [Reading]?
        for reading in compared {
            if comparison.holds(reading.value, threshold) {
                run.append(reading)
                if run.count >= inARow { fired = run }
            } else {
                run = []
            }
        }
        let title = ofKind.first?.title ?? kind
        let unitText = unit ?? compared.first?.unit ?? ""
        if let fired {
            let message = fill(rule.message, [
                "count": String(fired.count), "threshold": number(threshold), "unit": unitText,
                "value": number(fired.last?.value ?? 0), "title": title,
            ])
            return ThresholdFinding(
                rule: rule.name, severity: rule.severity, fired: true, message: message,
                readings: Array(fired.suffix(maximumShown)), days: [], readingsInOtherUnits: otherUnits)
        }
        let needed = inARow == 1 ? "a reading" : "\(inARow) readings in a row"
        let why = compared.isEmpty
            ? "not met: no \(title) readings\(unit.map { " in \($0)" } ?? "") in the period"
            : "not met: \(needed) \(comparison.words) \(number(threshold))\(unitText.isEmpty ? "" : " " + unitText) never occurred in \(compared.count) reading(s)"
        return ThresholdFinding(
            rule: rule.name, severity: rule.severity, fired: false, message: why,
            readings: Array(compared.suffix(min(maximumShown, max(inARow, 10)))), days: [], readingsInOtherUnits: otherUnits)
    }

    private static func adherence(_ rule: ThresholdRule, below: Double, window: Int, days: [DayAdherence]) -> ThresholdFinding {
        guard days.count >= window else {
            return ThresholdFinding(
                rule: rule.name, severity: rule.severity, fired: false,
                message: "not met: the period has \(days.count) day(s), fewer than the rule's \(window)", readings: [], days: days,
                readingsInOtherUnits: 0)
        }
        var latestFired: (days: ArraySlice<DayAdherence>, mean: Double)?
        var latest: (days: ArraySlice<DayAdherence>, mean: Double?)?
        for start in 0...(days.count - window) {
            let slice = days[start..<(start + window)]
            let mean = AdherenceCalculator.mean(Array(slice))
            latest = (slice, mean)
            if let mean, mean < below { latestFired = (slice, mean) }
        }
        if let latestFired {
            let message = fill(rule.message, ["days": String(window), "threshold": percent(below), "mean": percent(latestFired.mean)])
            return ThresholdFinding(
                rule: rule.name, severity: rule.severity, fired: true, message: message, readings: [], days: Array(latestFired.days),
                readingsInOtherUnits: 0)
        }
        let mean = latest?.mean.map(percent) ?? "no events"
        return ThresholdFinding(
            rule: rule.name, severity: rule.severity, fired: false,
            message: "not met: no \(window)-day window under \(percent(below)) (latest: \(mean))", readings: [],
            days: Array(latest?.days ?? []), readingsInOtherUnits: 0)
    }

    static func fill(_ message: String, _ values: [String: String]) -> String {
        var result = message
        for (name, value) in values { result = result.replacingOccurrences(of: "{\(name)}", with: value) }
        return result
    }

    /// A number as people write it: no trailing `.0`, at most three decimals.
    public static func number(_ value: Double) -> String {
        guard value.isFinite else { return "—" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
        var text = String(format: "%.3f", value)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    /// `80%` (rounded to a whole percent).
    public static func percent(_ fraction: Double) -> String {
        guard fraction.isFinite else { return "—" }
        return "\(Int((fraction * 100).rounded()))%"
    }
}
