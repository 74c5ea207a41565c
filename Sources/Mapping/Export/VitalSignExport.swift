import CareModel
import FHIR
import Foundation

/// The shape an outcome of readings leaves in: the Observation the R4 vital-signs profiles (and the
/// laboratory and activity categories) want, driven by the LOINC <-> HealthKit table (``ReadingKinds``).
///
/// It applies to an outcome whose values are all readings of table rows (their `kind` a row's
/// ``ReadingKind/valueKind``), as `POST /carekit/v1/observations` stores them, and reshapes what
/// ``OutcomeExporter`` built:
/// - one row: `code` is the row's LOINC codes, the profile's own first (oxygen saturation 2708-6 beside
///   59408-5; resting heart rate 40443-4 beside 8867-4), with its HealthKit coding; `category` the row's
///   (vital-signs, laboratory, activity); `valueQuantity` in the row's UCUM unit, with its UCUM code.
///   A discrete type gives the occurrence's latest reading, at its own time (the outcome is one
///   Observation, and each new reading makes a new version of it); a cumulative one (steps) gives the
///   sum of its readings over the occurrence's window (`effectivePeriod`);
/// - the components of one panel (systolic 8480-6 and diastolic 8462-4 of 85354-9): ONE panel
///   Observation with a component for each, from the latest time that has both;
/// - `meta.profile`: the row's profile, else the R4 vital-signs profile of the code (FHIR R4 §8.1.2,
///   the vital signs table), when there is one.
/// Anything else (values of no row, rows of different panels, a panel with a component missing) keeps
/// the export mapping's shape.
public struct VitalSignExport: Sendable {
    public let kinds: ReadingKinds

    public init(kinds: ReadingKinds) {
        self.kinds = kinds
    }

    /// The R4 vital-signs profiles, by the LOINC code the profile fixes.
    static let r4Profiles: [String: String] = [
        "85353-1": "vitalspanel", "9279-1": "resprate", "8867-4": "heartrate", "2708-6": "oxygensat", "8310-5": "bodytemp",
        "8302-2": "bodyheight", "9843-4": "headcircum", "29463-7": "bodyweight", "39156-5": "bmi", "85354-9": "bp",
    ].mapValues { "http://hl7.org/fhir/StructureDefinition/\($0)" }

    static let categorySystem = "http://terminology.hl7.org/CodeSystem/observation-category"
    static let ucum = "http://unitsofmeasure.org"

