import Foundation

/// One care entity in the JSON CareKit 4.0's Codable types encode and require (`OCKPatient`,
/// `OCKCarePlan`, `OCKContact`, `OCKTask`, `OCKHealthKitTask`, `OCKOutcome`): the shape CareGate serves to apps, separate
/// from the shape it stores (``CareKitJSON/encode(_:)-(CareEntity)``, which content hashes are made of).
///
/// What CareKit 4.0 demands, and how it is met (CareKitStore/CareKitStore/Structs at tag 4.0.0):
/// - synthesized decoders require every non-optional stored property, defaults notwithstanding: `uuid`,
///   `effectiveDate`, `previousVersionUUIDs`, `nextVersionUUIDs`, `timezone` on every entity, and
///   `OCKOutcome.id` (written as CareGate's outcome id, `<taskUUID>_<occurrence>`);
/// - `OCKOutcomeValue` is coded by hand: `type`, `value`, `kind` and `units` (when set) and a required
///   `createdDate`; nothing else. A value CareGate has no creation date for (a target value, a value
///   mapped from FHIR without one) is written with its entity's `createdDate`, else its `effectiveDate`.
///   CareGate's `index` and per-value `timezone` are not CareKit 4.0 fields and are left out (the array
///   keeps the order);
/// - `OCKScheduleElement` requires `calendar` (Foundation's `Calendar` coding), which carries the
///   element's time zone; targets are written as outcome values, as above;
/// - links are by version UUID: `patientUUID` on care plans, `carePlanUUID` on tasks and contacts,
///   `taskUUID` on outcomes. The entity's own fields are written: whoever serves it sets them to the
///   versions the app has (``CareKitLinks``);
/// - a linked task is `OCKHealthKitTask` (synthesized): `OCKTask`'s fields and `healthKitLinkage`
///   (``HealthKitLinkage``: `quantityIdentifier`, `quantityType`, `unitString`, all required);
/// - dates are `JSONEncoder`'s default (seconds since 2001-01-01), data base64, UUIDs upper case.
///
/// CareGate's own fields travel in keys CareKit's decoders ignore, under the names CareGate stores them
/// by: `patientID` (care plans), `carePlanID` (tasks, contacts), `taskID` (outcomes) and `provenance`
/// (the FHIR resource an entity was made from). CareKit's own free fields (`remoteID`, `source`,
/// `userInfo`, `tags`, `groupIdentifier`, `asset`, `notes`) are written as the entity has them: a mapping
/// may fill them, and CareGate does not overwrite what a mapping put there. CareKit 2.1's single version
/// links (`previousVersionUUID`, `nextVersionUUID`), which the stored shape still carries, are not
/// written.
public struct CareKitWireObject: Encodable, Sendable {
    /// The entity written.
    public let entity: CareEntity

    public init(_ entity: CareEntity) {
        self.entity = entity
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: WireKey.self)
        let metadata = entity.metadata
        let valueDate = metadata.createdDate ?? metadata.effectiveDate
        switch entity {
        case .patient(let patient):
            try patient.encodeFields(to: encoder)
        case .carePlan(let plan):
            try plan.encodeFields(to: encoder)
        case .contact(let contact):
            try contact.encodeFields(to: encoder)
        case .task(let task):
            try container.encode(task.id, forKey: "id")
            try container.encodeIfPresent(task.title, forKey: "title")
            try container.encodeIfPresent(task.instructions, forKey: "instructions")
            try container.encode(task.impactsAdherence, forKey: "impactsAdherence")
            try container.encode(WireSchedule(schedule: task.schedule, valueDate: valueDate), forKey: "schedule")
            try container.encodeIfPresent(task.carePlanUUID, forKey: "carePlanUUID")
            try container.encodeIfPresent(task.carePlanID, forKey: "carePlanID")
            // `OCKHealthKitTask`: the same fields and its linkage (served as entity type `healthKitTask`).
            try container.encodeIfPresent(task.healthKitLinkage, forKey: "healthKitLinkage")
        case .outcome(let outcome):
            try container.encode(outcome.id, forKey: "id")
            try container.encode(outcome.taskUUID, forKey: "taskUUID")
            try container.encode(outcome.taskOccurrenceIndex, forKey: "taskOccurrenceIndex")
            try container.encode(outcome.values.map { WireValue(value: $0, valueDate: valueDate) }, forKey: "values")
            try container.encodeIfPresent(outcome.taskID, forKey: "taskID")
        }
        // `OCKVersionedObjectCompatible` and `OCKObjectCompatible`'s fields, and CareGate's provenance.
        try metadata.encode(to: encoder, singleLinks: false)
    }
}

/// A JSON key by name.
struct WireKey: CodingKey, ExpressibleByStringLiteral {
    let stringValue: String
    var intValue: Int? { nil }

    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
    init(stringLiteral value: String) { stringValue = value }
}

/// `OCKSchedule` (synthesized: `elements`) whose elements are written as ``WireElement``s.
private struct WireSchedule: Encodable {
    let schedule: Schedule
    let valueDate: Date

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: WireKey.self)
        try container.encode(schedule.elements.map { WireElement(element: $0, valueDate: valueDate) }, forKey: "elements")
    }
}

/// `OCKScheduleElement` (synthesized): `calendar`, `text`, `duration`, `start`, `end`, `interval`,
/// `targetValues` as CareKit 4.0 outcome values.
private struct WireElement: Encodable {
    let element: ScheduleElement
    let valueDate: Date

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: WireKey.self)
        try container.encode(element.calendar, forKey: "calendar")
        try container.encodeIfPresent(element.text, forKey: "text")
        try container.encode(element.duration, forKey: "duration")
        try container.encode(element.start, forKey: "start")
        try container.encodeIfPresent(element.end, forKey: "end")
        try container.encode(element.interval, forKey: "interval")
        try container.encode(element.targetValues.map { WireValue(value: $0, valueDate: valueDate) }, forKey: "targetValues")
    }
}

/// `OCKOutcomeValue` as CareKit 4.0 codes it: `type`, `value`, `kind` and `units` when set, `createdDate`
/// always (the value's own, else `valueDate`).
struct WireValue: Encodable {
    let value: OutcomeValue
    let valueDate: Date

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: WireKey.self)
        try container.encode(value.type, forKey: "type")
        try value.value.encode(in: &container, forKey: "value")
        try container.encodeIfPresent(value.kind, forKey: "kind")
        try container.encodeIfPresent(value.units, forKey: "units")
        try container.encode(value.createdDate ?? valueDate, forKey: "createdDate")
    }
}
