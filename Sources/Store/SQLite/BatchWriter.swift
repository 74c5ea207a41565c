import CareModel
import Foundation
import GRDB

/// Applies the changes of one batch inside its transaction, with CareKit's versioning rules.
///
/// - add refuses an id that exists, even when its current version is a tombstone;
/// - update appends a version after the current one (the tip) and links the two; it refuses a deleted id
///   and an effective date before the tip's;
/// - delete appends a tombstone (a copy of the tip with `deletedDate`);
/// - upsert adds, or does nothing when the content is unchanged (same provenance content hash, or equal
///   content when there is no hash), or updates;
/// - an outcome must name an occurrence of its task version's schedule that lies in the time that
///   version owns (from its effective date to the next version's).
///
/// Nothing is ever removed. Any error leaves the transaction to be rolled back by the caller.
struct BatchWriter {
    private let db: Database
    private let now: Date
    private let codec: EntityRowCodec
    private(set) var summary = BatchSummary()
    /// Task versions that outcomes of this batch name, decoded once per batch.
    private var taskVersions: [UUID: TaskVersion] = [:]

    /// The current version of an entity.
    private struct Tip {
        let rowID: Int64
        let uuid: UUID
        let effectiveDate: Date
        let deletedDate: Date?
        let contentHash: String?
    }

    /// What outcome checks need of a task version.
    private struct TaskVersion {
        let id: String
        let uuid: UUID
        let schedule: Schedule
        let effectiveDate: Date
        let nextEffectiveDate: Date?
        let deleted: Bool
    }

    init(db: Database, now: Date, codec: EntityRowCodec) {
        self.db = db
        self.now = now
        self.codec = codec
    }

    mutating func apply(_ change: StoreChange) throws {
        switch change {
        case .add(let entity): try add(entity)
        case .update(let entity): try update(entity)
        case .upsert(let entity): try upsert(entity)
        case .delete(let kind, let id, let date): try delete(kind, id: id, at: date ?? now)
        case .recordSource(let resource):
            if try SQLiteStore.record(resource, in: db) { summary.sourcesRecorded += 1 } else { summary.sourcesUnchanged += 1 }
        case .link(let link):
            try SQLiteStore.link(link, in: db)
            summary.linksWritten += 1
        case .setCheckpoint(let checkpoint):
            try SQLiteStore.setCheckpoint(checkpoint, in: db)
            summary.checkpointsSet += 1
        case .enqueue(let entry):
            summary.outboxEntryIDs.append(try SQLiteStore.enqueue(entry, in: db))
        case .transition(let id, let transition):
            try SQLiteStore.transition(id, transition, in: db)
            summary.outboxTransitions += 1
        case .deadLetter(let letter):
            summary.deadLetterIDs.append(try SQLiteStore.add(letter, in: db))
        }
    }

    // MARK: Versioning

    private mutating func add(_ entity: CareEntity) throws {
        var entity = entity
        var eventStart: Date?
        if case .outcome(let outcome) = entity {
            let (task, start) = try ownedOccurrence(of: outcome)
            eventStart = start
            if try outcomeTip(taskUUID: outcome.taskUUID, eventStart: start, occurrence: outcome.taskOccurrenceIndex) != nil {
                throw StoreError.idAlreadyExists(kind: .outcome, id: outcome.id)
            }
            entity = .outcome(with(outcome, taskID: task.id))
            // Outcome versions get their uuid from the store, as in CareKit's store.
            entity.metadata.uuid = UUID()
        } else {
            if try tip(entity.kind, id: entity.id) != nil {
                throw StoreError.idAlreadyExists(kind: entity.kind, id: entity.id)
            }
            if try uuidExists(entity.kind, entity.metadata.uuid) {
                throw StoreError.uuidAlreadyExists(kind: entity.kind, uuid: entity.metadata.uuid)
            }
            entity = try resolvingReferences(entity)
        }
        try insert(entity, after: nil, eventStart: eventStart)
        summary.added += 1
    }

    private mutating func update(_ entity: CareEntity) throws {
        let (current, eventStart, resolved) = try currentVersion(of: entity)
        guard let current else { throw StoreError.idNotFound(kind: entity.kind, id: entity.id) }
        try appendVersion(resolved, after: current, eventStart: eventStart)
    }

