import Foundation

/// One care entity of any kind, as a batch carries it to the store.
public enum CareEntity: Sendable, Hashable {
    case patient(Patient)
    case carePlan(CarePlan)
    case contact(Contact)
    case task(CareTask)
    case outcome(Outcome)

    public var kind: EntityKind {
        switch self {
        case .patient: return .patient
        case .carePlan: return .carePlan
        case .contact: return .contact
        case .task: return .task
        case .outcome: return .outcome
        }
    }

    public var id: String {
        switch self {
        case .patient(let entity): return entity.id
        case .carePlan(let entity): return entity.id
        case .contact(let entity): return entity.id
        case .task(let entity): return entity.id
        case .outcome(let entity): return entity.id
        }
    }
}

/// A CareModel entity type the store can keep: the five CareKit entities.
public protocol StorableEntity: VersionedEntity {
    /// The entity wrapped for a batch.
    var careEntity: CareEntity { get }
}

extension Patient: StorableEntity {
    public var careEntity: CareEntity { .patient(self) }
}

extension CarePlan: StorableEntity {
    public var careEntity: CareEntity { .carePlan(self) }
}

extension Contact: StorableEntity {
    public var careEntity: CareEntity { .contact(self) }
}

extension CareTask: StorableEntity {
    public var careEntity: CareEntity { .task(self) }
}

extension Outcome: StorableEntity {
    public var careEntity: CareEntity { .outcome(self) }
}
