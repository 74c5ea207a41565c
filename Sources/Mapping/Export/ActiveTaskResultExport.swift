import CareModel
import FHIR
import Foundation

/// A resource an outcome becomes beside its first one (``ExportedObservation/observation``): another
/// Observation of an active task's results, or the DocumentReference of a file result. It goes out in the
/// same Bundle, by the same rules (PUT by its id, or a conditional create on its identifier), and the
/// outcome's Provenance names it too.
public struct ExportedCompanion: Sendable {
    public var resourceType: String
    /// Its logical id, derived from the outcome's id and the result's name: the same for every version.
    public var id: String
    /// The value of its identifier under the export mapping's identifier system (`<outcome id>/<name>`).
    public var identifierValue: String
    public var resource: Element

    public init(resourceType: String, id: String, identifierValue: String, resource: Element) {
        self.resourceType = resourceType
        self.id = id
        self.identifierValue = identifierValue
        self.resource = resource
    }
}

/// Builds what the outcome of an active task becomes, following its ``ActiveTaskMapping/Task``: one
/// Observation per mapped Observation that has any of its kinds among the outcome's values (its value and
/// components, coded and in UCUM as mapped), and one DocumentReference per file result.
///
/// Everything else is the generic export's (``OutcomeExporter``): subject, status (deletions
/// `entered-in-error`), effective time, issued, performer, basedOn, notes, device, derivedFrom and the
/// Provenance, so an active task's Observation differs from any other only in its code, category and
/// values. The first resource made keeps the outcome's Observation id and identifier; the others get ids
/// derived from the outcome's id and their name, and identifiers `<outcome id>/<name>`.
///
/// A value whose kind the task does not take, two values of one kind, a number where a file belongs (or
/// the reverse), or a unit that is not the mapped one refuses the outcome (it goes to dead letters with the
/// reason): nothing an app sent is dropped without a word.
struct ActiveTaskResultExporter {
    let generic: OutcomeExporter
    let task: ActiveTaskMapping.Task

    func export(_ input: OutcomeExportInput) throws -> ExportedObservation {
        let outcome = input.outcome
        let values = try valuesByKind(outcome)
        // The generic Observation without values: every field but code, category and values.
        var bare = input
        bare.outcome.values = []
        let base = try generic.exportGeneric(bare)
        let effective = generic.effective(of: outcome, task: input.task, zone: outcome.metadata.timezone)
        let isDeletion = outcome.metadata.deletedDate != nil
        var made: [(type: String, name: String, resource: Element)] = []
        for observation in task.observations where observation.kinds.contains(where: { values[$0] != nil }) {
            made.append(("Observation", observation.name, try self.observation(observation, base: base.observation, effective: effective, values: values, outcomeID: outcome.id)))
        }
        let patient = base.observation.child(named: "subject")?.childValue("reference") ?? ""
        let basedOn = base.observation.child(named: "basedOn")?.childValue("reference")
        for document in task.documents {
            guard let value = values[document.kind] else { continue }
            guard case .binary(let data) = value.value else {
                throw ExportRefusal(outcomeID: outcome.id, reason: "the result '\(document.kind)' of the active task '\(task.name)' is a file (a binary value), not a \(value.value.type.rawValue)")
            }
            made.append(("DocumentReference", document.kind, try ResultDocumentReference.resource(
                document, data: data, units: value.units, status: isDeletion ? "entered-in-error" : "current", patient: patient, basedOn: basedOn,
                date: value.createdDate ?? OutcomeExporter.recorded(outcome), outcomeID: outcome.id)))
        }
        guard let first = made.first else {
            // No value of any mapped kind (a deletion whose values are gone, an outcome recorded empty):
            // the generic Observation under the task's first Observation code, saying the data is absent.
            guard let observation = task.observations.first else { return base }
            var empty = base
            empty.observation = try self.observation(observation, base: base.observation, effective: effective, values: [:], outcomeID: outcome.id)
            if !isDeletion { empty.observation.children.append(Self.dataAbsent) }
            empty.observation.children = Self.ordered(empty.observation.children, as: Self.observationOrder)
            return empty
        }
        var exported = base
        exported.observation = Self.identified(first.resource, type: first.type, id: base.id, identifierValue: outcome.id, system: generic.mapping.identifierSystem)
        for other in made.dropFirst() {
            let id = ContentHash.uuid(named: "caregate-active-task|\(outcome.id)|\(task.name)|\(other.type)|\(other.name)").canonicalString.lowercased()
            let value = "\(outcome.id)/\(other.name)"
            exported.companions.append(ExportedCompanion(
                resourceType: other.type, id: id, identifierValue: value,
                resource: Self.identified(other.resource, type: other.type, id: id, identifierValue: value, system: generic.mapping.identifierSystem)))
        }
        if var provenance = exported.provenance {
            let targets = ["\(first.type)/\(base.id)"] + exported.companions.map { "\($0.resourceType)/\($0.id)" }
            let at = provenance.children.firstIndex { $0.name == "target" } ?? 1
            provenance.children.removeAll { $0.name == "target" }
            provenance.children.insert(contentsOf: targets.map { Element(name: "target", children: [Element(name: "reference", value: $0)]) }, at: min(at, provenance.children.count))
            exported.provenance = provenance
        }
        return exported
    }

