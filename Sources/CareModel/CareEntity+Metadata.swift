import Foundation

extension CareEntity {
    /// The version header of the wrapped entity.
    public var metadata: EntityMetadata {
        get {
            switch self {
            case .patient(let entity): return entity.metadata
            case .carePlan(let entity): return entity.metadata
            case .contact(let entity): return entity.metadata
            case .task(let entity): return entity.metadata
            case .outcome(let entity): return entity.metadata
            }
        }
        set {
            switch self {
            case .patient(var entity): entity.metadata = newValue; self = .patient(entity)
            case .carePlan(var entity): entity.metadata = newValue; self = .carePlan(entity)
            case .contact(var entity): entity.metadata = newValue; self = .contact(entity)
            case .task(var entity): entity.metadata = newValue; self = .task(entity)
            case .outcome(var entity): entity.metadata = newValue; self = .outcome(entity)
            }
        }
    }

    /// The entity with its version header cleared, for comparing content alone.
    public var content: CareEntity {
        var copy = self
        var metadata = copy.metadata
        metadata.uuid = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        metadata.effectiveDate = Date(timeIntervalSince1970: 0)
        metadata.deletedDate = nil
        metadata.previousVersionUUIDs = []
        metadata.nextVersionUUIDs = []
        metadata.createdDate = nil
        metadata.updatedDate = nil
        copy.metadata = metadata
        return copy
    }
}
