import CareModel
import Foundation
import GRDB

/// CareKit's versioning rules (see ``BatchWriter``): add, update, upsert and delete of any entity, the
/// store's version fields and links, and whether incoming content differs from the current version.
extension BatchWriter {
    mutating func add(_ entity: CareEntity) throws {
        if case .outcome(let outcome) = entity {
            // An outcome that exists already is refused by the unique index on its first version.
            let (task, start) = try ownedOccurrence(of: outcome)
            try addOutcome(with(outcome, taskID: task.task.id), eventStart: start)
            return
        }
        if try tip(entity.kind, id: entity.id) != nil {
            throw StoreError.idAlreadyExists(kind: entity.kind, id: entity.id)
        }
        try insertFirstVersion(try resolvingReferences(entity))
    }

    /// Adds the first version of an entity other than an outcome, its references resolved and its id
    /// known to be new.
    mutating func insertFirstVersion(_ entity: CareEntity) throws {
        if try uuidExists(entity.kind, entity.metadata.uuid) {
            throw StoreError.uuidAlreadyExists(kind: entity.kind, uuid: entity.metadata.uuid)
        }
        try insert(entity, after: nil, eventStart: nil)
        summary.file(.created, EntityKey(of: entity))
    }

    /// Adds the first version of an outcome whose task id is filled in and whose occurrence starts at `eventStart`.
    mutating func addOutcome(_ outcome: Outcome, eventStart: Date) throws {
        var outcome = outcome
        // Outcome versions get their uuid from the store, as in CareKit's store.
        outcome.metadata.uuid = uuids.next()
        try insertOutcome(outcome, after: nil, eventStart: eventStart)
        summary.file(.created, EntityKey(outcomeOf: outcome.taskUUID, occurrence: outcome.taskOccurrenceIndex))
    }

    mutating func update(_ entity: CareEntity) throws {
        let (current, eventStart, resolved) = try currentVersion(of: entity)
        guard let current else { throw StoreError.idNotFound(kind: entity.kind, id: entity.id) }
        try appendVersion(resolved, after: current, eventStart: eventStart)
    }

    mutating func upsert(_ entity: CareEntity, effective rule: EffectiveDateRule) throws {
        let (current, eventStart, resolved) = try currentVersion(of: entity)
        guard let current else {
            // What `add` would check again is known: the id is new, the outcome's occurrence is owned.
            if case .outcome(let outcome) = resolved, let eventStart {
                try addOutcome(outcome, eventStart: eventStart)
            } else {
                try insertFirstVersion(resolved)
            }
            return
        }
        if current.deletedDate != nil {
            // As in CareKit, an occurrence whose outcome was deleted can be given an outcome again: it
            // follows the tombstone, in effect no earlier than the deletion. Other deleted ids stay deleted.
            guard case .outcome(var outcome) = resolved, let eventStart else {
                throw StoreError.entityDeleted(kind: entity.kind, id: entity.id)
            }
            outcome.metadata.effectiveDate = max(outcome.metadata.effectiveDate, current.effectiveDate)
            try insertOutcome(with(outcome, uuid: uuids.next()), after: current, eventStart: eventStart)
            summary.file(.created, EntityKey(outcomeOf: outcome.taskUUID, occurrence: outcome.taskOccurrenceIndex))
            return
        }
        if try isUnchanged(resolved, current: current) {
            summary.file(.unchanged, EntityKey(of: resolved))
            summary.versionUUIDs.append(current.uuid)
            return
        }
        var version = resolved
        if rule == .noEarlierThanPrevious, version.metadata.effectiveDate < current.effectiveDate {
            var metadata = version.metadata
            metadata.effectiveDate = current.effectiveDate
            version.metadata = metadata
        }
        try appendVersion(version, after: current, eventStart: eventStart)
    }

    /// The tip of `entity`'s id (nil when it has none), the event start of an outcome, and the entity
    /// with its references resolved.
    mutating func currentVersion(of entity: CareEntity) throws -> (Tip?, Date?, CareEntity) {
        if case .outcome(let outcome) = entity {
            let (task, start) = try ownedOccurrence(of: outcome)
            let current = try outcomeTip(taskUUID: outcome.taskUUID, eventStart: start, occurrence: outcome.taskOccurrenceIndex)
            return (current, start, .outcome(with(outcome, taskID: task.task.id)))
        }
        return (try tip(entity.kind, id: entity.id), nil, try resolvingReferences(entity))
    }

    /// Appends `entity` as the version after `current`.
    mutating func appendVersion(_ entity: CareEntity, after current: Tip, eventStart: Date?) throws {
        if current.deletedDate != nil {
            throw StoreError.entityDeleted(kind: entity.kind, id: entity.id)
        }
        if entity.metadata.effectiveDate < current.effectiveDate {
            throw StoreError.effectiveDateBeforePrevious(
                kind: entity.kind, id: entity.id, effective: entity.metadata.effectiveDate, previous: current.effectiveDate)
        }
        var entity = entity
        // A version fetched from the store and changed still carries the old uuid: give it a new one.
        let uuidTaken = try entity.kind == .outcome || uuidExists(entity.kind, entity.metadata.uuid)
        if uuidTaken {
            entity.metadata.uuid = uuids.next()
        }
        try insert(entity, after: current, eventStart: eventStart)
        summary.file(.updated, EntityKey(of: entity))
    }

