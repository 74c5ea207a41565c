import CareModel
import Foundation

/// The LOINC <-> HealthKit table (Mappings/healthkit.yaml): which HealthKit quantity type records what a
/// LOINC code measures, its units on both sides (HealthKit's unit syntax for CareKit's linkage, UCUM for
/// FHIR), the FHIR category and R4 profile of its Observations, and the values a reading may plausibly
/// take. A user's mapping folder replaces it with a file of its own that has `healthkit:`.
///
/// Mapping files link tasks with it (the `healthKit` transform); readings from the phone are matched,
/// converted and checked with it.
///
/// ```swift
/// let table = try HealthKitTable.defaults()                 // or MappingSet's `healthKit`
/// let weight = table.match(code: "29463-7")!                // system http://loinc.org
/// weight.type.identifier                                    // "HKQuantityTypeIdentifierBodyMass"
/// weight.linkage                                            // {BodyMass, discrete, "kg"}: CareKit's
/// weight.code.ucum                                          // "kg"
/// table.links(forCodes: ["http://loinc.org|85354-9"])       // systolic and diastolic
/// table.type(identifier: "HKQuantityTypeIdentifierHeartRate")?.primary.code   // "8867-4"
/// ```
///
/// ## Topics
/// - ``match(system:code:)``, ``match(code:)``: a code's row.
/// - ``type(identifier:)``: a HealthKit type's row.
/// - ``panel(code:)``: a panel (blood pressure) and its components.
/// - ``links(forCodes:)``: what a task coded so links to (one per panel component).
public struct HealthKitTable: Sendable, Hashable {
    /// The code system of the table's codes.
    public static let loincSystem = "http://loinc.org"
    /// The code system HealthKitOnFHIR gives HealthKit identifiers in.
    public static let healthKitSystem = "http://developer.apple.com/documentation/healthkit"
    /// The file name it is read from in a mapping folder, and shipped as in Mappings/.
    public static let fileName = "healthkit.yaml"

    /// The file it was read from.
    public let file: String
    /// The HealthKit quantity types, in the file's order.
    public let types: [HealthKitQuantityType]
    /// LOINC panels whose components are codes of ``types``.
    public let panels: [HealthKitPanel]

    private let byCode: [String: (type: Int, code: Int)]
    private let byIdentifier: [String: Int]
    private let panelsByCode: [String: Int]

