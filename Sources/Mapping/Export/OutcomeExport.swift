import CareModel
import FHIR
import Foundation

/// An outcome as the export needs it: the version to send (a tombstone for a deletion), the task version
/// it belongs to, the task's patient, and whether the provider has, or may have, an earlier version of it.
public struct OutcomeExportInput: Sendable {
    public var outcome: Outcome
    public var task: CareTask
    public var patient: Patient?
    /// Whether the provider has, or may have, received an earlier version of this outcome's Observation:
    /// one was sent to it (an attempt the server may have stored counts). It makes the Observation
    /// `amended` rather than the mapping's status (FHIR: `amended` follows a final version of the same
    /// resource).
    public var earlierVersionMayBeAtProvider: Bool
    /// The provider's resources earlier versions of this outcome were made from (`Observation/<id>`): what
    /// an edit on the device revises. They stay the provider's (a patient's edit never overwrites a
    /// clinician's record); the export writes its own Observation, `derivedFrom` them.
    public var derivedFrom: [String]
    /// The earlier versions of this outcome that were sent to the provider and may be there, oldest
    /// first (empty when the caller does not know): a survey's export withdraws the extracted
    /// Observations they gave that this version does not (``ExportedCompanion``, `entered-in-error`).
    public var earlierVersionsAtProvider: [Outcome] = []

    /// Without `earlierVersionMayBeAtProvider`, any earlier version of the outcome counts (the store's
    /// outbox, which says what was sent, is not asked).
    public init(outcome: Outcome, task: CareTask, patient: Patient?, earlierVersionMayBeAtProvider: Bool? = nil, derivedFrom: [String] = []) {
        self.outcome = outcome
        self.task = task
        self.patient = patient
        self.earlierVersionMayBeAtProvider = earlierVersionMayBeAtProvider ?? !outcome.metadata.previousVersionUUIDs.isEmpty
        self.derivedFrom = derivedFrom
    }
}

/// What an outcome became: its Observation and, when the mapping asks, the Provenance that says the
/// patient and their app recorded it.
public struct ExportedObservation: Sendable {
    /// The Observation's logical id, derived from the outcome's id: the same for every version.
    public var id: String
    public var observation: Element
    public var provenance: Element?
    /// Whether this is the outcome's first version (a create rather than an update, for the server). It
    /// picks the request, not the status: a later version edited before any was sent is `final`, and
    /// still goes as an update.
    public var isFirstVersion: Bool
    /// Further resources of the outcome, written after the first and each with its own id and identifier:
    /// an active task's other Observations and file results (``ActiveTaskResultExporter``), a survey's
    /// extracted Observations.
    public var companions: [ExportedCompanion] = []

    public init(id: String, observation: Element, provenance: Element?, isFirstVersion: Bool, companions: [ExportedCompanion] = []) {
        self.id = id
        self.observation = observation
        self.provenance = provenance
        self.isFirstVersion = isFirstVersion
        self.companions = companions
    }
}

/// Why an outcome cannot be exported; it goes to dead letters with this reason.
public struct ExportRefusal: Error, Sendable, CustomStringConvertible {
    public let outcomeID: String
    public let reason: String

    public init(outcomeID: String, reason: String) {
        self.outcomeID = outcomeID
        self.reason = reason
    }
}