    mutating func delete(_ kind: EntityKind, id: String, at requested: Date, effective rule: EffectiveDateRule = .refuseEarlier, uuid: UUID? = nil) throws {
        let current: Tip?
        if kind == .outcome {
            guard let (taskUUID, occurrence) = Self.parseOutcomeID(id) else { throw StoreError.idNotFound(kind: kind, id: id) }
            let task = try taskVersion(taskUUID)
            guard let eventStart = task.task.schedule.eventStart(occurrence: occurrence) else { throw StoreError.idNotFound(kind: kind, id: id) }
            current = try outcomeTip(taskUUID: taskUUID, eventStart: eventStart, occurrence: occurrence)
        } else {
            current = try tip(kind, id: id)
        }
        guard let current else { throw StoreError.idNotFound(kind: kind, id: id) }
        if current.deletedDate != nil { throw StoreError.entityDeleted(kind: kind, id: id) }
        let date = rule == .noEarlierThanPrevious ? max(requested, current.effectiveDate) : requested
        if date < current.effectiveDate {
            throw StoreError.effectiveDateBeforePrevious(kind: kind, id: id, effective: date, previous: current.effectiveDate)
        }
        // The tombstone is a copy of the tip, in effect and deleted from `date`.
        let table = StoreSchema.Table.entity(kind)
        let set = ["uuid", "effectiveDate", "deletedDate", "previousVersionUUID", "createdDate", "updatedDate", "versionNumber"]
        let copied = (EntityRowCodec.commonColumns + EntityRowCodec.specificColumns(kind))
            .filter { !set.contains($0) }
            .joined(separator: ", ")
        let numbered = kind == .outcome ? (columns: ", versionNumber", values: ", versionNumber + 1") : (columns: "", values: "")
        let tombstone = uuid ?? uuids.next()
        if kind != .outcome { writtenTips[EntityKey(kind, id: id)] = nil }
        try db.execute(
            sql: """
                INSERT INTO \(table) (uuid, effectiveDate, deletedDate, previousVersionUUID, createdDate, updatedDate, \(copied)\(numbered.columns))
                SELECT ?, ?, ?, uuid, ?, ?, \(copied)\(numbered.values) FROM \(table) WHERE rowID = ?
                """,
            arguments: [tombstone, date.storeSeconds, date.storeSeconds, now.storeSeconds, now.storeSeconds, current.rowID])
        let tombstoneRowID = db.lastInsertedRowID
        if kind == .outcome {
            try db.execute(
                sql: """
                    INSERT INTO outcomeValue (outcomeRowID, position, type, value, units, kind, valueIndex, createdDate, timezone)
                    SELECT ?, position, type, value, units, kind, valueIndex, createdDate, timezone FROM outcomeValue WHERE outcomeRowID = ?
                    """,
                arguments: [tombstoneRowID, current.rowID])
        }
        try linkForward(table, from: current, to: tombstone, effective: date)
        if !current.others.isEmpty {
            try linkGraph([current] + current.others, to: tombstone, rowID: tombstoneRowID, effective: date)
            try setConflict(outcomeID: id, false)
        }
        try revisions.append(kind, uuid: tombstone, rowID: tombstoneRowID, owner: try owner(ofRow: current.rowID, kind: kind, id: id))
        if kind == .task { forgetTaskVersion(current.uuid) }
        if kind == .outcome, try queuesTombstoneForProvider(outcomeRow: current.rowID) {
            try enqueueExport(outcomeID: id, uuid: tombstone)  // the patient's Observation retracted: entered-in-error
        }
        summary.file(.deleted, EntityKey(kind, id: id))
        summary.versionUUIDs.append(tombstone)
    }

    /// Writes `entity` as a new row (after `previous`, when given) with the store's version fields.
    mutating func insert(_ entity: CareEntity, after previous: Tip?, eventStart: Date?) throws {
        if case .outcome(let outcome) = entity, let eventStart {
            try insertOutcome(outcome, after: previous, eventStart: eventStart)
            return
        }
        var entity = entity
        var metadata = entity.metadata
        metadata.deletedDate = nil
        metadata.previousVersionUUIDs = previous.map { [$0.uuid] } ?? []
        metadata.nextVersionUUIDs = []
        metadata.createdDate = now
        metadata.updatedDate = now
        entity.metadata = metadata
        let kind = entity.kind
        let payload: Data?
        do {
            payload = try codec.payload(entity)
        } catch {
            throw StoreError.invalidEntity(kind: kind, id: entity.id, reason: "cannot be encoded: \(error)")
        }
        // Bound directly (as outcome rows are): GRDB's arguments box and check every value, which cost as
        // much as the insert itself for a version of a long-running task; each value by its own type, not
        // as an existential (``EntityRowCodec/bindInsert(_:metadata:payload:to:)``).
        let statement = RawStatement(try db.cachedStatement(sql: EntityRowCodec.insertSQL[kind] ?? ""), in: db)
        codec.bindInsert(entity, metadata: metadata, payload: payload, to: statement)
        try statement.execute()
        let rowID = db.lastInsertedRowID
        // As the tip's columns read it back: the dates through their store seconds.
        writtenTips[EntityKey(kind, id: entity.id)] = Tip(
            rowID: rowID, uuid: metadata.uuid, effectiveDate: Date(storeSeconds: metadata.effectiveDate.storeSeconds), deletedDate: nil,
            contentHash: metadata.provenance?.contentHash)
        try finishInsert(kind: kind, id: entity.id, metadata: metadata, after: previous)
        if kind == .carePlan { revisions.carePlanChanged(entity.id) }
        try revisions.append(kind, uuid: metadata.uuid, rowID: rowID, owner: Self.owner(of: entity))
        if case .task(let task) = entity {
            // The outcomes of the same import look this version up next: keep it rather than decode it again.
            let version = TaskVersion(task: task, effectiveDate: metadata.effectiveDate, nextEffectiveDate: nil, deleted: false)
            taskVersionsRead[metadata.uuid] = version
            taskVersionsFetched[metadata.uuid] = version
        }
    }


