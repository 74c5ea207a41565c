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
///   content when there is no hash), or updates; an outcome whose current version is a tombstone gets a
///   new version after it (CareKit lets an occurrence whose outcome was deleted have an outcome again);
/// - an outcome must name an occurrence of its task version's schedule that lies in the time that
///   version owns (from its effective date to the next version's).
///
/// Nothing is ever removed. Any error leaves the transaction to be rolled back by the caller.
struct BatchWriter {
    private let db: Database
    private let now: Date
    private let codec: EntityRowCodec
    private let taskCache: TaskVersionCache
    private(set) var summary = BatchSummary()
    private var uuids = VersionUUIDGenerator()
    private var zoneNames: [TimeZone: String] = [:]

    /// The current version of an entity.
    private struct Tip {
        let rowID: Int64
        let uuid: UUID
        let effectiveDate: Date
        let deletedDate: Date?
        let contentHash: String?
        /// For outcomes: the version's arrival number among its outcome's versions (0 for the first).
        var versionNumber = 0
        /// For outcomes with several tips (a conflict between devices): the tips besides this one, the
        /// newest. A version the store writes after this one names them all, as CareKit's `updateValue`
        /// names every tip, which resolves the conflict.
        var others: [Tip] = []
    }

    /// How a version a device made joins its outcome's version graph (``appendKeepingUUID(_:)``).
    private struct GraphLinks {
        /// The stored versions it names, in the device's order.
        var previous: [Tip]
        var versionNumber: Int
        var deletedDate: Date?
        var exports: Bool
    }

    /// What outcome checks need of a task version.
    private typealias TaskVersion = TaskVersionCache.Version

    /// The task versions this batch used (valid at its end).
    private var taskVersionsRead: [UUID: TaskVersionCache.Version] = [:]
    /// The task versions this batch read from the database or wrote, for the store's cache once it commits.
    private(set) var taskVersionsFetched: [UUID: TaskVersionCache.Version] = [:]
    /// The task versions this batch changed (a later version or a tombstone was appended).
    private(set) var taskVersionsChanged: Set<UUID> = []
    /// The task version looked up last.
    private var lastTaskVersion: (uuid: UUID, version: TaskVersion)?
    /// The outcome INSERT, prepared once per batch (GRDB's statement cache hashes the SQL on each use).
    private var outcomeInsert: Statement?
    /// The per-patient revision log (CareKit sync). Every version this writer inserts (first versions,
    /// new versions, tombstones) is filed there in the same transaction: the three insert paths below
    /// (`insert`, `writeOutcome`, `delete`) each end with one `revisions.append`.
    private var revisions: RevisionLog