    /// `observation` (built by ``OutcomeExporter`` from `input`) in its reading shape, or nil when the
    /// outcome is not one of readings.
    func reshape(_ observation: Element, input: OutcomeExportInput) -> Element? {
        let values = input.outcome.values
        guard !values.isEmpty, !kinds.kinds.isEmpty,
              let effective = observation.children.first(where: { $0.name == "effectiveDateTime" || $0.name == "effectivePeriod" }) else { return nil }
        var rows: [String: ReadingKind] = [:]
        for value in values {
            guard let key = value.kind, let row = kinds.kinds.first(where: { $0.valueKind == key }), case .double = value.value else { return nil }
            rows[key] = row
        }
        var replaced: [Element] = []
        let codes: [String]
        var category: String?
        if rows.count == 1, let row = rows.values.first {
            codes = row.loincCodes + row.besideCodes.filter { !row.loincCodes.contains($0) }
            category = row.category
            replaced.append(codeElement(codes, healthKit: row.healthKitIdentifier, title: input.task.title))
            if row.isCumulative {
                let sum = values.reduce(0.0) { $0 + Self.number($1) }
                replaced.append(effective)
                replaced.append(quantity(sum, unit: row.ucumUnit))
            } else {
                guard let latest = values.max(by: { ($0.createdDate ?? .distantPast) < ($1.createdDate ?? .distantPast) }) else { return nil }
                replaced.append(time(of: latest) ?? effective)
                replaced.append(quantity(Self.number(latest), unit: row.ucumUnit))
            }
        } else {
            // The components of one panel, each present at one time.
            let panels = Set(rows.values.map(\.panelCode))
            guard panels.count == 1, let panelCode = panels.first ?? nil else { return nil }
            let members = kinds.components(ofPanel: panelCode)
            var byTime: [Date: [String: OutcomeValue]] = [:]
            for value in values { if let time = value.createdDate, let key = value.kind { byTime[time, default: [:]][key] = value } }
            guard let (_, complete) = byTime.filter({ entry in members.allSatisfy { entry.value[$0.valueKind] != nil } }).max(by: { $0.key < $1.key }),
                  let first = complete.values.first
            else { return nil }
            let panel = kinds.panels[panelCode]
            codes = [panelCode]
            category = panel?.category ?? members.first?.category
            replaced.append(codeElement(codes, healthKit: nil, title: input.task.title))
            replaced.append(time(of: first) ?? effective)
            for member in members {
                guard let value = complete[member.valueKind] else { continue }
                replaced.append(Element(name: "component", children: [
                    codeElement(member.loincCodes + member.besideCodes, healthKit: member.healthKitIdentifier, title: nil),
                    quantity(Self.number(value), unit: member.ucumUnit),
                ]))
            }
        }
        if let category {
            replaced.append(Element(name: "category", children: [Element(name: "coding", children: [
                Element(name: "system", value: Self.categorySystem), Element(name: "code", value: category),
            ])]))
        }
        let profile = rows.count == 1 ? rows.values.first?.profile : rows.values.first?.panelCode.flatMap { kinds.panels[$0]?.profile }
        if let profile = profile ?? codes.lazy.compactMap({ Self.r4Profiles[$0] }).first {
            replaced.append(Element(name: "meta", children: [Element(name: "profile", value: profile)]))
        }
        let dropped: Set<String> = ["meta", "category", "code", "effectiveDateTime", "effectivePeriod", "valueQuantity", "valueInteger", "component"]
        let isDeletion = input.outcome.metadata.deletedDate != nil
        var children = observation.children.filter { !dropped.contains($0.name) }
        children += isDeletion ? replaced.filter { $0.name != "valueQuantity" && $0.name != "component" } : replaced
        if isDeletion, !children.contains(where: { $0.name == "dataAbsentReason" }) {
            // vs-2: a vital sign with no value and no component says why.
            children.append(Element(name: "dataAbsentReason", children: [Element(name: "coding", children: [
                Element(name: "system", value: "http://terminology.hl7.org/CodeSystem/data-absent-reason"), Element(name: "code", value: "unknown"),
            ])]))
        }
        return Element.resource("Observation", children: Self.ordered(children))
    }

    /// A reading value's number.
    private static func number(_ value: OutcomeValue) -> Double {
        if case .double(let number) = value.value { return number }
        return 0
    }

    private func codeElement(_ loinc: [String], healthKit: String?, title: String?) -> Element {
        var children = loinc.map { code in
            Element(name: "coding", children: [Element(name: "system", value: ReadingKind.loinc), Element(name: "code", value: code)])
        }
        if let healthKit {
            children.append(Element(name: "coding", children: [
                Element(name: "system", value: ReadingKind.healthKitSystem), Element(name: "code", value: healthKit),
            ]))
        }
        if let title, !title.isEmpty { children.append(Element(name: "text", value: title)) }
        return Element(name: "code", children: children)
    }

    private func quantity(_ number: Double, unit: String) -> Element {
        Element(name: "valueQuantity", children: [
            Element(name: "value", value: OutcomeExporter.decimalText(number), valueKind: .number), Element(name: "unit", value: unit),
            Element(name: "system", value: Self.ucum), Element(name: "code", value: unit),
        ])
    }

    private func time(of value: OutcomeValue) -> Element? {
        value.createdDate.map { Element(name: "effectiveDateTime", value: FHIRDateFormat.dateTime($0, in: value.timezone)) }
    }

    /// Observation's elements in the order R4 defines them (what XML needs; JSON does not mind).
    private static let order = [
        "id", "meta", "implicitRules", "language", "text", "contained", "extension", "modifierExtension", "identifier", "basedOn", "partOf",
        "status", "category", "code", "subject", "focus", "encounter", "effectiveDateTime", "effectivePeriod", "effectiveTiming",
        "effectiveInstant", "issued", "performer", "valueQuantity", "valueCodeableConcept", "valueString", "valueBoolean", "valueInteger",
        "valueRange", "valueRatio", "valueSampledData", "valueTime", "valueDateTime", "valuePeriod", "dataAbsentReason", "interpretation",
        "note", "bodySite", "method", "specimen", "device", "referenceRange", "hasMember", "derivedFrom", "component",
    ]
    private static let rank = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($1, $0) })

    private static func ordered(_ children: [Element]) -> [Element] {
        children.enumerated().sorted { (rank[$0.element.name] ?? order.count, $0.offset) < (rank[$1.element.name] ?? order.count, $1.offset) }.map(\.element)
    }
}