    /// Links the new version to its predecessor and to the FHIR resource it came from, and reports it.
    mutating func finishInsert(kind: EntityKind, id: String, metadata: EntityMetadata, after previous: Tip?) throws {
        try link(kind: kind, id: id, uuid: metadata.uuid, effectiveDate: metadata.effectiveDate, provenance: metadata.provenance, after: previous)
        summary.versionUUIDs.append(metadata.uuid)
    }

    /// Links the new version to its predecessor and to the FHIR resource it came from. `id` is evaluated
    /// only for a version with provenance (an outcome's id is formatted from its task uuid).
    mutating func link(
        kind: EntityKind, id: @autoclosure () -> String, uuid: UUID, effectiveDate: Date, provenance: Provenance?, after previous: Tip?
    ) throws {
        if let previous {
            try linkForward(StoreSchema.Table.entity(kind), from: previous, to: uuid, effective: effectiveDate)
            if kind == .task { forgetTaskVersion(previous.uuid) }
        }
        if let provenance {
            let resourceLink = ResourceLink(
                sourceSystem: provenance.sourceSystem, resourceType: provenance.fhirType, resourceID: provenance.fhirID,
                entityKind: kind, entityID: id())
            // Once a batch: the versions of one long-running task all link the same resource, and the
            // INSERT (which finds the row there and does nothing) costs ten times the set's lookup.
            if linked.insert(resourceLink).inserted { try SQLiteStore.link(resourceLink, in: db) }
        }
    }

    /// Links outcome version `uuid` (at `rowID`) after each of `previous`: they stop being tips (the
    /// first version that names one is its `nextVersionUUID`), and the new version keeps all of them when
    /// it names more than one.
    func linkGraph(_ previous: [Tip], to uuid: UUID, rowID: Int64, effective: Date) throws {
        let statement = try db.cachedStatement(sql: """
            UPDATE outcome SET nextVersionUUID = ?, nextEffectiveDate = ? WHERE rowID = ? AND nextVersionUUID IS NULL
            """)
        for tip in previous { try statement.execute(arguments: [uuid, effective.storeSeconds, tip.rowID]) }
        if previous.count > 1 {
            try db.cachedStatement(sql: "UPDATE outcome SET previousVersionUUIDs = ? WHERE rowID = ?")
                .execute(arguments: [EntityRowCodec.packed(previous.map(\.uuid)), rowID])
        }
    }

    func linkForward(_ table: String, from previous: Tip, to next: UUID, effective: Date) throws {
        let statement = RawStatement(
            try db.cachedStatement(sql: "UPDATE \(table) SET nextVersionUUID = ?, nextEffectiveDate = ? WHERE rowID = ?"), in: db)
        statement.bind(1, next)
        statement.bind(2, effective.storeSeconds)
        statement.bind(3, previous.rowID)
        try statement.execute()
    }

    /// Whether `entity` has the same content as the stored version `current`: by content hash when both
    /// have one, else by comparing the content itself.
    func isUnchanged(_ entity: CareEntity, current: Tip) throws -> Bool {
        try VersionChange.sameContent(incomingHash: entity.metadata.provenance?.contentHash, storedHash: current.contentHash) {
            try storedContent(current, kind: entity.kind) == entity.content
        }
    }

    /// The content of stored version `current` of an entity of `kind` (`nil` when its row is gone).
    private func storedContent(_ current: Tip, kind: EntityKind) throws -> CareEntity? {
        let table = StoreSchema.Table.entity(kind)
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM \(table) WHERE rowID = ?", arguments: [current.rowID]) else {
            return nil
        }
        var values: [OutcomeValue] = []
        if kind == .outcome {
            values = try Row.fetchAll(
                db, sql: "SELECT * FROM outcomeValue WHERE outcomeRowID = ? ORDER BY position", arguments: [current.rowID]
            ).compactMap(EntityRowCodec.outcomeValue)
        }
        return try codec.entity(kind, row: row, values: values).content
    }
}
