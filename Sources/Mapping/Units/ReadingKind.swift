import CareModel
import Foundation

/// What the readings import and the vital-sign export need of one row of the LOINC <-> HealthKit table
/// (`Mappings/healthkit.yaml`): the codes a reading may carry, the UCUM unit its outcome value is kept
/// in, the category and profile its Observation goes back with, and the range a reading must fall in.
public struct ReadingKind: Sendable, Equatable {
    /// `HKQuantityTypeIdentifierBodyMass`...
    public var healthKitIdentifier: String
    /// The LOINC code (or codes) of this row: what a task or reading is coded with.
    public var loincCodes: [String]
    /// LOINC codes its Observations carry beside it (`2708-6` beside `59408-5`, as the R4 oxygen
    /// saturation profile requires; `8867-4` beside resting heart rate `40443-4`).
    public var besideCodes: [String]
    /// The unit the outcome value is kept in and exported with (UCUM: `kg`, `Cel`, `%`, `/min`).
    public var ucumUnit: String
    /// HealthKit's unit string (`kg`, `degC`, `%`, `count/min`): a reading may come in it.
    public var healthKitUnit: String
    /// A cumulative HealthKit type (steps): readings of one occurrence add up; discrete ones do not.
    public var isCumulative: Bool
    /// `vital-signs`, `laboratory`, `activity` (observation-category codes).
    public var category: String?
    /// The profile the exported Observation claims in `meta.profile`, when there is one.
    public var profile: String?
    /// The plausible range, in ``ucumUnit``: a reading outside it is refused.
    public var plausible: ClosedRange<Double>?
    /// The molar mass (g/mol) of what a concentration measures, when mass and molar units both occur.
    public var molarMass: Double?
    /// The LOINC code of the panel this is a component of (`85354-9` for systolic and diastolic).
    public var panelCode: String?
    /// The code's display: the title of a log made for it.
    public var title: String?

    public init(
        healthKitIdentifier: String, loincCodes: [String], besideCodes: [String] = [], ucumUnit: String, healthKitUnit: String,
        isCumulative: Bool = false,
        category: String? = nil, profile: String? = nil, plausible: ClosedRange<Double>? = nil, molarMass: Double? = nil,
        panelCode: String? = nil, title: String? = nil
    ) {
        self.title = title
        self.healthKitIdentifier = healthKitIdentifier
        self.loincCodes = loincCodes
        self.besideCodes = besideCodes
        self.ucumUnit = ucumUnit
        self.healthKitUnit = healthKitUnit
        self.isCumulative = isCumulative
        self.category = category
        self.profile = profile
        self.plausible = plausible
        self.molarMass = molarMass
        self.panelCode = panelCode
    }

    /// The LOINC system.
    public static let loinc = "http://loinc.org"
    /// HealthKit's code system, as HealthKitOnFHIR writes it.
    public static let healthKitSystem = "http://developer.apple.com/documentation/healthkit"

    /// The `kind` of the outcome values this reading type becomes: its first LOINC code as a
    /// `system|code` key, as import keeps an Observation's code.
    public var valueKind: String { loincCodes.first.map { "\(Self.loinc)|\($0)" } ?? healthKitIdentifier }

    /// `value` in `unit` (UCUM, HealthKit or display spelling) as a number in ``ucumUnit``, or why not.
    ///
    /// A fraction-valued HealthKit type (its HealthKit unit `%`, which HealthKit counts in fractions of
    /// one: oxygen saturation 0.97) sent as `%` with a value of at most 1 is that fraction: HealthKitOnFHIR
    /// writes `doubleValue(for: .percent())` under the unit `%`.
    public func converted(_ value: Double, unit: String) -> Result<Double, ReadingUnitProblem> {
        guard value.isFinite else { return .failure(.notFinite) }
        guard let source = ReadingUnits.unit(unit) else { return .failure(.unknownUnit(unit)) }
        guard let target = ReadingUnits.unit(ucumUnit) else { return .failure(.unknownUnit(ucumUnit)) }
        var source2 = source
        if healthKitUnit == "%", source.dimension == .fraction, abs(value) <= 1 { source2 = ReadingUnits.Unit(dimension: .unity, factor: 1) }
        guard let number = ReadingUnits.convert(value, from: source2, to: target, molarMass: molarMass), number.isFinite else {
            return .failure(.doesNotConvert(from: unit, to: ucumUnit))
        }
        if let plausible, !plausible.contains(number) { return .failure(.outOfRange(number, plausible, ucumUnit)) }
        return .success(number)
    }
}

/// Why a reading's value cannot be kept.
public enum ReadingUnitProblem: Error, Equatable, CustomStringConvertible {
    case notFinite
    case unknownUnit(String)
    case doesNotConvert(from: String, to: String)
    case outOfRange(Double, ClosedRange<Double>, String)

