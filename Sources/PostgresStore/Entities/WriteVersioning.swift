import CareModel
import Foundation
import PostgresNIO
import Store

/// CareKit's versioning rules (the SQLite store's BatchWriter+Versioning.swift, ported): add, update,
/// upsert and delete of any entity, the version fields and links, and whether content changed.
extension PostgresBatchWriter {
    func add(_ entity: CareEntity) async throws {
        if case .outcome(let outcome) = entity {
            // An outcome that exists already is refused (the SQLite store's unique index on its first version).
            let (task, start) = try await ownedOccurrence(of: outcome)
            if try await outcomeTip(taskUUID: outcome.taskUUID, eventStart: start, occurrence: outcome.taskOccurrenceIndex) != nil {
                throw StoreError.idAlreadyExists(kind: .outcome, id: outcome.id)
            }
            try await addOutcome(with(outcome, taskID: task.task.id), eventStart: start)
            return
        }
        if try await tip(entity.kind, id: entity.id) != nil {
            throw StoreError.idAlreadyExists(kind: entity.kind, id: entity.id)
        }
        try await insertFirstVersion(try await resolvingReferences(entity))
    }

    /// Adds the first version of an entity other than an outcome, its references resolved and its id new.
    func insertFirstVersion(_ entity: CareEntity) async throws {
        if try await uuidExists(entity.kind, entity.metadata.uuid) {
            throw StoreError.uuidAlreadyExists(kind: entity.kind, uuid: entity.metadata.uuid)
        }
        try await insert(entity, after: nil, eventStart: nil)
        summary.file(.created, EntityKey(of: entity))
    }

    /// Adds the first version of an outcome whose task id is filled in and whose occurrence starts at `eventStart`.
    func addOutcome(_ outcome: Outcome, eventStart: Date) async throws {
        var outcome = outcome
        // Outcome versions get their uuid from the store, as in CareKit's store.
        outcome.metadata.uuid = uuids.next()
        try await insertOutcome(outcome, after: nil, eventStart: eventStart)
        summary.file(.created, EntityKey(outcomeOf: outcome.taskUUID, occurrence: outcome.taskOccurrenceIndex))
    }

    func update(_ entity: CareEntity) async throws {
        let (current, eventStart, resolved) = try await currentVersion(of: entity)
        guard let current else { throw StoreError.idNotFound(kind: entity.kind, id: entity.id) }
        try await appendVersion(resolved, after: current, eventStart: eventStart)
    }

