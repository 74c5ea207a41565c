import CareModel
import Foundation

/// A list of changes that the store applies in one transaction: all of them, or none when one fails.
///
/// Build it with the mutating methods, then pass it to ``Store/apply(_:)``:
///
/// ```swift
/// var batch = StoreBatch()
/// batch.upsert(carePlan)
/// batch.upsert(task)
/// batch.record(rawResource)
/// batch.setCheckpoint(SyncCheckpoint(server: base, resourceType: "CarePlan", cursor: lastUpdated))
/// let summary = try store.apply(batch)
/// ```
///
/// Versioning follows CareKit's store: ``add(_:)`` refuses an id that exists (even deleted);
/// ``update(_:)`` appends a new version after the current one; ``delete(_:id:at:)`` appends a tombstone;
/// ``upsert(_:effective:)`` adds, updates, or does nothing when the content is unchanged (same content hash).
/// A new version never takes effect before the one it follows: by default the store refuses one dated
/// earlier (as CareKit's store does); a write that asks for ``EffectiveDateRule/noEarlierThanPrevious``
/// has it raised to its predecessor's effective date instead, against the version current when it is applied.
public struct StoreBatch: Sendable {
    /// The changes, in the order they are applied.
    public private(set) var changes: [StoreChange] = []
    /// The time stamp of the batch: `createdDate`/`updatedDate` of the versions it writes, and the
    /// deletion date of tombstones that name none. `nil` means the time `apply` runs.
    public var date: Date?

    public init(date: Date? = nil) {
        self.date = date
    }

    /// A batch of `changes`, in their order.
    public init(changes: [StoreChange], date: Date? = nil) {
        self.changes = changes
        self.date = date
    }

    public var isEmpty: Bool { changes.isEmpty }
    public var count: Int { changes.count }