/// Builds the R4 Observation of an outcome, following an ``ExportMapping``. Pure: no store, no I/O.
///
/// - identity: `Observation.id` is the outcome id with `_` made `-` (`<task version uuid>-<occurrence>`),
///   and `identifier` carries the outcome id under the mapping's system, so every version of one
///   outcome updates the same Observation;
/// - status: `entered-in-error` for a deletion; `amended` when the provider has, or may have, an earlier
///   version of this Observation (``OutcomeExportInput/earlierVersionMayBeAtProvider``); else the
///   mapping's, also for a version edited on the device before any version was sent;
/// - derivedFrom: the provider's Observations the outcome's earlier versions were made from, when the
///   device edited one (``OutcomeExportInput/derivedFrom``): the provider keeps its own, and gets the
///   patient's as a new Observation that names it (the Provenance names it too, as the entity derived);
/// - code: the task's FHIR codes kept at import (`fhir.codes`), else the mapping's code, with the task's
///   title as text;
/// - subject and performer: the patient the task's patient entity was made from (`Patient/<id>`); an
///   outcome whose patient came from no FHIR Patient cannot be placed in the provider's record and is refused;
/// - effective[x]: the values' own time when they share one, else the occurrence's window (a Period for
///   an all-day or timed window, the start as dateTime for an instant);
/// - values: one value is value[x]; several are components, each coded by its `kind` (`system|code`)
///   or, lacking one, by the Observation's code with the value's position as text;
/// - basedOn: the CarePlan or MedicationRequest the task was made from.
public struct OutcomeExporter: Sendable {
    public let mapping: ExportMapping
    /// The active tasks: an outcome of a task whose codes one names becomes what it maps its results to.
    public let activeTasks: ActiveTaskMapping?
    /// The shape of outcomes of readings (``VitalSignExport``): none until a table is given.
    public var vitalSigns = VitalSignExport(kinds: ReadingKinds([]))

    public init(mapping: ExportMapping, activeTasks: ActiveTaskMapping? = nil) {
        self.mapping = mapping
        self.activeTasks = activeTasks
    }

    /// The Observation id of outcome `outcomeID`.
    public static func observationID(of outcomeID: String) -> String {
        String(decoding: outcomeID.utf8.map { $0 == UInt8(ascii: "_") ? UInt8(ascii: "-") : $0 }, as: UTF8.self)
    }

    public func export(_ input: OutcomeExportInput) throws -> ExportedObservation {
        if let task = activeTasks?.task(forCodes: input.task.metadata.linkage.codes) {
            return try ActiveTaskResultExporter(generic: self, task: task).export(input)
        }
        return try exportGeneric(input)
    }