    /// The outcome's values by kind, each one a result of this task.
    private func valuesByKind(_ outcome: Outcome) throws -> [String: OutcomeValue] {
        let kinds = Set(task.kinds)
        var byKind: [String: OutcomeValue] = [:]
        for value in outcome.values {
            guard let kind = value.kind, kinds.contains(kind) else {
                let known = task.kinds.prefix(8).joined(separator: ", ") + (task.kinds.count > 8 ? ", ..." : "")
                throw ExportRefusal(outcomeID: outcome.id, reason: "a value of kind '\(value.kind.map { String($0.prefix(100)) } ?? "(none)")' is no result of the active task '\(task.name)' (its kinds: \(known))")
            }
            guard byKind[kind] == nil else {
                throw ExportRefusal(outcomeID: outcome.id, reason: "two values of kind '\(kind)': a result of the active task '\(task.name)' is recorded once per outcome")
            }
            byKind[kind] = value
        }
        return byKind
    }

    /// One mapped Observation: the generic one with the mapping's code and category, its value and its
    /// components.
    private func observation(
        _ mapped: ActiveTaskMapping.Observation, base: Element, effective: Element, values: [String: OutcomeValue], outcomeID: String
    ) throws -> Element {
        var children = base.children.filter { !["code", "category", "dataAbsentReason", "component"].contains($0.name) && !Self.isChoice($0.name, of: "value") && !Self.isChoice($0.name, of: "effective") }
        let categories = mapped.categories.isEmpty ? generic.mapping.categories : mapped.categories
        children += categories.map { Element(name: "category", children: [OutcomeExporter.coding($0)]) }
        children.append(Element(name: "code", children: [OutcomeExporter.coding(mapped.code)] + (mapped.code.display.map { [Element(name: "text", value: $0)] } ?? [])))
        children.append(effective)
        if let result = mapped.value, let value = values[result.kind] {
            children.append(try quantity(value, as: result, outcomeID: outcomeID))
        }
        for result in mapped.components {
            guard let value = values[result.kind], let code = result.code else { continue }
            children.append(Element(name: "component", children: [
                Element(name: "code", children: [OutcomeExporter.coding(code)] + (code.display.map { [Element(name: "text", value: $0)] } ?? [])),
                try quantity(value, as: result, outcomeID: outcomeID),
            ]))
        }
        return Element.resource("Observation", children: Self.ordered(children, as: Self.observationOrder))
    }

    /// `valueQuantity` of a number in the mapped UCUM unit (an app may send the unit, or an alias the
    /// export mapping's `units:` table gives it; another unit is refused, not converted silently).
    private func quantity(_ value: OutcomeValue, as result: ActiveTaskMapping.Result, outcomeID: String) throws -> Element {
        let refuse = { (reason: String) in ExportRefusal(outcomeID: outcomeID, reason: reason) }
        let number: String
        switch value.value {
        case .integer(let integer): number = String(integer)
        case .double(let double):
            guard double.isFinite else { throw refuse("the result '\(result.kind)' is \(double), not a finite number") }
            number = OutcomeExporter.decimalText(double)
        default:
            throw refuse("the result '\(result.kind)' of the active task '\(task.name)' is a number, not a \(value.value.type.rawValue)")
        }
        var children = [Element(name: "value", value: number, valueKind: .number)]
        if let units = value.units, !units.isEmpty {
            guard let unit = result.unit else { throw refuse("the result '\(result.kind)' has no unit in the active-task mapping, but the value is in '\(units.prefix(40))'") }
            guard (generic.mapping.units[units] ?? units) == unit else {
                throw refuse("the result '\(result.kind)' is in '\(unit)' (UCUM); the value's unit '\(units.prefix(40))' is not")
            }
        }
        if let unit = result.unit {
            children += [
                Element(name: "unit", value: unit), Element(name: "system", value: "http://unitsofmeasure.org"), Element(name: "code", value: unit),
            ]
        }
        return Element(name: "valueQuantity", children: children)
    }

    static let dataAbsent = Element(name: "dataAbsentReason", children: [Element(name: "coding", children: [
        Element(name: "system", value: "http://terminology.hl7.org/CodeSystem/data-absent-reason"), Element(name: "code", value: "unknown"),
    ])])

    /// `resource` with `id` and the one identifier `system|identifierValue`, in their places.
    private static func identified(_ resource: Element, type: String, id: String, identifierValue: String, system: String) -> Element {
        var children = resource.children.filter { $0.name != "id" && $0.name != "identifier" }
        children.insert(Element(name: "identifier", children: [Element(name: "system", value: system), Element(name: "value", value: identifierValue)]), at: 0)
        children.insert(Element(name: "id", value: id), at: 0)
        return Element.resource(type, children: children)
    }

    private static func isChoice(_ name: String, of base: String) -> Bool {
        name.hasPrefix(base) && name.count > base.count && name[name.index(name.startIndex, offsetBy: base.count)].isUppercase
    }

    /// R4 Observation's elements in their defined order (XML needs it; JSON readers like it).
    static let observationOrder = [
        "id", "meta", "implicitRules", "language", "text", "contained", "extension", "modifierExtension", "identifier", "basedOn", "partOf",
        "status", "category", "code", "subject", "focus", "encounter", "effective", "issued", "performer", "value", "dataAbsentReason",
        "interpretation", "note", "bodySite", "method", "specimen", "device", "referenceRange", "hasMember", "derivedFrom", "component",
    ]

    /// `children` stably sorted by `order` (a choice element by its base name).
    static func ordered(_ children: [Element], as order: [String]) -> [Element] {
        func rank(_ name: String) -> Int {
            if let index = order.firstIndex(of: name) { return index }
            return order.firstIndex { isChoice(name, of: $0) } ?? order.count
        }
        return children.enumerated().sorted { (rank($0.element.name), $0.offset) < (rank($1.element.name), $1.offset) }.map(\.element)
    }
}