    public var description: String {
        switch self {
        case .notFinite: return "not a finite number"
        case .unknownUnit(let unit): return "the unit '\(unit.prefix(40))' is not one CareGate reads (UCUM, HealthKit or HealthKitOnFHIR's spelling)"
        case .doesNotConvert(let from, let to): return "the unit '\(from.prefix(40))' does not convert to \(to)"
        case .outOfRange(let value, let range, let unit):
            return "\(OutcomeExporter.decimalText(value)) \(unit) is outside the plausible range \(OutcomeExporter.decimalText(range.lowerBound))–\(OutcomeExporter.decimalText(range.upperBound)) \(unit)"
        }
    }
}

/// A LOINC panel whose components are rows (blood pressure 85354-9: systolic and diastolic).
public struct ReadingPanel: Sendable, Equatable {
    public var code: String
    public var display: String?
    public var category: String?
    public var profile: String?

    public init(code: String, display: String? = nil, category: String? = nil, profile: String? = nil) {
        self.code = code
        self.display = display
        self.category = category
        self.profile = profile
    }
}

/// The table's rows as the readings import looks them up: by HealthKit identifier and by LOINC code.
public struct ReadingKinds: Sendable {
    public let kinds: [ReadingKind]
    public let panels: [String: ReadingPanel]
    private let byIdentifier: [String: Int]
    private let byLOINC: [String: Int]

    /// The rows of the LOINC <-> HealthKit table: one per LOINC code of each HealthKit type, in that
    /// code's UCUM unit and range, the type's category and cumulative kind; the molar mass of a molar
    /// HealthKit unit (`mmol<180.15588000005408>/L`) for the type's mass and molar codes alike.
    public init(table: HealthKitTable) {
        var kinds: [ReadingKind] = []
        var componentOf: [String: String] = [:]
        for panel in table.panels { for component in panel.components { componentOf[component] = panel.code } }
        for type in table.types {
            let molarMass = type.codes.lazy.compactMap { ReadingUnits.molarMass(inHealthKitUnit: $0.unit) }.first
                ?? ReadingUnits.molarMass(inHealthKitUnit: type.unit)
            for code in type.codes {
                kinds.append(ReadingKind(
                    healthKitIdentifier: type.identifier, loincCodes: [code.code], besideCodes: code.beside, ucumUnit: code.ucum,
                    healthKitUnit: code.unit, isCumulative: type.quantityType == .cumulative, category: type.category, profile: code.profile,
                    plausible: code.range.low...code.range.high, molarMass: molarMass, panelCode: componentOf[code.code],
                    title: code.display))
            }
        }
        self.init(kinds, panels: table.panels.map { ReadingPanel(code: $0.code, display: $0.display, category: $0.category, profile: $0.profile) })
    }

    public init(_ kinds: [ReadingKind], panels: [ReadingPanel] = []) {
        self.kinds = kinds
        self.panels = Dictionary(panels.map { ($0.code, $0) }, uniquingKeysWith: { first, _ in first })
        var identifiers: [String: Int] = [:]
        var codes: [String: Int] = [:]
        for (position, kind) in kinds.enumerated() {
            if identifiers[kind.healthKitIdentifier] == nil { identifiers[kind.healthKitIdentifier] = position }
            for code in kind.loincCodes where codes[code] == nil { codes[code] = position }
        }
        byIdentifier = identifiers
        byLOINC = codes
    }

    /// The row of a reading coded `codings` (`(system, code)`): its HealthKit coding first, then its
    /// LOINC codings in order.
    public func kind(forCodings codings: [(system: String, code: String)]) -> ReadingKind? {
        for coding in codings where coding.system == ReadingKind.healthKitSystem {
            if let position = byIdentifier[coding.code] { return kinds[position] }
        }
        for coding in codings where coding.system == ReadingKind.loinc {
            if let position = byLOINC[coding.code] { return kinds[position] }
        }
        return nil
    }

    /// Every row a reading coded `codings` may be: the rows of its LOINC codes, in order, then the other
    /// rows of its HealthKit type (blood glucose has a mass row and a molar one; the task decides).
    public func kinds(forCodings codings: [(system: String, code: String)]) -> [ReadingKind] {
        var found: [ReadingKind] = []
        for coding in codings where coding.system == ReadingKind.loinc {
            if let position = byLOINC[coding.code], !found.contains(kinds[position]) { found.append(kinds[position]) }
        }
        let identifiers = Set(codings.filter { $0.system == ReadingKind.healthKitSystem }.map(\.code))
        for kind in kinds where identifiers.contains(kind.healthKitIdentifier) && !found.contains(kind) { found.append(kind) }
        return found
    }

    /// The row with LOINC code `code`.
    public func kind(loinc code: String) -> ReadingKind? { byLOINC[code].map { kinds[$0] } }

    /// The rows of the components of panel `code` (systolic and diastolic of `85354-9`).
    public func components(ofPanel code: String) -> [ReadingKind] { kinds.filter { $0.panelCode == code } }
}