    /// Adds a new entity; the store refuses an id it already has.
    public mutating func add(_ entity: some StorableEntity) { changes.append(.add(entity.careEntity)) }
    /// Appends a new version of an existing, not deleted entity.
    public mutating func update(_ entity: some StorableEntity) { changes.append(.update(entity.careEntity)) }
    /// Adds the entity, or appends a new version when its content changed, or does nothing; `effective`
    /// says what a new version dated before the current one comes to.
    public mutating func upsert(_ entity: some StorableEntity, effective: EffectiveDateRule = .refuseEarlier) {
        changes.append(.upsert(entity.careEntity, effective: effective))
    }
    /// Appends a tombstone to entity `kind/id`, deleted from `date` (the batch date when `nil`); `effective`
    /// says what a date before the current version's effective date comes to.
    public mutating func delete(_ kind: EntityKind, id: String, at date: Date? = nil, effective: EffectiveDateRule = .refuseEarlier) {
        changes.append(.delete(kind, id: id, at: date, effective: effective))
    }
    /// Keeps a raw resource as received (same content twice is kept once).
    public mutating func record(_ resource: SourceResource) { changes.append(.recordSource(resource)) }
    /// Keeps a raw resource as received when an earlier change of this batch to one of `entities` (made
    /// from it) wrote a version: a resource whose entities are all unchanged is not kept again.
    public mutating func record(_ resource: SourceResource, ifChanged entities: [EntityKey]) {
        changes.append(.recordSourceIfChanged(resource, entities: entities))
    }
    /// Links a FHIR resource to an entity made from it.
    public mutating func link(_ link: ResourceLink) { changes.append(.link(link)) }
    /// Moves the pull cursor of one server and resource type.
    public mutating func setCheckpoint(_ checkpoint: SyncCheckpoint) { changes.append(.setCheckpoint(checkpoint)) }
    /// Records the last export committed to a file target (replacing the one recorded before).
    public mutating func recordExportProgress(_ progress: ExportProgress) { changes.append(.recordExportProgress(progress)) }
    /// Records the first day the reports of a frequency cover, unless one is kept already.
    public mutating func recordReportStart(_ start: ReportStart) { changes.append(.recordReportStart(start)) }
    /// Records a patient's consent decision (once per decision uuid; ``ConsentStore``).
    public mutating func recordConsent(_ decision: ConsentDecision) { changes.append(.recordConsent(decision)) }
    /// Queues an export (once per entity version and destination).
    public mutating func enqueue(_ entry: OutboxEntry) { changes.append(.enqueue(entry)) }
    /// Moves outbox entry `id` one step.
    public mutating func transition(outboxEntry id: Int64, _ transition: OutboxTransition) {
        changes.append(.transition(outboxEntryID: id, transition))
    }
    /// Puts failed outbox entry `entry` back in the queue, due at `date` with its last error kept, and
    /// resolves the dead letters waiting for it (the entry is in the queue again; a new refusal is a new
    /// letter): what `caregate outbox retry` and a replay of an export's dead letter do.
    public mutating func requeue(_ entry: OutboxEntry, at date: Date) {
        guard let id = entry.id else { return }
        transition(outboxEntry: id, .failed(error: entry.lastError ?? "retry requested", retryAt: date, at: date))
        changes.append(.settleDeadLettersOfOutboxEntry(id: id, .resolved(resolution: "outbox entry #\(id) requeued")))
    }
    /// Files something given up on, with its reason.
    public mutating func deadLetter(_ letter: DeadLetter) { changes.append(.deadLetter(letter)) }
    /// Records what a replay of dead letter `id` came to, dated by the batch (a resolved letter is left as it is).
    public mutating func settleDeadLetter(_ id: Int64, _ settlement: DeadLetterSettlement) {
        changes.append(.settleDeadLetter(id: id, settlement))
    }
    /// Stores a version of an outcome made elsewhere (a CareKit device) under its own `uuid`, after the
    /// current version of its outcome; a tombstone when it has `deletedDate`. Nothing when the store has
    /// that uuid already (the same push twice stores nothing twice).
    public mutating func appendVersion(keepingUUIDOf outcome: Outcome) { changes.append(.appendVersion(outcome)) }
    /// Takes in the device clocks a patient's device knows (each kept clock becomes the larger), before
    /// the versions of the batch are stamped with them.
    public mutating func mergeKnowledge(patientID: String, clocks: [UUID: Int]) {
        changes.append(.mergeKnowledge(patientID: patientID, clocks: clocks))
    }
    /// Takes in what a device's push teaches of its patient's device processes, by the rule of
    /// ``DeviceKnowledgePush`` (only the processes the patient's vector serves or the push carries, within
    /// ``DeviceKnowledgeLimits``), before the versions of the batch are stamped with them.
    public mutating func admitKnowledge(_ push: DeviceKnowledgePush) {
        changes.append(.admitKnowledge(push))
    }
    /// Ends the revision the versions written so far make: the versions after it are filed in the revision
    /// log as a revision of their own (a tick of the store's clock, a stamp per patient), as a batch of
    /// their own would be, though in the same transaction. A writer that puts what were separate batches
    /// in one transaction (fewer commits) keeps what devices pull revision by revision the same.
    public mutating func endRevision() { changes.append(.endRevision) }
    /// Appends any change.
    public mutating func append(_ change: StoreChange) { changes.append(change) }
}

/// One change of a ``StoreBatch``.
public enum StoreChange: Sendable {
    case add(CareEntity)
    case update(CareEntity)
    case upsert(CareEntity, effective: EffectiveDateRule = .refuseEarlier)
    case delete(EntityKind, id: String, at: Date?, effective: EffectiveDateRule = .refuseEarlier)
    case recordSource(SourceResource)
    /// A raw resource kept only when the batch wrote a version of one of `entities` before it
    /// (``StoreBatch/record(_:ifChanged:)``).
    case recordSourceIfChanged(SourceResource, entities: [EntityKey])
    case link(ResourceLink)
    case setCheckpoint(SyncCheckpoint)
    /// The last export committed to a file target (``StoreBatch/recordExportProgress(_:)``).
    case recordExportProgress(ExportProgress)
    /// The first day the reports of a frequency cover (``StoreBatch/recordReportStart(_:)``).
    case recordReportStart(ReportStart)
    /// A patient's consent decision (``StoreBatch/recordConsent(_:)``).
    case recordConsent(ConsentDecision)
    case enqueue(OutboxEntry)
    case transition(outboxEntryID: Int64, OutboxTransition)
    case deadLetter(DeadLetter)
    /// What a replay of a dead letter came to (``StoreBatch/settleDeadLetter(_:_:)``).
    case settleDeadLetter(id: Int64, DeadLetterSettlement)
    /// What became of the dead letters waiting for outbox entry `id` (``StoreBatch/requeue(_:at:)``).
    case settleDeadLettersOfOutboxEntry(id: Int64, DeadLetterSettlement)
    /// An outcome version kept under its own uuid (``StoreBatch/appendVersion(keepingUUIDOf:)``).
    case appendVersion(Outcome)
    /// Device clocks of one patient (``StoreBatch/mergeKnowledge(patientID:clocks:)``).
    case mergeKnowledge(patientID: String, clocks: [UUID: Int])
    /// What a push teaches of a patient's device processes (``StoreBatch/admitKnowledge(_:)``).
    case admitKnowledge(DeviceKnowledgePush)
    /// The end of a revision (``StoreBatch/endRevision()``).
    case endRevision
}

