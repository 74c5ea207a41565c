import CareModel

/// Counts of what a store holds, for `caregate store stats` and for checks after an import.
public struct StoreStatistics: Equatable, Sendable {
    /// Per kind of entity: all versions, current entities (not deleted), and deleted entities.
    public struct EntityCounts: Equatable, Sendable {
        public var versions: Int
        public var current: Int
        public var deleted: Int
        public init(versions: Int, current: Int, deleted: Int) {
            self.versions = versions
            self.current = current
            self.deleted = deleted
        }
    }

    public var entities: [EntityKind: EntityCounts]
    public var outcomeValues: Int
    public var sourceResources: Int
    public var resourceLinks: Int
    public var checkpoints: Int
    /// Outbox entries per state (every state present, zero when empty).
    public var outbox: [OutboxState: Int]
    /// Dead letters waiting for a person (not resolved by a replay).
    public var deadLetters: Int
    /// Dead letters a replay resolved (kept, no longer waiting).
    public var resolvedDeadLetters: Int

    public init(
        entities: [EntityKind: EntityCounts], outcomeValues: Int, sourceResources: Int, resourceLinks: Int,
        checkpoints: Int, outbox: [OutboxState: Int], deadLetters: Int, resolvedDeadLetters: Int = 0
    ) {
        self.entities = entities
        self.outcomeValues = outcomeValues
        self.sourceResources = sourceResources
        self.resourceLinks = resourceLinks
        self.checkpoints = checkpoints
        self.outbox = outbox
        self.deadLetters = deadLetters
        self.resolvedDeadLetters = resolvedDeadLetters
    }
}