    public init(file: String, types: [HealthKitQuantityType], panels: [HealthKitPanel]) {
        self.file = file
        self.types = types
        self.panels = panels
        var byCode: [String: (type: Int, code: Int)] = [:]
        var byIdentifier: [String: Int] = [:]
        for (typeIndex, type) in types.enumerated() {
            if byIdentifier[type.identifier] == nil { byIdentifier[type.identifier] = typeIndex }
            for (codeIndex, code) in type.codes.enumerated() where byCode[code.code] == nil {
                byCode[code.code] = (typeIndex, codeIndex)
            }
        }
        self.byCode = byCode
        self.byIdentifier = byIdentifier
        panelsByCode = Dictionary(panels.enumerated().map { ($1.code, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// A table with no rows: nothing links (mapping sets made without the defaults).
    public static let empty = HealthKitTable(file: "", types: [], panels: [])

    public static func == (lhs: HealthKitTable, rhs: HealthKitTable) -> Bool {
        lhs.file == rhs.file && lhs.types == rhs.types && lhs.panels == rhs.panels
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(file)
        hasher.combine(types)
        hasher.combine(panels)
    }

    // MARK: - Lookup

    /// The row of LOINC code `code` (system http://loinc.org); nil when the table does not list it.
    public func match(code: String) -> HealthKitMatch? {
        guard let (typeIndex, codeIndex) = byCode[code] else { return nil }
        let type = types[typeIndex]
        return HealthKitMatch(type: type, code: type.codes[codeIndex])
    }

    /// The row of `code` in `system`: only LOINC codes are listed; a HealthKit identifier in
    /// HealthKitOnFHIR's system gives its type's primary code.
    public func match(system: String, code: String) -> HealthKitMatch? {
        switch system {
        case Self.loincSystem: return match(code: code)
        case Self.healthKitSystem: return type(identifier: code).map { HealthKitMatch(type: $0, code: $0.primary) }
        default: return nil
        }
    }

    /// The type of HealthKit identifier `identifier` (`HKQuantityTypeIdentifierBodyMass`).
    public func type(identifier: String) -> HealthKitQuantityType? {
        byIdentifier[identifier].map { types[$0] }
    }

    /// The panel of LOINC code `code` (`85354-9`).
    public func panel(code: String) -> HealthKitPanel? {
        panelsByCode[code].map { panels[$0] }
    }

    /// The rows of a panel's components, in the panel's order.
    public func components(of panel: HealthKitPanel) -> [HealthKitMatch] {
        panel.components.compactMap { match(code: $0) }
    }

    /// What a task coded `codes` (`system|code`, as a task's linkage keeps them) links to: the first code
    /// the table knows decides. A code of a type gives that type; a panel's code gives one link per
    /// component (blood pressure: systolic, diastolic). Empty when no code is known.
    public func links(forCodes codes: [String]) -> [HealthKitMatch] {
        for coded in codes {
            guard let bar = coded.lastIndex(of: "|") else { continue }
            let system = String(coded[..<bar]), code = String(coded[coded.index(after: bar)...])
            guard system == Self.loincSystem else { continue }
            if let panel = panel(code: code) { return components(of: panel) }
            if let match = match(code: code) { return [match] }
        }
        return []
    }
}

/// A HealthKit quantity type and the LOINC codes it answers.
public struct HealthKitQuantityType: Sendable, Hashable {
    /// The `HKQuantityTypeIdentifier` raw value (`HKQuantityTypeIdentifierBodyMass`).
    public let identifier: String
    public let quantityType: HealthKitLinkage.QuantityType
    /// The unit of its linkage, in HealthKit's syntax (`kg`, `count/min`); a code may name another.
    public let unit: String
    /// The UCUM unit of its Observations (`kg`, `/min`); a code may name another.
    public let ucum: String
    /// The observation-category code of its Observations (`vital-signs`, `laboratory`, `activity`).
    public let category: String
    /// The plausible values, in ``ucum``; a code may name others.
    public let range: PlausibleRange
    /// The LOINC codes it answers, the primary one first (never empty).
    public let codes: [HealthKitCode]
    public let location: MappingLocation

    public init(
        identifier: String, quantityType: HealthKitLinkage.QuantityType, unit: String, ucum: String, category: String,
        range: PlausibleRange, codes: [HealthKitCode], location: MappingLocation
    ) {
        self.identifier = identifier
        self.quantityType = quantityType
        self.unit = unit
        self.ucum = ucum
        self.category = category
        self.range = range
        self.codes = codes
        self.location = location
    }

    /// The primary code: what a reading of this type with no LOINC code of its own is coded as.
    public var primary: HealthKitCode { codes[0] }

    /// `HKQuantityTypeIdentifierBodyMass` -> `BodyMass`.
    public var shortName: String {
        identifier.hasPrefix("HKQuantityTypeIdentifier") ? String(identifier.dropFirst("HKQuantityTypeIdentifier".count)) : identifier
    }
}

/// One LOINC code of a type, with the units and range resolved (the code's own, else its type's).
public struct HealthKitCode: Sendable, Hashable {
    /// The LOINC code (`29463-7`).
    public let code: String
    public let display: String?
    /// The UCUM unit of this code's Observations (`mg/dL` for 2339-0, `mmol/L` for 15074-8).
    public let ucum: String
    /// The HealthKit unit a task of this code is linked in.
    public let unit: String
    /// The plausible values, in ``ucum``.
    public let range: PlausibleRange
    /// The R4 profile its Observations follow (`http://hl7.org/fhir/StructureDefinition/oxygensat`).
    public let profile: String?
    /// LOINC codes an Observation of this code carries beside it (59408-5 carries 2708-6, as the R4
    /// oxygen saturation profile requires).
    public let beside: [String]
    public let location: MappingLocation

    public init(
        code: String, display: String?, ucum: String, unit: String, range: PlausibleRange, profile: String?, beside: [String],
        location: MappingLocation
    ) {
        self.code = code
        self.display = display
        self.ucum = ucum
        self.unit = unit
        self.range = range
        self.profile = profile
        self.beside = beside
        self.location = location
    }
}

/// The values a reading may plausibly take (inclusive), in a code's UCUM unit: readings outside are
/// refused as absurd (a weight of 7000 kg, a temperature of 3 °C).
public struct PlausibleRange: Sendable, Hashable {
    public let low: Double
    public let high: Double

    public init(low: Double, high: Double) {
        self.low = low
        self.high = high
    }

    public func contains(_ value: Double) -> Bool { value.isFinite && value >= low && value <= high }
}

/// A row of the table: a type and one of its codes.
public struct HealthKitMatch: Sendable, Hashable {
    public let type: HealthKitQuantityType
    public let code: HealthKitCode

    public init(type: HealthKitQuantityType, code: HealthKitCode) {
        self.type = type
        self.code = code
    }

    /// CareKit's linkage of a task of this code: the type, its aggregation, the code's HealthKit unit.
    public var linkage: HealthKitLinkage {
        HealthKitLinkage(quantityIdentifier: type.identifier, quantityType: type.quantityType, unitString: code.unit)
    }

    /// The observation-category code of its Observations.
    public var category: String { type.category }
}

/// A LOINC panel whose components are codes of the table (blood pressure 85354-9: 8480-6, 8462-4).
public struct HealthKitPanel: Sendable, Hashable {
    public let code: String
    public let display: String?
    public let category: String
    public let profile: String?
    /// The components' LOINC codes, each a code of a type.
    public let components: [String]
    public let location: MappingLocation

    public init(code: String, display: String?, category: String, profile: String?, components: [String], location: MappingLocation) {
        self.code = code
        self.display = display
        self.category = category
        self.profile = profile
        self.components = components
        self.location = location
    }
}
