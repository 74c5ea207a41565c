import CareModel
import Foundation

/// An entity's kind and id.
///
/// The store files one per entity it writes (``BatchSummary/entityChanges``): an outcome's is kept as its
/// task uuid and occurrence, its id formatted only when asked for, so that a bulk import of outcomes does
/// not format an id per outcome that nobody reads. Ids are compared as the store compares them, byte for
/// byte (``ByteExactID``): canonically equivalent ids are two entities, as they are two rows.
public struct EntityKey: Hashable, Sendable {
    public let kind: EntityKind
    private let name: Name

    private enum Name: Hashable, Sendable {
        case id(String)
        case occurrence(taskUUID: UUID, index: Int)
    }

    public init(_ kind: EntityKind, id: String) {
        self.kind = kind
        self.name = .id(id)
    }

    /// The key of the outcome of occurrence `occurrence` of task version `taskUUID`.
    public init(outcomeOf taskUUID: UUID, occurrence: Int) {
        self.kind = .outcome
        self.name = .occurrence(taskUUID: taskUUID, index: occurrence)
    }

    /// The key of `entity`.
    public init(of entity: CareEntity) {
        if case .outcome(let outcome) = entity {
            self.init(outcomeOf: outcome.taskUUID, occurrence: outcome.taskOccurrenceIndex)
        } else {
            self.init(entity.kind, id: entity.id)
        }
    }

    public var id: String {
        switch name {
        case .id(let id): id
        case .occurrence(let taskUUID, let index): Outcome.id(taskUUID: taskUUID, occurrence: index)
        }
    }

    public static func == (lhs: EntityKey, rhs: EntityKey) -> Bool {
        guard lhs.kind == rhs.kind else { return false }
        switch (lhs.name, rhs.name) {
        case (.id(let a), .id(let b)): return ByteExactID.same(a, b)
        case (.occurrence, .occurrence): return lhs.name == rhs.name
        default: return ByteExactID.same(lhs.id, rhs.id)
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(ByteExactID(id))
    }
}