    private mutating func upsert(_ entity: CareEntity) throws {
        let (current, eventStart, resolved) = try currentVersion(of: entity)
        guard let current else {
            try add(entity)
            return
        }
        if current.deletedDate != nil { throw StoreError.entityDeleted(kind: entity.kind, id: entity.id) }
        if try isUnchanged(resolved, current: current) {
            summary.unchanged += 1
            summary.versionUUIDs.append(current.uuid)
            return
        }
        try appendVersion(resolved, after: current, eventStart: eventStart)
    }

    /// The tip of `entity`'s id (nil when it has none), the event start of an outcome, and the entity
    /// with its references resolved.
    private mutating func currentVersion(of entity: CareEntity) throws -> (Tip?, Date?, CareEntity) {
        if case .outcome(let outcome) = entity {
            let (task, start) = try ownedOccurrence(of: outcome)
            let current = try outcomeTip(taskUUID: outcome.taskUUID, eventStart: start, occurrence: outcome.taskOccurrenceIndex)
            return (current, start, .outcome(with(outcome, taskID: task.id)))
        }
        return (try tip(entity.kind, id: entity.id), nil, try resolvingReferences(entity))
    }

    /// Appends `entity` as the version after `current`.
    private mutating func appendVersion(_ entity: CareEntity, after current: Tip, eventStart: Date?) throws {
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
            entity.metadata.uuid = UUID()
        }
        try insert(entity, after: current, eventStart: eventStart)
        summary.updated += 1
    }

    private mutating func delete(_ kind: EntityKind, id: String, at date: Date) throws {
        let current: Tip?
        if kind == .outcome {
            guard let (taskUUID, occurrence) = Self.parseOutcomeID(id) else { throw StoreError.idNotFound(kind: kind, id: id) }
            let task = try taskVersion(taskUUID)
            guard let event = task.schedule.event(occurrence: occurrence) else { throw StoreError.idNotFound(kind: kind, id: id) }
            current = try outcomeTip(taskUUID: taskUUID, eventStart: event.start, occurrence: occurrence)
        } else {
            current = try tip(kind, id: id)
        }
        guard let current else { throw StoreError.idNotFound(kind: kind, id: id) }
        if current.deletedDate != nil { throw StoreError.entityDeleted(kind: kind, id: id) }
        if date < current.effectiveDate {
            throw StoreError.effectiveDateBeforePrevious(kind: kind, id: id, effective: date, previous: current.effectiveDate)
        }
        // The tombstone is a copy of the tip, in effect and deleted from `date`.
        let table = StoreSchema.Table.entity(kind)
        let copied = (EntityRowCodec.commonColumns + EntityRowCodec.specificColumns(kind))
            .filter { !["uuid", "effectiveDate", "deletedDate", "previousVersionUUID", "createdDate", "updatedDate"].contains($0) }
            .joined(separator: ", ")
        let tombstone = UUID()
        try db.execute(
            sql: """
                INSERT INTO \(table) (uuid, effectiveDate, deletedDate, previousVersionUUID, createdDate, updatedDate, \(copied))
                SELECT ?, ?, ?, uuid, ?, ?, \(copied) FROM \(table) WHERE rowID = ?
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
        if kind == .task { taskVersions[current.uuid] = nil }
        summary.deleted += 1
        summary.versionUUIDs.append(tombstone)
    }

    /// Writes `entity` as a new row (after `previous`, when given) with the store's version fields.
    private mutating func insert(_ entity: CareEntity, after previous: Tip?, eventStart: Date?) throws {
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
        let statement = try db.cachedStatement(sql: EntityRowCodec.insertSQL(kind))
        let values = codec.commonValues(metadata, payload: payload) + EntityRowCodec.specificValues(entity, eventStart: eventStart)
        try statement.execute(arguments: StatementArguments(values))
        if case .outcome(let outcome) = entity, !outcome.values.isEmpty {
            let rowID = db.lastInsertedRowID
            let valueStatement = try db.cachedStatement(sql: EntityRowCodec.insertValuesSQL())
            for (position, value) in outcome.values.enumerated() {
                try valueStatement.execute(arguments: EntityRowCodec.valueRow(value, position: position, outcomeRowID: rowID))
            }
        }
        if let previous {
            try linkForward(StoreSchema.Table.entity(kind), from: previous, to: metadata.uuid, effective: metadata.effectiveDate)
            if kind == .task { taskVersions[previous.uuid] = nil }
        }
        if let provenance = metadata.provenance {
            try SQLiteStore.link(
                ResourceLink(sourceSystem: provenance.sourceSystem, resourceType: provenance.fhirType, resourceID: provenance.fhirID,
                             entityKind: kind, entityID: entity.id),
                in: db)
        }
        summary.versionUUIDs.append(metadata.uuid)
    }

    private func linkForward(_ table: String, from previous: Tip, to next: UUID, effective: Date) throws {
        let statement = try db.cachedStatement(sql: "UPDATE \(table) SET nextVersionUUID = ?, nextEffectiveDate = ? WHERE rowID = ?")
        try statement.execute(arguments: [next, effective.storeSeconds, previous.rowID])
    }

    // MARK: Lookups

    private func tip(_ kind: EntityKind, id: String) throws -> Tip? {
        let statement = try db.cachedStatement(sql: """
            SELECT rowID, uuid, effectiveDate, deletedDate, contentHash FROM \(StoreSchema.Table.entity(kind))
            WHERE id = ? AND nextVersionUUID IS NULL
            """)
        return try Row.fetchOne(statement, arguments: [id]).flatMap(Self.tip)
    }

    private func outcomeTip(taskUUID: UUID, eventStart: Date, occurrence: Int) throws -> Tip? {
        let statement = try db.cachedStatement(sql: """
            SELECT rowID, uuid, effectiveDate, deletedDate, contentHash FROM outcome
            WHERE taskUUID = ? AND eventStart = ? AND occurrenceIndex = ? AND nextVersionUUID IS NULL
            """)
        return try Row.fetchOne(statement, arguments: [taskUUID, eventStart.storeSeconds, occurrence]).flatMap(Self.tip)
    }

    private static func tip(_ row: Row) -> Tip? {
        guard let rowID: Int64 = row["rowID"], let uuid: UUID = row["uuid"], let effective = row.date("effectiveDate") else {
            return nil
        }
        return Tip(rowID: rowID, uuid: uuid, effectiveDate: effective, deletedDate: row.date("deletedDate"), contentHash: row["contentHash"])
    }

    private func uuidExists(_ kind: EntityKind, _ uuid: UUID) throws -> Bool {
        let statement = try db.cachedStatement(sql: "SELECT 1 FROM \(StoreSchema.Table.entity(kind)) WHERE uuid = ?")
        return try Int.fetchOne(statement, arguments: [uuid]) != nil
    }

    /// The stable id of the version `uuid` of `kind`, if the store has it.
    private func id(of kind: EntityKind, uuid: UUID) throws -> String? {
        let statement = try db.cachedStatement(sql: "SELECT id FROM \(StoreSchema.Table.entity(kind)) WHERE uuid = ?")
        return try String.fetchOne(statement, arguments: [uuid])
    }

    private func idExists(_ kind: EntityKind, _ id: String) throws -> Bool {
        let statement = try db.cachedStatement(sql: "SELECT 1 FROM \(StoreSchema.Table.entity(kind)) WHERE id = ? LIMIT 1")
        return try Int.fetchOne(statement, arguments: [id]) != nil
    }

    /// Checks a care plan's patient, or a task's or contact's care plan, and fills in the stable id
    /// from the version uuid when only that is given.
    private func resolvingReferences(_ entity: CareEntity) throws -> CareEntity {
        switch entity {
        case .patient, .outcome:
            return entity
        case .carePlan(var plan):
            plan.patientID = try resolve(
                owner: entity, field: "patientUUID", kind: .patient, uuid: plan.patientUUID, id: plan.patientID)
            return .carePlan(plan)
        case .task(var task):
            task.carePlanID = try resolve(
                owner: entity, field: "carePlanUUID", kind: .carePlan, uuid: task.carePlanUUID, id: task.carePlanID)
            return .task(task)
        case .contact(var contact):
            contact.carePlanID = try resolve(
                owner: entity, field: "carePlanUUID", kind: .carePlan, uuid: contact.carePlanUUID, id: contact.carePlanID)
            return .contact(contact)
        }
    }

    private func resolve(owner: CareEntity, field: String, kind: EntityKind, uuid: UUID?, id: String?) throws -> String? {
        if let uuid {
            guard let found = try self.id(of: kind, uuid: uuid) else {
                throw StoreError.missingReference(kind: owner.kind, id: owner.id, field: field, reference: "\(kind) version \(uuid.uuidString)")
            }
            if let id, id != found {
                throw StoreError.invalidEntity(
                    kind: owner.kind, id: owner.id,
                    reason: "\(field) \(uuid.uuidString) is a version of \(kind) '\(found)', not of '\(id)'")
            }
            return found
        }
        if let id, !(try idExists(kind, id)) {
            throw StoreError.missingReference(kind: owner.kind, id: owner.id, field: "\(kind)ID", reference: "\(kind) '\(id)'")
        }
        return id
    }

    // MARK: Outcomes

    /// The task version an outcome names, and the start of its occurrence, which must exist in the
    /// schedule and lie in the time that version owns.
    private mutating func ownedOccurrence(of outcome: Outcome) throws -> (TaskVersion, Date) {
        let task = try taskVersion(outcome.taskUUID)
        if let taskID = outcome.taskID, taskID != task.id {
            throw StoreError.invalidEntity(
                kind: .outcome, id: outcome.id,
                reason: "taskUUID \(task.uuid.uuidString) is a version of task '\(task.id)', not of '\(taskID)'")
        }
        if task.deleted { throw StoreError.entityDeleted(kind: .task, id: task.id) }
        let index = outcome.taskOccurrenceIndex
        guard let event = task.schedule.event(occurrence: index) else {
            throw StoreError.occurrenceNotFound(taskID: task.id, taskUUID: task.uuid, occurrenceIndex: index)
        }
        let outsideBefore = event.start < task.effectiveDate
        let outsideAfter = task.nextEffectiveDate.map { event.start >= $0 } ?? false
        if outsideBefore || outsideAfter {
            throw StoreError.occurrenceOutsideVersion(
                taskID: task.id, taskUUID: task.uuid, occurrenceIndex: index, eventStart: event.start,
                versionStart: task.effectiveDate, versionEnd: task.nextEffectiveDate)
        }
        return (task, event.start)
    }

    private mutating func taskVersion(_ uuid: UUID) throws -> TaskVersion {
        if let known = taskVersions[uuid] { return known }
        let statement = try db.cachedStatement(sql: "SELECT * FROM task WHERE uuid = ?")
        guard let row = try Row.fetchOne(statement, arguments: [uuid]) else {
            throw StoreError.versionNotFound(kind: .task, uuid: uuid)
        }
        let task = try codec.decode(CareTask.self, row)
        let version = TaskVersion(
            id: task.id, uuid: uuid, schedule: task.schedule, effectiveDate: task.effectiveDate,
            nextEffectiveDate: row.date("nextEffectiveDate"), deleted: task.deletedDate != nil)
        taskVersions[uuid] = version
        return version
    }

    private func with(_ outcome: Outcome, taskID: String) -> Outcome {
        var outcome = outcome
        outcome.taskID = taskID
        return outcome
    }

    /// `<taskUUID>_<occurrenceIndex>`, CareKit's outcome id, split into its parts.
    static func parseOutcomeID(_ id: String) -> (UUID, Int)? {
        guard let separator = id.lastIndex(of: "_"),
              let uuid = UUID(uuidString: String(id[..<separator])),
              let index = Int(id[id.index(after: separator)...])
        else { return nil }
        return (uuid, index)
    }

    // MARK: Change detection

    /// Whether `entity` has the same content as the stored version `current`: by content hash when both
    /// have one, else by comparing the content itself.
    private func isUnchanged(_ entity: CareEntity, current: Tip) throws -> Bool {
        if let incoming = entity.metadata.provenance?.contentHash, let stored = current.contentHash {
            return incoming == stored
        }
        let table = StoreSchema.Table.entity(entity.kind)
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM \(table) WHERE rowID = ?", arguments: [current.rowID]) else {
            return false
        }
        var values: [OutcomeValue] = []
        if entity.kind == .outcome {
            values = try Row.fetchAll(
                db, sql: "SELECT * FROM outcomeValue WHERE outcomeRowID = ? ORDER BY position", arguments: [current.rowID]
            ).compactMap(EntityRowCodec.outcomeValue)
        }
        let stored = try codec.entity(entity.kind, row: row, values: values)
        return stored.content == entity.content
    }
}
