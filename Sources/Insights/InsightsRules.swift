import Foundation
import Mapping

/// How a measurement is titled and banded in a report.
public struct MeasurementDefinition: Sendable, Hashable {
    public let kind: String
    public let title: String
    public let unit: String?
    public let target: TargetBand?

    public init(kind: String, title: String, unit: String?, target: TargetBand?) {
        self.kind = kind
        self.title = title
        self.unit = unit
        self.target = target
    }
}

/// A comparison of a reading with a threshold.
public enum Comparison: String, Sendable, Hashable, CaseIterable {
    case above, atLeast = "at-least", below, atMost = "at-most"

    public func holds(_ value: Double, _ threshold: Double) -> Bool {
        switch self {
        case .above: return value > threshold
        case .atLeast: return value >= threshold
        case .below: return value < threshold
        case .atMost: return value <= threshold
        }
    }

    /// `over`, `at least`...: for messages.
    public var words: String {
        switch self {
        case .above: return "over"
        case .atLeast: return "at least"
        case .below: return "under"
        case .atMost: return "at most"
        }
    }
}

/// A threshold rule: when it fires, a message for the care team with the readings behind it.
public struct ThresholdRule: Sendable, Hashable {
    public enum Condition: Sendable, Hashable {
        /// `inARow` consecutive readings of `kind` (in `unit`, when given) that compare so with `threshold`.
        case measurement(kind: String, unit: String?, comparison: Comparison, threshold: Double, inARow: Int)
        /// The mean adherence of `days` consecutive days (those with events) below `threshold` (0...1).
        case adherence(below: Double, days: Int)
    }

    public enum Severity: String, Sendable, Hashable, Codable, CaseIterable { case info, warning, alert }

    public let name: String
    public let condition: Condition
    public let severity: Severity
    /// The message, with `{count}`, `{threshold}`, `{unit}`, `{value}`, `{days}`, `{mean}` filled in.
    public let message: String
    public let location: MappingLocation

    public init(name: String, condition: Condition, severity: Severity, message: String, location: MappingLocation) {
        self.name = name
        self.condition = condition
        self.severity = severity
        self.message = message
        self.location = location
    }

    /// The placeholders a message may use, by kind of rule.
    static func placeholders(for condition: Condition) -> Set<String> {
        switch condition {
        case .measurement: return ["count", "threshold", "unit", "value", "title"]
        case .adherence: return ["days", "threshold", "mean"]
        }
    }
}

/// What a report draws and checks beyond adherence: how measurements are titled and banded, which
/// one sits beside adherence in the Insights chart, and the threshold rules (Mappings/insights.yaml).
public struct InsightsRules: Sendable, Hashable {
    public let file: String
    public let measurements: [MeasurementDefinition]
    /// The kind drawn beside adherence in the Insights chart (else the measurement with most readings).
    public let chart: String?
    public let rules: [ThresholdRule]
    /// Which tasks' events count by another strategy than the report's default (`progress:`).
    public let progress: [ProgressRule]

    public init(file: String, measurements: [MeasurementDefinition], chart: String?, rules: [ThresholdRule], progress: [ProgressRule] = []) {
        self.file = file
        self.measurements = measurements
        self.chart = chart
        self.rules = rules
        self.progress = progress
    }

    /// The file name the rules are read from in a mapping folder, and shipped as in Mappings/.
    public static let fileName = "insights.yaml"

    /// The rules shipped in Mappings/insights.yaml (embedded in the binary); none when it is absent.
    ///
    /// - Throws: ``MappingProblems`` when the embedded file has problems (a test keeps it sound).
    public static func defaults() throws -> InsightsRules {
        guard let text = MappingSet.defaultFileText(named: fileName) else {
            return InsightsRules(file: "Mappings/" + fileName, measurements: [], chart: nil, rules: [])
        }
        return try InsightsRules.parse(text, file: "Mappings/" + fileName)
    }
}