    init(db: Database, now: Date, codec: EntityRowCodec, taskCache: TaskVersionCache) {
        self.db = db
        self.now = now
        self.codec = codec
        self.taskCache = taskCache
        revisions = RevisionLog(db: db)
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
        case .appendVersion(let outcome): try appendKeepingUUID(outcome)
        case .mergeKnowledge(let patientID, let clocks):
            let statement = try db.cachedStatement(sql: """
                INSERT INTO patientKnowledge (patientID, processID, clock) VALUES (?, ?, ?)
                ON CONFLICT (patientID, processID) DO UPDATE SET clock = max(clock, excluded.clock)
                """)
            for (process, clock) in clocks {
                try statement.execute(arguments: [patientID, process.uuidString, clock])
            }
        }
    }

    /// Stores `outcome`, a version a device made, under its own uuid, after the stored versions its
    /// `previousVersionUUIDs` names, as CareKit's store merges a revision: the store keeps the version graph
    /// the devices made, several tips of one outcome (a conflict) included, which a device resolves by a
    /// version naming them all. Nothing when that uuid is stored.
    ///
    /// - A named version the store never had is left out (CareKit's store drops a link to a version it
    ///   lacks); one of another outcome is refused.
    /// - The version's effective date is no earlier than those it names; its `deletedDate` (a tombstone)
    ///   and its dates are kept as sent. A tombstone of an outcome the store has no version of stores nothing.
    /// - The outcome is filed in `outcomeConflict` while it has several tips (its export waits), and out
    ///   of it once it has one.
    private mutating func appendKeepingUUID(_ outcome: Outcome) throws {
        if try uuidExists(.outcome, outcome.metadata.uuid) {
            summary.unchanged += 1
            summary.versionUUIDs.append(outcome.metadata.uuid)
            return
        }
        let (task, start) = try ownedOccurrence(of: outcome)
        let stored = try outcomeVersions(taskUUID: outcome.taskUUID, eventStart: start, occurrence: outcome.taskOccurrenceIndex)
        var previous: [Tip] = []
        for uuid in outcome.metadata.previousVersionUUIDs where !previous.contains(where: { $0.uuid == uuid }) {
            if let found = stored.first(where: { $0.version.uuid == uuid }) {
                previous.append(found.version)
            } else if try uuidExists(.outcome, uuid) {
                throw StoreError.invalidEntity(
                    kind: .outcome, id: outcome.id, reason: "previousVersionUUIDs names \(uuid.uuidString), a version of another outcome")
            }
        }
        let deleted = outcome.metadata.deletedDate
        if deleted != nil, stored.isEmpty {
            summary.unchanged += 1
            return
        }
        var version = with(outcome, taskID: task.task.id)
        version.metadata.effectiveDate = max(version.metadata.effectiveDate, previous.map(\.effectiveDate).max() ?? .distantPast)
        version.metadata.previousVersionUUIDs = previous.map(\.uuid)
        version.metadata.nextVersionUUIDs = []
        version.metadata.createdDate = version.metadata.createdDate ?? now
        version.metadata.updatedDate = version.metadata.updatedDate ?? now
        // A tombstone goes out as entered-in-error only when the outcome is the patient's, as `delete` decides.
        let exports = deleted == nil || !stored.contains { $0.fromProvider }
        let links = GraphLinks(
            previous: previous, versionNumber: (stored.map(\.version.versionNumber).max() ?? -1) + 1,
            deletedDate: deleted.map { max($0, version.metadata.effectiveDate) }, exports: exports && version.metadata.provenance == nil)
        try writeOutcome(
            version, uuid: version.metadata.uuid, taskID: task.task.id, payload: try extras(of: version), after: nil, eventStart: start,
            graph: links)
        summary.versionUUIDs.append(version.metadata.uuid)
        let named = Set(previous.map(\.uuid))
        let tips = stored.filter { $0.isTip && !named.contains($0.version.uuid) }.count + 1
        try setConflict(outcomeID: outcome.id, tips > 1)
        if deleted != nil {
            summary.deleted += 1
        } else if stored.isEmpty {
            summary.added += 1
        } else {
            summary.updated += 1
        }
    }

    /// Files outcome `outcomeID` as having several tips, or as having one.
    private func setConflict(outcomeID: String, _ several: Bool) throws {
        if several {
            try db.cachedStatement(sql: "INSERT INTO outcomeConflict (outcomeID, since) VALUES (?, ?) ON CONFLICT (outcomeID) DO NOTHING")
                .execute(arguments: [outcomeID, now.storeSeconds])
        } else {
            try db.cachedStatement(sql: "DELETE FROM outcomeConflict WHERE outcomeID = ?").execute(arguments: [outcomeID])
        }
    }

    /// Moves the outbox entries `ids`, in order, by the same `step`.
    mutating func transition(_ ids: [Int64], _ step: OutboxTransition) throws {
        try SQLiteStore.transition(ids, step, in: db)
        summary.outboxTransitions += ids.count
    }

    // MARK: Runs of outcome adds

    /// The shortest run of outcome adds written task by task (``addOutcomes(_:)``); shorter runs gain
    /// nothing from it and keep batch order.
    static let sortedRunMinimum = 256

    /// Adds the outcomes of a run of consecutive `.add(.outcome)` changes, writing them task by task rather
    /// than in batch order.
    ///
    /// A large import lists outcomes day by day across many tasks: in that order each insert lands on
    /// another task's index page, and at millions of rows it waits on memory. Task by task, consecutive
    /// inserts share index pages. The store ends up the same, the same rows, only their row ids (the order
    /// `outcomes()` lists them in) follow the tasks. Every check runs in batch order first, and a refused
    /// duplicate is traced back to batch order, so a bad run fails with the error batch order meets first.
    mutating func addOutcomes(_ run: ArraySlice<StoreChange>) throws {
        // What the checks find, in parallel arrays: the outcomes themselves stay in the batch, as copying
        // one costs more than checking it.
        var uuids: [UUID] = []
        var taskIDs: [String] = []
        var payloads: [Data?] = []
        var eventStarts: [Date] = []
        uuids.reserveCapacity(run.count)
        taskIDs.reserveCapacity(run.count)
        payloads.reserveCapacity(run.count)
        eventStarts.reserveCapacity(run.count)
        for change in run {
            guard case .add(.outcome(let outcome)) = change else { continue }
            do {
                let (task, start) = try ownedOccurrence(of: outcome)
                let uuid = self.uuids.next()
                var payload: Data?
                if EntityRowCodec.hasExtras(outcome.metadata) {
                    var stored = outcome
                    stored.taskID = task.task.id
                    stored.metadata.uuid = uuid
                    setVersionFields(of: &stored, after: nil)
                    payload = try extras(of: stored)
                }
                uuids.append(uuid)
                taskIDs.append(task.task.id)
                payloads.append(payload)
                eventStarts.append(start)
            } catch {
                // In batch order an earlier outcome of the run would have been refused on insert first.
                throw try firstDuplicate(in: run, eventStarts, existingUpTo: .max) ?? error
            }
        }
        // Each task's outcomes together, in time order (its stretch of the index), the tasks in the order
        // they first appear: rows of one patient's tasks, which the events of a day read together, stay near
        // each other in the table.
        var groups: [UUID: Int] = [:]
        var keys: [(group: Int, start: Date)] = []
        keys.reserveCapacity(run.count)
        for (change, start) in zip(run, eventStarts) {
            guard case .add(.outcome(let outcome)) = change else { continue }
            let group = groups[outcome.taskUUID] ?? groups.count
            if group == groups.count { groups[outcome.taskUUID] = group }
            keys.append((group, start))
        }
        let order = keys.indices.sorted { a, b in
            let (x, y) = (keys[a], keys[b])
            if x.group != y.group { return x.group < y.group }
            if x.start != y.start { return x.start < y.start }
            return a < b
        }
        let rowIDBefore = try Int64.fetchOne(db, sql: "SELECT max(rowID) FROM outcome") ?? 0
        do {
            for index in order {
                guard case .add(.outcome(let outcome)) = run[run.startIndex + index] else { continue }
                try writeOutcome(
                    outcome, uuid: uuids[index], taskID: taskIDs[index], payload: payloads[index], after: nil,
                    eventStart: eventStarts[index])
            }
        } catch let refusal as StoreError {
            guard case .idAlreadyExists = refusal else { throw refusal }
            throw try firstDuplicate(in: run, eventStarts, existingUpTo: rowIDBefore) ?? refusal
        }
        summary.added += uuids.count
        summary.versionUUIDs.append(contentsOf: uuids)
    }

    /// The refusal that batch order meets first among the checked outcomes of `run` (as many as `eventStarts`):
    /// the first one added before the run (a first version with row id up to `existingUpTo`) or earlier in
    /// the run.
    private func firstDuplicate(in run: ArraySlice<StoreChange>, _ eventStarts: [Date], existingUpTo rowID: Int64) throws -> StoreError? {
        struct Key: Hashable {
            let taskUUID: UUID
            let eventStart: Date
            let occurrence: Int
        }
        var seen = Set<Key>()
        let statement = RawStatement(try db.cachedStatement(sql: """
            SELECT 1 FROM outcome
            WHERE taskUUID = ? AND eventStart = ? AND occurrenceIndex = ? AND versionNumber = 0 AND rowID <= ?
            """), in: db)
        for (change, eventStart) in zip(run, eventStarts) {
            guard case .add(.outcome(let outcome)) = change else { continue }
            let duplicate = StoreError.idAlreadyExists(kind: .outcome, id: outcome.id)
            let key = Key(taskUUID: outcome.taskUUID, eventStart: eventStart, occurrence: outcome.taskOccurrenceIndex)
            if !seen.insert(key).inserted { return duplicate }
            statement.bind(1, outcome.taskUUID)
            statement.bind(2, eventStart.storeSeconds)
            statement.bind(3, outcome.taskOccurrenceIndex)
            statement.bind(4, rowID)
            let exists = try statement.step()
            statement.reset()
            if exists { return duplicate }
        }
        return nil
    }

    // MARK: Versioning

    private mutating func add(_ entity: CareEntity) throws {
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
    private mutating func insertFirstVersion(_ entity: CareEntity) throws {
        if try uuidExists(entity.kind, entity.metadata.uuid) {
            throw StoreError.uuidAlreadyExists(kind: entity.kind, uuid: entity.metadata.uuid)
        }
        try insert(entity, after: nil, eventStart: nil)
        summary.added += 1
    }

    /// Adds the first version of an outcome whose task id is filled in and whose occurrence starts at `eventStart`.
    private mutating func addOutcome(_ outcome: Outcome, eventStart: Date) throws {
        var outcome = outcome
        // Outcome versions get their uuid from the store, as in CareKit's store.
        outcome.metadata.uuid = uuids.next()
        try insertOutcome(outcome, after: nil, eventStart: eventStart)
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
            summary.added += 1
            return
        }
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
            return (current, start, .outcome(with(outcome, taskID: task.task.id)))
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
            entity.metadata.uuid = uuids.next()
        }
        try insert(entity, after: current, eventStart: eventStart)
        summary.updated += 1
    }

    private mutating func delete(_ kind: EntityKind, id: String, at date: Date, uuid: UUID? = nil) throws {
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
        if kind == .outcome, try Bool.fetchOne(db, sql: "SELECT fhirType IS NULL FROM outcome WHERE rowID = ?", arguments: [current.rowID]) == true {
            try enqueueExport(outcomeID: id, uuid: tombstone)  // a patient's outcome deleted: exported as entered-in-error
        }
        summary.deleted += 1
        summary.versionUUIDs.append(tombstone)
    }

    /// Writes `entity` as a new row (after `previous`, when given) with the store's version fields.
    private mutating func insert(_ entity: CareEntity, after previous: Tip?, eventStart: Date?) throws {
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
        let statement = try db.cachedStatement(sql: EntityRowCodec.insertSQL[kind] ?? "")
        let values = codec.commonValues(metadata, payload: payload) + EntityRowCodec.specificValues(entity, eventStart: eventStart)
        try statement.execute(arguments: StatementArguments(values))
        let rowID = db.lastInsertedRowID
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

    /// Writes an outcome version: the row (bound column by column, as this runs once per outcome) and
    /// its values.
    private mutating func insertOutcome(_ outcome: Outcome, after previous: Tip?, eventStart: Date) throws {
        var outcome = outcome
        setVersionFields(of: &outcome, after: previous)
        try writeOutcome(
            outcome, uuid: outcome.metadata.uuid, taskID: outcome.taskID, payload: try extras(of: outcome), after: previous,
            eventStart: eventStart)
        summary.versionUUIDs.append(outcome.metadata.uuid)
    }

    /// Gives `outcome` the store's version fields.
    private func setVersionFields(of outcome: inout Outcome, after previous: Tip?) {
        outcome.metadata.deletedDate = nil
        outcome.metadata.previousVersionUUIDs = previous.map { [$0.uuid] } ?? []
        outcome.metadata.nextVersionUUIDs = []
        outcome.metadata.createdDate = now
        outcome.metadata.updatedDate = now
    }

    /// The JSON of an outcome's rarely used fields (`nil` when it has none).
    private func extras(of outcome: Outcome) throws -> Data? {
        do {
            return try codec.outcomeExtras(outcome)
        } catch {
            throw StoreError.invalidEntity(kind: .outcome, id: outcome.id, reason: "cannot be encoded: \(error)")
        }
    }

    /// Binds the seven value columns (type, value, units, kind, index, createdDate, timezone), which the
    /// outcome row (its first value) and `outcomeValue` (the others) share, starting at `column`.
    private mutating func bind(_ value: OutcomeValue, to statement: RawStatement, from column: Int32) {
        statement.bind(column, value.type.rawValue)
        statement.bind(column + 1, value.value)
        statement.bind(column + 2, value.units)
        statement.bind(column + 3, value.kind)
        statement.bind(column + 4, value.index)
        statement.bind(column + 5, value.createdDate?.storeSeconds)
        statement.bind(column + 6, value.timezone == .gmt ? nil : timeZoneName(value.timezone))
    }

    /// Writes the row and values of a version of `outcome`, with uuid `uuid`, task id `taskID` and the
    /// store's other version fields (whatever `outcome` holds there), and links it.
    private mutating func writeOutcome(
        _ outcome: Outcome, uuid: UUID, taskID: String?, payload: Data?, after previous: Tip?, eventStart: Date, graph: GraphLinks? = nil
    ) throws {
        let provenance = outcome.metadata.provenance
        if outcomeInsert == nil {
            outcomeInsert = try db.cachedStatement(sql: EntityRowCodec.insertSQL[.outcome] ?? "")
        }
        guard let outcomeInsert else { return }
        let row = RawStatement(outcomeInsert, in: db)
        // The order of EntityRowCodec.commonColumns, then specificColumns(.outcome).
        row.bind(1, uuid)
        row.bind(2, outcome.metadata.effectiveDate.storeSeconds)
        if let deleted = graph?.deletedDate { row.bind(3, deleted.storeSeconds) } else { row.bindNull(3) }
        row.bind(4, graph.map { $0.previous.first?.uuid } ?? previous?.uuid)
        row.bind(5, now.storeSeconds)
        row.bind(6, now.storeSeconds)
        row.bind(7, provenance?.sourceSystem)
        row.bind(8, provenance?.fhirType)
        row.bind(9, provenance?.fhirID)
        row.bind(10, provenance?.versionID)
        row.bind(11, provenance?.lastUpdated?.storeSeconds)
        row.bind(12, provenance?.contentHash)
        row.bind(13, payload)
        row.bind(14, outcome.taskUUID)
        row.bind(15, taskID)
        row.bind(16, outcome.taskOccurrenceIndex)
        row.bind(17, eventStart.storeSeconds)
        row.bind(18, timeZoneName(outcome.metadata.timezone))
        row.bind(19, graph?.versionNumber ?? previous.map { $0.versionNumber + 1 } ?? 0)
        if let first = outcome.values.first {
            bind(first, to: row, from: 20)
        } else {
            for column in Int32(20)...26 { row.bindNull(column) }
        }
        row.bind(27, max(0, outcome.values.count - 1))
        row.bind(28, outcome.metadata.source)
        do {
            try row.execute()
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            throw StoreError.idAlreadyExists(kind: .outcome, id: outcome.id)
        }
        let rowID = db.lastInsertedRowID
        if outcome.values.count > 1 {
            // The first value is in the row; the others go to `outcomeValue`, from position 1.
            let valueRow = RawStatement(try db.cachedStatement(sql: EntityRowCodec.insertValuesSQL()), in: db)
            for (position, value) in outcome.values.enumerated().dropFirst() {
                valueRow.bind(1, rowID)
                valueRow.bind(2, position)
                bind(value, to: valueRow, from: 3)
                try valueRow.execute()
            }
        }
        try link(
            kind: .outcome, id: outcome.id, uuid: uuid, effectiveDate: outcome.metadata.effectiveDate, provenance: provenance,
            after: previous)
        if let graph {
            try linkGraph(graph.previous, to: uuid, rowID: rowID, effective: outcome.metadata.effectiveDate)
        } else if let previous, !previous.others.isEmpty {
            try linkGraph([previous] + previous.others, to: uuid, rowID: rowID, effective: outcome.metadata.effectiveDate)
            try setConflict(outcomeID: outcome.id, false)
        }
        if graph?.exports ?? (provenance == nil) { try enqueueExport(outcomeID: outcome.id, uuid: uuid) }
        try revisions.append(.outcome, uuid: uuid, rowID: rowID, owner: .taskVersion(outcome.taskUUID))
    }

    /// The patient a new version of `entity` belongs to, as the revision log finds it.
    private static func owner(of entity: CareEntity) -> RevisionLog.Owner {
        switch entity {
        case .patient(let patient): return .patient(patient.id)
        case .carePlan(let plan): return .carePlan(patientID: plan.patientID)
        case .task(let task): return .inCarePlan(task.carePlanID, linkedPatient: task.metadata.linkage.patientID)
        case .contact(let contact): return .inCarePlan(contact.carePlanID, linkedPatient: nil)
        case .outcome(let outcome): return .taskVersion(outcome.taskUUID)
        }
    }

    /// The patient the stored version at `rowID` of `kind` belongs to (what a tombstone copies).
    private func owner(ofRow rowID: Int64, kind: EntityKind, id: String) throws -> RevisionLog.Owner {
        let table = StoreSchema.Table.entity(kind)
        switch kind {
        case .patient: return .patient(id)
        case .carePlan:
            return .carePlan(patientID: try String.fetchOne(db, sql: "SELECT patientID FROM carePlan WHERE rowID = ?", arguments: [rowID]))
        case .task:
            let row = try Row.fetchOne(
                db, sql: "SELECT carePlanID, json_extract(payload, ?) AS linkedPatient FROM task WHERE rowID = ?",
                arguments: [FHIRLinkage.patientJSONPath, rowID])
            return .inCarePlan(row?["carePlanID"], linkedPatient: row?["linkedPatient"])
        case .contact:
            return .inCarePlan(try String.fetchOne(db, sql: "SELECT carePlanID FROM \(table) WHERE rowID = ?", arguments: [rowID]), linkedPatient: nil)
        case .outcome:
            let taskUUID = try UUID.fetchOne(db, sql: "SELECT taskUUID FROM outcome WHERE rowID = ?", arguments: [rowID])
            return taskUUID.map { .taskVersion($0) } ?? .carePlan(patientID: nil)
        }
    }

    /// The change feed of write-back: a version of an outcome the patient recorded (one with no provenance:
    /// not made from a provider's resource, which must not be sent back to it) is queued for export in the
    /// transaction that writes it.
    private mutating func enqueueExport(outcomeID: String, uuid: UUID) throws {
        let entry = OutboxEntry(destination: OutboxEntry.provider, entityKind: .outcome, entityID: outcomeID, entityUUID: uuid, createdDate: now)
        summary.outboxEntryIDs.append(try SQLiteStore.enqueue(entry, in: db))
    }

    /// Time zone identifiers, looked up once per zone (reading `identifier` copies a string each time).
    private mutating func timeZoneName(_ zone: TimeZone) -> String {
        if let known = zoneNames[zone] { return known }
        zoneNames[zone] = zone.identifier
        return zone.identifier
    }

    /// Links the new version to its predecessor and to the FHIR resource it came from, and reports it.
    private mutating func finishInsert(kind: EntityKind, id: String, metadata: EntityMetadata, after previous: Tip?) throws {
        try link(kind: kind, id: id, uuid: metadata.uuid, effectiveDate: metadata.effectiveDate, provenance: metadata.provenance, after: previous)
        summary.versionUUIDs.append(metadata.uuid)
    }

    /// Links the new version to its predecessor and to the FHIR resource it came from. `id` is evaluated
    /// only for a version with provenance (an outcome's id is formatted from its task uuid).
    private mutating func link(
        kind: EntityKind, id: @autoclosure () -> String, uuid: UUID, effectiveDate: Date, provenance: Provenance?, after previous: Tip?
    ) throws {
        if let previous {
            try linkForward(StoreSchema.Table.entity(kind), from: previous, to: uuid, effective: effectiveDate)
            if kind == .task { forgetTaskVersion(previous.uuid) }
        }
        if let provenance {
            try SQLiteStore.link(
                ResourceLink(sourceSystem: provenance.sourceSystem, resourceType: provenance.fhirType, resourceID: provenance.fhirID,
                             entityKind: kind, entityID: id()),
                in: db)
        }
    }

    /// Links outcome version `uuid` (at `rowID`) after each of `previous`: they stop being tips (the
    /// first version that names one is its `nextVersionUUID`), and the new version keeps all of them when
    /// it names more than one.
    private func linkGraph(_ previous: [Tip], to uuid: UUID, rowID: Int64, effective: Date) throws {
        let statement = try db.cachedStatement(sql: """
            UPDATE outcome SET nextVersionUUID = ?, nextEffectiveDate = ? WHERE rowID = ? AND nextVersionUUID IS NULL
            """)
        for tip in previous { try statement.execute(arguments: [uuid, effective.storeSeconds, tip.rowID]) }
        if previous.count > 1 {
            try db.cachedStatement(sql: "UPDATE outcome SET previousVersionUUIDs = ? WHERE rowID = ?")
                .execute(arguments: [EntityRowCodec.packed(previous.map(\.uuid)), rowID])
        }
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

    /// The tip of an outcome, the newest when it has several (the others in its `others`).
    private func outcomeTip(taskUUID: UUID, eventStart: Date, occurrence: Int) throws -> Tip? {
        let tips = try outcomeVersions(taskUUID: taskUUID, eventStart: eventStart, occurrence: occurrence, tipsOnly: true).map(\.version)
        guard var newest = tips.max(by: { $0.versionNumber < $1.versionNumber }) else { return nil }
        newest.others = tips.filter { $0.rowID != newest.rowID }
        return newest
    }

    /// The stored versions of an outcome (or its tips only), each with whether it is a tip and whether
    /// it was made from a provider's resource.
    private func outcomeVersions(
        taskUUID: UUID, eventStart: Date, occurrence: Int, tipsOnly: Bool = false
    ) throws -> [(version: Tip, isTip: Bool, fromProvider: Bool)] {
        let statement = RawStatement(try db.cachedStatement(sql: """
            SELECT rowID, uuid, effectiveDate, deletedDate, contentHash, versionNumber, nextVersionUUID IS NULL, fhirType IS NOT NULL
            FROM outcome WHERE taskUUID = ? AND eventStart = ? AND occurrenceIndex = ?\(tipsOnly ? " AND nextVersionUUID IS NULL" : "")
            """), in: db)
        defer { statement.reset() }
        statement.bind(1, taskUUID)
        statement.bind(2, eventStart.storeSeconds)
        statement.bind(3, occurrence)
        var versions: [(version: Tip, isTip: Bool, fromProvider: Bool)] = []
        while try statement.step() {
            guard let uuid = statement.uuid(1) else { continue }
            let tip = Tip(
                rowID: statement.int64(0), uuid: uuid, effectiveDate: Date(storeSeconds: statement.double(2)),
                deletedDate: statement.isNull(3) ? nil : Date(storeSeconds: statement.double(3)), contentHash: statement.text(4),
                versionNumber: Int(statement.int64(5)))
            versions.append((tip, statement.int64(6) != 0, statement.int64(7) != 0))
        }
        return versions
    }

    private static func tip(_ row: Row) -> Tip? {
        // Columns by position (rowID, uuid, effectiveDate, deletedDate, contentHash): this runs once per row written.
        guard let rowID: Int64 = row[0], let uuid: UUID = row[1], let effective: Double = row[2] else { return nil }
        let deleted: Double? = row[3]
        return Tip(
            rowID: rowID, uuid: uuid, effectiveDate: Date(storeSeconds: effective),
            deletedDate: deleted.map(Date.init(storeSeconds:)), contentHash: row[4])
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
        let taskID = task.task.id
        if let named = outcome.taskID, named != taskID {
            throw StoreError.invalidEntity(
                kind: .outcome, id: outcome.id,
                reason: "taskUUID \(outcome.taskUUID.uuidString) is a version of task '\(taskID)', not of '\(named)'")
        }
        if task.deleted { throw StoreError.entityDeleted(kind: .task, id: taskID) }
        let index = outcome.taskOccurrenceIndex
        guard let eventStart = task.task.schedule.eventStart(occurrence: index) else {
            throw StoreError.occurrenceNotFound(taskID: taskID, taskUUID: outcome.taskUUID, occurrenceIndex: index)
        }
        let outsideBefore = eventStart < task.effectiveDate
        let outsideAfter = task.nextEffectiveDate.map { eventStart >= $0 } ?? false
        if outsideBefore || outsideAfter {
            throw StoreError.occurrenceOutsideVersion(
                taskID: taskID, taskUUID: outcome.taskUUID, occurrenceIndex: index, eventStart: eventStart,
                versionStart: task.effectiveDate, versionEnd: task.nextEffectiveDate)
        }
        return (task, eventStart)
    }

    private mutating func taskVersion(_ uuid: UUID) throws -> TaskVersion {
        // Outcomes of a long run are checked in batch order, but a batch often holds a task's outcomes
        // one after the other: then most lookups ask for the previous one again.
        if let last = lastTaskVersion, last.uuid == uuid { return last.version }
        let version = try readTaskVersion(uuid)
        lastTaskVersion = (uuid, version)
        return version
    }

    private mutating func readTaskVersion(_ uuid: UUID) throws -> TaskVersion {
        if let known = taskVersionsRead[uuid] { return known }
        if !taskVersionsChanged.contains(uuid), let cached = taskCache.version(uuid) {
            taskVersionsRead[uuid] = cached
            return cached
        }
        let statement = try db.cachedStatement(sql: "SELECT * FROM task WHERE uuid = ?")
        guard let row = try Row.fetchOne(statement, arguments: [uuid]) else {
            throw StoreError.versionNotFound(kind: .task, uuid: uuid)
        }
        let task = try codec.decode(CareTask.self, row)
        let version = TaskVersion(
            task: task, effectiveDate: task.effectiveDate, nextEffectiveDate: row.date("nextEffectiveDate"),
            deleted: task.deletedDate != nil)
        taskVersionsRead[uuid] = version
        taskVersionsFetched[uuid] = version
        return version
    }

    private mutating func forgetTaskVersion(_ uuid: UUID) {
        lastTaskVersion = nil
        taskVersionsRead[uuid] = nil
        taskVersionsFetched[uuid] = nil
        taskVersionsChanged.insert(uuid)
    }

    private func with(_ outcome: Outcome, uuid: UUID) -> Outcome {
        var outcome = outcome
        outcome.metadata.uuid = uuid
        return outcome
    }

    private func with(_ outcome: Outcome, taskID: String) -> Outcome {
        var outcome = outcome
        outcome.taskID = taskID
        return outcome
    }

    /// `<taskUUID>_<occurrenceIndex>`, CareKit's outcome id, split into its parts.
    static func parseOutcomeID(_ id: String) -> (UUID, Int)? {
        // By bytes: this runs for every outcome id a batch or a query names.
        guard let separator = id.utf8.lastIndex(of: UInt8(ascii: "_")),
              let uuid = UUID(canonical: id[..<separator]),
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