    func upsert(_ entity: CareEntity, effective rule: EffectiveDateRule) async throws {
        let (current, eventStart, resolved) = try await currentVersion(of: entity)
        guard let current else {
            if case .outcome(let outcome) = resolved, let eventStart {
                try await addOutcome(outcome, eventStart: eventStart)
            } else {
                try await insertFirstVersion(resolved)
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
            try await insertOutcome(with(outcome, uuid: uuids.next()), after: current, eventStart: eventStart)
            summary.file(.created, EntityKey(outcomeOf: outcome.taskUUID, occurrence: outcome.taskOccurrenceIndex))
            return
        }
        if try await isUnchanged(resolved, current: current) {
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
        try await appendVersion(version, after: current, eventStart: eventStart)
    }

    /// The tip of `entity`'s id (nil when none), the event start of an outcome, and the entity with its
    /// references resolved.
    func currentVersion(of entity: CareEntity) async throws -> (Tip?, Date?, CareEntity) {
        if case .outcome(let outcome) = entity {
            let (task, start) = try await ownedOccurrence(of: outcome)
            let current = try await outcomeTip(taskUUID: outcome.taskUUID, eventStart: start, occurrence: outcome.taskOccurrenceIndex)
            return (current, start, .outcome(with(outcome, taskID: task.task.id)))
        }
        return (try await tip(entity.kind, id: entity.id), nil, try await resolvingReferences(entity))
    }

    /// Appends `entity` as the version after `current`.
    func appendVersion(_ entity: CareEntity, after current: Tip, eventStart: Date?) async throws {
        if current.deletedDate != nil {
            throw StoreError.entityDeleted(kind: entity.kind, id: entity.id)
        }
        if entity.metadata.effectiveDate < current.effectiveDate {
            throw StoreError.effectiveDateBeforePrevious(
                kind: entity.kind, id: entity.id, effective: entity.metadata.effectiveDate, previous: current.effectiveDate)
        }
        var entity = entity
        // A version fetched from the store and changed still carries the old uuid: give it a new one.
        let uuidTaken = entity.kind == .outcome ? true : try await uuidExists(entity.kind, entity.metadata.uuid)
        if uuidTaken {
            entity.metadata.uuid = uuids.next()
        }
        try await insert(entity, after: current, eventStart: eventStart)
        summary.file(.updated, EntityKey(of: entity))
    }

    func delete(_ kind: EntityKind, id: String, at requested: Date, effective rule: EffectiveDateRule) async throws {
        let current: Tip?
        var outcomeKey: KnownState.OutcomeKey?
        if kind == .outcome {
            guard let (taskUUID, occurrence) = Self.parseOutcomeID(id) else { throw StoreError.idNotFound(kind: kind, id: id) }
            let task = try await taskVersion(taskUUID)
            guard let eventStart = task.task.schedule.eventStart(occurrence: occurrence) else { throw StoreError.idNotFound(kind: kind, id: id) }
            outcomeKey = KnownState.OutcomeKey(taskUUID: taskUUID, eventStart: eventStart.timeIntervalSince1970, occurrence: occurrence)
            current = try await outcomeTip(taskUUID: taskUUID, eventStart: eventStart, occurrence: occurrence)
        } else {
            current = try await tip(kind, id: id)
        }
        guard let current else { throw StoreError.idNotFound(kind: kind, id: id) }
        if current.deletedDate != nil { throw StoreError.entityDeleted(kind: kind, id: id) }
        let date = rule == .noEarlierThanPrevious ? max(requested, current.effectiveDate) : requested
        if date < current.effectiveDate {
            throw StoreError.effectiveDateBeforePrevious(kind: kind, id: id, effective: date, previous: current.effectiveDate)
        }
        let tombstone = uuids.next()
        let tombstoneRowID = try await insertTombstone(kind, copying: current.rowID, uuid: tombstone, date: date)
        let tombstoneTip = Tip(
            rowID: tombstoneRowID, uuid: tombstone, effectiveDate: date, deletedDate: date, contentHash: current.contentHash,
            versionNumber: current.versionNumber + 1)
        if let key = outcomeKey {
            known.outcomeTips[key] = .present(tombstoneTip)
        } else {
            known.wrote(kind, id: id, tip: tombstoneTip)
        }
        try await linkForward(kind, from: current, to: tombstone, effective: date)
        if !current.others.isEmpty {
            try await linkGraph([current] + current.others, to: tombstone, rowID: tombstoneRowID, effective: date)
            try await setConflict(outcomeID: id, false)
        }
        try await revisions.append(kind, uuid: tombstone, rowID: tombstoneRowID, owner: try await owner(ofRow: current.rowID, kind: kind, id: id))
        if kind == .task { forgetTaskVersion(current.uuid) }
        if kind == .outcome, try await queuesTombstoneForProvider(outcomeRow: current.rowID) {
            try await enqueueExport(outcomeID: id, uuid: tombstone)  // the patient's Observation retracted: entered-in-error
        }
        summary.file(.deleted, EntityKey(kind, id: id))
        summary.versionUUIDs.append(tombstone)
    }

    /// Writes `entity` as a new row (after `previous`, when given) with the store's version fields.
    func insert(_ entity: CareEntity, after previous: Tip?, eventStart: Date?) async throws {
        if case .outcome(let outcome) = entity, let eventStart {
            try await insertOutcome(outcome, after: previous, eventStart: eventStart)
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
        // The content JSON import kept for its hash is not what this store writes: drop it.
        ContentJSON.forget(entity)
        let rowID = try await insertRow(entity)
        known.wrote(entity.kind, id: entity.id, tip: Tip(
            rowID: rowID, uuid: metadata.uuid, effectiveDate: metadata.effectiveDate, deletedDate: nil, contentHash: metadata.provenance?.contentHash))
        try await link(kind: entity.kind, id: entity.id, uuid: metadata.uuid, effectiveDate: metadata.effectiveDate, provenance: metadata.provenance, after: previous)
        summary.versionUUIDs.append(metadata.uuid)
        if case .carePlan(let plan) = entity { revisions.carePlanChanged(plan.id, patientID: plan.patientID) }
        try await revisions.append(entity.kind, uuid: metadata.uuid, rowID: rowID, owner: Self.owner(of: entity))
        if case .task(let task) = entity {
            // The outcomes of the same import look this version up next.
            taskVersionsRead[metadata.uuid] = TaskVersion(task: task, effectiveDate: metadata.effectiveDate, nextEffectiveDate: nil, deleted: false)
            known.newTaskVersions.insert(metadata.uuid)
        }
    }

    /// Links the new version to its predecessor and to the FHIR resource it came from.
    func link(kind: EntityKind, id: String, uuid: UUID, effectiveDate: Date, provenance: Provenance?, after previous: Tip?) async throws {
        if let previous {
            try await linkForward(kind, from: previous, to: uuid, effective: effectiveDate)
            if kind == .task { forgetTaskVersion(previous.uuid) }
        }
        if let provenance {
            pendingLinks.append(
                ResourceLink(sourceSystem: provenance.sourceSystem, resourceType: provenance.fhirType, resourceID: provenance.fhirID, entityKind: kind, entityID: id))
        }
    }

    /// Links outcome version `uuid` (at `rowID`) after each of `previous`: they stop being tips, and the new
    /// version keeps all of them when it names more than one.
    func linkGraph(_ previous: [Tip], to uuid: UUID, rowID: Int64, effective: Date) async throws {
        try await flushPending()
        try await connection.finish("""
            UPDATE outcome SET next_version_uuid = \(uuid), next_effective_date = \(effective.timeIntervalSince1970)
            WHERE row_id = ANY(\(previous.map(\.rowID))::bigint[]) AND next_version_uuid IS NULL
            """, logger: logger)
        if previous.count > 1 {
            try await connection.finish(
                "UPDATE outcome SET previous_version_uuids = \(previous.map(\.uuid))::uuid[] WHERE row_id = \(rowID)", logger: logger)
        }
    }

    func linkForward(_ kind: EntityKind, from previous: Tip, to next: UUID, effective: Date) async throws {
        try await flushPending()
        try await connection.finish(
            "UPDATE \(unescaped: PostgresEntitySchema.table(kind)) SET next_version_uuid = \(next), next_effective_date = \(effective.timeIntervalSince1970) WHERE row_id = \(previous.rowID)",
            logger: logger)
    }

    /// Whether `entity` has the same content as stored version `current`: by content hash when both have
    /// one, else by comparing the content itself.
    func isUnchanged(_ entity: CareEntity, current: Tip) async throws -> Bool {
        if let incoming = entity.metadata.provenance?.contentHash, let stored = current.contentHash { return incoming == stored }
        return try await storedVersion(entity.kind, rowID: current.rowID)?.content == entity.content
    }

    /// `<taskUUID>_<occurrenceIndex>`, CareKit's outcome id, split into its parts.
    static func parseOutcomeID(_ id: String) -> (UUID, Int)? {
        guard let separator = id.utf8.lastIndex(of: UInt8(ascii: "_")),
              let uuid = UUID(canonical: id[..<separator]),
              let index = Int(id[id.index(after: separator)...])
        else { return nil }
        return (uuid, index)
    }

    func with(_ outcome: Outcome, uuid: UUID) -> Outcome {
        var outcome = outcome
        outcome.metadata.uuid = uuid
        return outcome
    }

    func with(_ outcome: Outcome, taskID: String) -> Outcome {
        var outcome = outcome
        outcome.taskID = taskID
        return outcome
    }
}