/// What a new version (or tombstone) dated before the version it follows comes to.
public enum EffectiveDateRule: Sendable, Equatable {
    /// The store refuses it (``StoreError/effectiveDateBeforePrevious(kind:id:effective:previous:)``), as
    /// CareKit's store does.
    case refuseEarlier
    /// The store raises it to the effective date of the version it follows: a new version never takes
    /// effect before the one it replaces.
    case noEarlierThanPrevious
}

/// What the store did with one entity of a batch.
public struct EntityChange: Equatable, Sendable {
    public var entity: EntityKey
    public var change: VersionChange

    public init(entity: EntityKey, change: VersionChange) {
        self.entity = entity
        self.change = change
    }
}

/// What a batch did, counted by kind of change.
public struct BatchSummary: Equatable, Sendable {
    /// Entities added (first versions).
    public var added = 0
    /// New versions appended by `update` or a changed `upsert`.
    public var updated = 0
    /// Tombstones appended.
    public var deleted = 0
    /// Upserts whose content was unchanged: no new version.
    public var unchanged = 0
    /// Raw resources kept, and those skipped because the same content was already kept.
    public var sourcesRecorded = 0
    public var sourcesUnchanged = 0
    public var linksWritten = 0
    public var checkpointsSet = 0
    /// The ids of the outbox entries enqueued (existing ones for a repeated enqueue), in batch order.
    public var outboxEntryIDs: [Int64] = []
    public var outboxTransitions = 0
    /// The ids of the dead letters filed, in batch order.
    public var deadLetterIDs: [Int64] = []
    /// Dead letters a replay settled (``StoreBatch/settleDeadLetter(_:_:)``) that were still waiting.
    public var deadLettersSettled = 0
    /// For each entity change in batch order, the uuid of the version now current (the new version, or
    /// the unchanged one for an upsert that changed nothing).
    public var versionUUIDs: [UUID] = []
    /// For each entity change in batch order, the entity and what the change came to: the store's word on
    /// created, updated, deleted or unchanged, which the counts above add up.
    public var entityChanges: [EntityChange] = []

    public init() {}

    /// Files what the change of `entity` came to, and counts it (both stores' writers).
    package mutating func file(_ change: VersionChange, _ entity: EntityKey) {
        switch change {
        case .created: added += 1
        case .updated: updated += 1
        case .deleted: deleted += 1
        case .unchanged: unchanged += 1
        }
        entityChanges.append(EntityChange(entity: entity, change: change))
    }

    /// Whether a change filed so far wrote a version (or tombstone) of one of `entities`. The changes of
    /// the entities a resource made come just before its record: the search starts at the end, and stops
    /// once each of `entities` (a resource makes a few) is found.
    package func wroteVersion(ofAny entities: [EntityKey]) -> Bool {
        var pending = entities
        for filed in entityChanges.reversed() {
            if pending.isEmpty { return false }
            guard pending.contains(filed.entity) else { continue }
            if filed.change != .unchanged { return true }
            pending.removeAll { $0 == filed.entity }
        }
        return false
    }
}
