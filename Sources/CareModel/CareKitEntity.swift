import Foundation

/// One entity of a revision record, coded as CareKit 4.0's `OCKEntity`: `{"type": <kind>, "object":
/// <entity>}`, the object in CareKit's wire shape (``CareKitWireObject``).
///
/// `type` is `OCKEntity.EntityType`'s raw value: `patient`, `carePlan`, `contact`, `task`,
/// `healthKitTask` or `outcome`. A task with a ``HealthKitLinkage`` is a `healthKitTask` (CareKit's
/// `OCKHealthKitTask`: an `OCKTask`'s fields and a required `healthKitLinkage`); one without is a `task`.
/// Decoding a `healthKitTask` without its linkage is a `DecodingError`; a `task` keeps no linkage even
/// when its JSON carries one (`OCKTask`'s decoder ignores the key). CareKit's sync pushes the
/// `healthKitTask`s a device made itself (OCKStore's `supportedTypes` include `OCKHealthKitTask`): they
/// decode here, and the app API refuses them as it refuses every task a device pushes (outcomes only).
/// Decoding reads the object with CareGate's decoders, which accept CareKit 4.0's shape (and the older
/// ones CareGate read before).
public struct CareKitEntity: Sendable, Hashable {
    /// `OCKEntity.EntityType`: the kinds a revision record can carry.
    public enum EntityType: String, Sendable, Hashable, Codable, CaseIterable {
        case patient, carePlan, contact, task, healthKitTask, outcome
    }

    /// The entity carried.
    public var entity: CareEntity

    public init(_ entity: CareEntity) {
        self.entity = entity
    }

    /// The `type` written for the entity.
    public var type: EntityType {
        switch entity {
        case .patient: return .patient
        case .carePlan: return .carePlan
        case .contact: return .contact
        case .task(let task): return task.isHealthKitTask ? .healthKitTask : .task
        case .outcome: return .outcome
        }
    }
}

extension CareKitEntity: Codable {
    private enum CodingKeys: String, CodingKey {
        case type, object
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(EntityType.self, forKey: .type) {
        case .patient: entity = .patient(try container.decode(Patient.self, forKey: .object))
        case .carePlan: entity = .carePlan(try container.decode(CarePlan.self, forKey: .object))
        case .contact: entity = .contact(try container.decode(Contact.self, forKey: .object))
        case .task:
            var task = try container.decode(CareTask.self, forKey: .object)
            task.healthKitLinkage = nil
            entity = .task(task)
        case .healthKitTask:
            let task = try container.decode(CareTask.self, forKey: .object)
            guard task.isHealthKitTask else {
                throw DecodingError.dataCorruptedError(
                    forKey: .object, in: container, debugDescription: "a healthKitTask needs its healthKitLinkage (quantityIdentifier, quantityType, unitString)")
            }
            entity = .task(task)
        case .outcome: entity = .outcome(try container.decode(Outcome.self, forKey: .object))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(CareKitWireObject(entity), forKey: .object)
    }
}

/// What CareKit's remote synchronization exchanges (`OCKRevisionRecord`): the entities changed, oldest
/// first, and the knowledge vector of their author. JSON: `{"entities": [OCKEntity...],
/// "knowledgeVector": {"processes": [...]}}`.
public struct CareKitRevisionRecord: Sendable, Hashable, Codable {
    /// The changed entities, in the order they were written (the first is the oldest).
    public var entities: [CareKitEntity]
    /// What the author knew of every process when it wrote the record.
    public var knowledgeVector: KnowledgeVector

    public init(entities: [CareKitEntity], knowledgeVector: KnowledgeVector) {
        self.entities = entities
        self.knowledgeVector = knowledgeVector
    }
}

/// The version UUIDs CareKit links entities by, for the stable ids CareGate links them by: what a server
/// sets on an entity before writing it for an app (``CareKitWireObject``), so that the app's store finds
/// the patient of a care plan and the care plan of a task or contact.
///
/// CareGate stores links by stable id (`patientID`, `carePlanID`) and, when it was given one, a version
/// UUID. An app holds particular versions, so the link written is the UUID of the version the app is
/// sent: usually the current one.
public struct CareKitLinks: Sendable, Hashable {
    /// The version of each patient (by id) that care plans link to.
    public var patientUUIDs: [String: UUID]
    /// The version of each care plan (by id) that tasks and contacts link to.
    public var carePlanUUIDs: [String: UUID]

    public init(patientUUIDs: [String: UUID] = [:], carePlanUUIDs: [String: UUID] = [:]) {
        self.patientUUIDs = patientUUIDs
        self.carePlanUUIDs = carePlanUUIDs
    }

    /// Notes `entity`'s version as the one to link to, when it is a patient or a care plan.
    public mutating func add(_ entity: CareEntity) {
        switch entity {
        case .patient(let patient): patientUUIDs[patient.id] = patient.uuid
        case .carePlan(let plan): carePlanUUIDs[plan.id] = plan.uuid
        case .contact, .task, .outcome: break
        }
    }

    /// `entity` with `patientUUID` / `carePlanUUID` set to the version noted for its stable-id link; a link
    /// to an id not noted here keeps the UUID the entity has. Outcomes already name their task version.
    public func resolving(_ entity: CareEntity) -> CareEntity {
        switch entity {
        case .carePlan(var plan):
            if let id = plan.patientID, let uuid = patientUUIDs[id] { plan.patientUUID = uuid }
            return .carePlan(plan)
        case .task(var task):
            if let id = task.carePlanID, let uuid = carePlanUUIDs[id] { task.carePlanUUID = uuid }
            return .task(task)
        case .contact(var contact):
            if let id = contact.carePlanID, let uuid = carePlanUUIDs[id] { contact.carePlanUUID = uuid }
            return .contact(contact)
        case .patient, .outcome:
            return entity
        }
    }
}