    /// The generic Observation of an outcome (no active task's mapping).
    func exportGeneric(_ input: OutcomeExportInput) throws -> ExportedObservation {
        let outcome = input.outcome
        let refuse = { (reason: String) in ExportRefusal(outcomeID: outcome.id, reason: reason) }
        guard let patientReference = Self.reference(of: input.patient?.metadata.provenance, types: ["Patient"]) else {
            throw refuse("its patient was not made from a FHIR Patient, so it has no subject in the provider's record")
        }
        let zone = outcome.metadata.timezone
        let isDeletion = outcome.metadata.deletedDate != nil
        let id = Self.observationID(of: outcome.id)
        var children: [Element] = [Element(name: "id", value: id)]
        children.append(Element(name: "identifier", children: [
            Element(name: "system", value: mapping.identifierSystem), Element(name: "value", value: outcome.id),
        ]))
        if let basedOn = Self.reference(of: input.task.metadata.provenance, types: ["CarePlan", "MedicationRequest", "ServiceRequest"]) {
            children.append(Element(name: "basedOn", children: [Element(name: "reference", value: basedOn)]))
        }
        let status = isDeletion ? "entered-in-error" : input.earlierVersionMayBeAtProvider ? "amended" : mapping.status
        children.append(Element(name: "status", value: status))
        for category in mapping.categories {
            children.append(Element(name: "category", children: [Self.coding(category)]))
        }
        let code = observationCode(of: input.task)
        children.append(code)
        children.append(Element(name: "subject", children: [Element(name: "reference", value: patientReference)]))
        children.append(effective(of: outcome, task: input.task, zone: zone))
        children.append(Element(name: "issued", value: FHIRDateFormat.instant(Self.recorded(outcome))))
        if mapping.performerIsPatient {
            children.append(Element(name: "performer", children: [Element(name: "reference", value: patientReference)]))
        }
        let values = outcome.values
        if values.count == 1, let value = values.first {
            children.append(try valueElement(value, outcomeID: outcome.id))
        }
        for note in outcome.metadata.notes ?? [] {
            let text = [note.title, note.content].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ": ")
            guard !text.isEmpty else { continue }
            var noteChildren: [Element] = []
            if let author = note.author, !author.isEmpty { noteChildren.append(Element(name: "authorString", value: author)) }
            noteChildren.append(Element(name: "text", value: text))
            children.append(Element(name: "note", children: noteChildren))
        }
        if let device = outcome.metadata.source, !device.isEmpty {
            children.append(Element(name: "device", children: [Element(name: "display", value: device)]))
        }
        if values.isEmpty, !isDeletion {
            children.append(Element(name: "dataAbsentReason", children: [Element(name: "coding", children: [
                Element(name: "system", value: "http://terminology.hl7.org/CodeSystem/data-absent-reason"),
                Element(name: "code", value: "unknown"),
            ])]))
        }
        for source in input.derivedFrom {
            children.append(Element(name: "derivedFrom", children: [Element(name: "reference", value: source)]))
        }
        if values.count > 1 {
            for (position, value) in values.enumerated() {
                let componentCode = value.kind.flatMap(Self.concept(fromKey:))
                    ?? Element(name: "code", children: code.children.filter { $0.name == "coding" } + [Element(name: "text", value: "value \(position + 1)")])
                children.append(Element(name: "component", children: [componentCode, try valueElement(value, outcomeID: outcome.id)]))
            }
        }
        var observation = Element.resource("Observation", children: children)
        if let reading = vitalSigns.reshape(observation, input: input) { observation = reading }
        let provenance = mapping.provenance
            ? provenanceResource(target: "Observation/\(id)", outcome: outcome, patient: patientReference, derivedFrom: input.derivedFrom) : nil
        return ExportedObservation(
            id: id, observation: observation, provenance: provenance,
            isFirstVersion: !isDeletion && outcome.metadata.previousVersionUUIDs.isEmpty)
    }

    /// The Provenance of another resource made from `input`'s outcome (a survey's QuestionnaireResponse,
    /// `target`), as an Observation's would be; nil when the mapping asks for none.
    public func provenance(target: String, of input: OutcomeExportInput, patient: String) -> Element? {
        mapping.provenance ? provenanceResource(target: target, outcome: input.outcome, patient: patient, derivedFrom: input.derivedFrom) : nil
    }

    /// When the outcome version was written: the Observation's `issued` and the Provenance's `recorded`.
    static func recorded(_ outcome: Outcome) -> Date {
        outcome.metadata.updatedDate ?? outcome.metadata.createdDate ?? outcome.metadata.effectiveDate
    }

    // MARK: - Parts

    /// `Type/id` of the FHIR resource an entity was made from, when it is of one of `types`.
    private static func reference(of provenance: Provenance?, types: Set<String>) -> String? {
        guard let provenance, types.contains(provenance.fhirType), !provenance.fhirID.isEmpty else { return nil }
        return "\(provenance.fhirType)/\(provenance.fhirID)"
    }

    /// Observation.code: the task's codes, else the mapping's, with the task's title as text.
    private func observationCode(of task: CareTask) -> Element {
        let keys = task.metadata.linkage.codes
        var codings = keys.compactMap(Self.codingElement(fromKey:))
        if codings.isEmpty, let code = mapping.code { codings = [Self.coding(code)] }
        var children = codings
        if let title = task.title, !title.isEmpty { children.append(Element(name: "text", value: title)) }
        if children.isEmpty { children.append(Element(name: "text", value: task.id)) }
        return Element(name: "code", children: children)
    }

    static func coding(_ coding: ExportMapping.Coding) -> Element {
        var children: [Element] = []
        if let system = coding.system { children.append(Element(name: "system", value: system)) }
        children.append(Element(name: "code", value: coding.code))
        if let display = coding.display { children.append(Element(name: "display", value: display)) }
        return Element(name: "coding", children: children)
    }

    /// A `system|code` key (as import keeps codes) as a Coding; a key without `|` is a code alone.
    private static func codingElement(fromKey key: String) -> Element? {
        // By bytes: a Character split tests grapheme breaks at every character of every key.
        let bytes = key.utf8
        guard let bar = bytes.firstIndex(of: UInt8(ascii: "|")) else { return nil }
        let code = bytes[bytes.index(after: bar)...]
        guard !code.isEmpty, !code.contains(UInt8(ascii: " ")), let system = String(bytes[..<bar]), let codeText = String(code) else { return nil }
        return Element(name: "coding", children: [Element(name: "system", value: system), Element(name: "code", value: codeText)])
    }

    /// A value's `kind` as a CodeableConcept: a coding when it is a `system|code` key, else text.
    private static func concept(fromKey key: String) -> Element? {
        if let coding = codingElement(fromKey: key) { return Element(name: "code", children: [coding]) }
        return key.isEmpty ? nil : Element(name: "code", children: [Element(name: "text", value: key)])
    }

    func effective(of outcome: Outcome, task: CareTask, zone: TimeZone) -> Element {
        // The values' own time when they share one that still places the Observation in this occurrence
        // (import places an Observation by its time), else the occurrence's window.
        let times = Set(outcome.values.compactMap(\.createdDate))
        if times.count == 1, outcome.values.allSatisfy({ $0.createdDate != nil }), let time = times.first,
           task.schedule.occurrence(outcome.taskOccurrenceIndex, holds: time) {
            let valueZone = outcome.values.first?.timezone ?? zone
            return Element(name: "effectiveDateTime", value: FHIRDateFormat.dateTime(time, in: valueZone))
        }
        guard let event = task.schedule.event(occurrence: outcome.taskOccurrenceIndex) else {
            return Element(name: "effectiveDateTime", value: FHIRDateFormat.dateTime(outcome.metadata.effectiveDate, in: zone))
        }
        let eventZone = event.element.timeZone
        if event.end > event.start {
            return Element(name: "effectivePeriod", children: [
                Element(name: "start", value: FHIRDateFormat.dateTime(event.start, in: eventZone)),
                Element(name: "end", value: FHIRDateFormat.dateTime(event.end, in: eventZone)),
            ])
        }
        return Element(name: "effectiveDateTime", value: FHIRDateFormat.dateTime(event.start, in: eventZone))
    }

    /// value[x] of one outcome value, by its type.
    private func valueElement(_ value: OutcomeValue, outcomeID: String) throws -> Element {
        switch value.value {
        case .integer(let number):
            if let units = value.units, !Self.textUnits.contains(units) { return try quantity(String(number), units: units, outcomeID: outcomeID) }
            return Element(name: "valueInteger", value: String(number), valueKind: .number)
        case .double(let number):
            guard number.isFinite else { throw ExportRefusal(outcomeID: outcomeID, reason: "the value \(number) is not a finite number") }
            return try quantity(Self.decimalText(number), units: value.units, outcomeID: outcomeID)
        case .boolean(let flag):
            return Element(name: "valueBoolean", value: flag ? "true" : "false", valueKind: .boolean)
        case .text(let text):
            // A coded answer, as import keeps one: the text with its `system|code` as units.
            if let units = value.units, let coding = Self.codingElement(fromKey: units) {
                return Element(name: "valueCodeableConcept", children: [coding] + (text.isEmpty ? [] : [Element(name: "text", value: text)]))
            }
            if value.units == "time", FHIRDateFormat.isTime(text) { return Element(name: "valueTime", value: text) }
            guard !text.isEmpty else { throw ExportRefusal(outcomeID: outcomeID, reason: "an empty text value has no FHIR form (valueString may not be empty)") }
            return Element(name: "valueString", value: text)
        case .date(let date):
            return Element(name: "valueDateTime", value: FHIRDateFormat.dateTime(date, in: value.timezone))
        case .binary(let data):
            guard mapping.binary == .text else {
                throw ExportRefusal(outcomeID: outcomeID, reason: "binary data (\(data.count) bytes) has no Observation value in R4, and the export mapping sends it nowhere (`binary: dead-letter`)")
            }
            guard !data.isEmpty else { throw ExportRefusal(outcomeID: outcomeID, reason: "an empty binary value has no FHIR form") }
            return Element(name: "valueString", value: data.base64EncodedString())
        }
    }

    /// Units import writes for values that are not quantities.
    private static let textUnits: Set<String> = ["time", "period", "SampledData"]

    /// valueQuantity with UCUM where the unit is known (itself, or through the mapping's table).
    private func quantity(_ number: String, units: String?, outcomeID: String) throws -> Element {
        var children = [Element(name: "value", value: number, valueKind: .number)]
        if let units, !units.isEmpty {
            if let ucum = mapping.units[units] ?? (UCUM.recognizes(units) ? units : nil) {
                children += [
                    Element(name: "unit", value: units), Element(name: "system", value: "http://unitsofmeasure.org"),
                    Element(name: "code", value: ucum),
                ]
            } else if mapping.unknownUnits == .text {
                children.append(Element(name: "unit", value: units))
            } else {
                throw ExportRefusal(outcomeID: outcomeID, reason: "the unit '\(units)' is not UCUM and the export mapping lists no UCUM code for it (`unknown-units: dead-letter`)")
            }
        }
        return Element(name: "valueQuantity", children: children)
    }

    /// A decimal as FHIR writes it: no exponent, no trailing `.0` beyond what the number needs.
    static func decimalText(_ number: Double) -> String {
        if number == number.rounded(), abs(number) < 1e15 { return String(format: "%.0f", number) }
        var text = String(format: "%.15g", number)
        if text.utf8.contains(where: { $0 | 0x20 == UInt8(ascii: "e") }) { text = String(format: "%.10f", number) }
        if text.utf8.contains(UInt8(ascii: ".")) {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text
    }

    /// The Provenance of an exported Observation: recorded when the outcome version was written, the
    /// patient as author and the app or device (the outcome's `source`) as the device that assembled it.
    private func provenanceResource(target: String, outcome: Outcome, patient: String, derivedFrom: [String]) -> Element {
        var agents = [Element(name: "agent", children: [
            Element(name: "type", children: [Element(name: "coding", children: [
                Element(name: "system", value: "http://terminology.hl7.org/CodeSystem/provenance-participant-type"),
                Element(name: "code", value: "author"),
            ])]),
            Element(name: "who", children: [Element(name: "reference", value: patient)]),
        ])]
        if let device = outcome.metadata.source, !device.isEmpty {
            agents.append(Element(name: "agent", children: [
                Element(name: "type", children: [Element(name: "coding", children: [
                    Element(name: "system", value: "http://terminology.hl7.org/CodeSystem/provenance-participant-type"),
                    Element(name: "code", value: "assembler"),
                ])]),
                Element(name: "who", children: [Element(name: "display", value: device)]),
            ]))
        }
        return Element.resource("Provenance", children: [
            // One Provenance per outcome version: its id is the version's uuid.
            Element(name: "id", value: outcome.metadata.uuid.canonicalString.lowercased()),
            Element(name: "target", children: [Element(name: "reference", value: target)]),
            Element(name: "recorded", value: FHIRDateFormat.instant(Self.recorded(outcome))),
        ] + agents + derivedFrom.map { source in
            Element(name: "entity", children: [
                Element(name: "role", value: "derivation"),
                Element(name: "what", children: [Element(name: "reference", value: source)]),
            ])
        })
    }
}
