import CareModel
import Foundation
import GRDB

/// Applies the changes of one batch inside its transaction, with CareKit's versioning rules.
///
/// - add refuses an id that exists, even when its current version is a tombstone;
/// - update appends a version after the current one (the tip) and links the two; it refuses a deleted id
///   and an effective date before the tip's;
/// - delete appends a tombstone (a copy of the tip with `deletedDate`);
/// - an upsert or delete that asks for ``EffectiveDateRule/noEarlierThanPrevious`` is raised to the tip's
///   effective date rather than refused: the one place that rule is applied, against the tip as it is in
///   this transaction;
/// - upsert adds, or does nothing when the content is unchanged (same provenance content hash, or equal
///   content when there is no hash), or updates; an outcome whose current version is a tombstone gets a
///   new version after it (CareKit lets an occurrence whose outcome was deleted have an outcome again);
/// - an outcome must name an occurrence of its task version's schedule that lies in the time that
///   version owns (from its effective date to the next version's).
///
/// Nothing is ever removed. Any error leaves the transaction to be rolled back by the caller.
///
/// Its parts, one file each in this folder: the versioning rules (`BatchWriter+Versioning`), the outcome
/// rows and their positional binds (`BatchWriter+OutcomeRows`), the bulk add of a run of outcomes
/// (`BatchWriter+OutcomeRuns`), the task versions outcomes name and the store's cache of them
/// (`BatchWriter+TaskVersions`), what a write queues for the provider (`BatchWriter+ExportFeed`), and its
/// reads of the store (`BatchWriter+Lookups`).
struct BatchWriter {
    let db: Database
    let now: Date
    let codec: EntityRowCodec
    let taskCache: TaskVersionCache
    var summary = BatchSummary()
    var uuids = VersionUUIDGenerator()
    var zoneNames: [TimeZone: String] = [:]

    /// The current version of an entity.
    struct Tip {
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
    struct GraphLinks {
        /// The stored versions it names, in the device's order.
        var previous: [Tip]
        var versionNumber: Int
        var deletedDate: Date?
        var exports: Bool
    }

    /// What outcome checks need of a task version.
    typealias TaskVersion = TaskVersionCache.Version

    /// The task versions this batch used (valid at its end).
    var taskVersionsRead: [UUID: TaskVersionCache.Version] = [:]
    /// The task versions this batch read from the database or wrote, for the store's cache once it commits.
    var taskVersionsFetched: [UUID: TaskVersionCache.Version] = [:]
    /// The task versions this batch changed (a later version or a tombstone was appended).
    var taskVersionsChanged: Set<UUID> = []
    /// The task version looked up last.
    var lastTaskVersion: (uuid: UUID, version: TaskVersion)?
    /// The resource links this batch wrote (or found written): nothing removes one, so each is written
    /// once per batch.
    var linked: Set<ResourceLink> = []
    /// The tip of each id (not an outcome's) this batch wrote a version of, as ``tip(_:id:)`` would read it
    /// back: a long-running task's versions are written one after another in one batch, and reading the
    /// tip walks every version of the id (its index is by id alone), tens for such a task. A tombstone
    /// drops its id's (``delete(_:id:at:effective:uuid:)``); nothing else in a batch moves a tip.
    var writtenTips: [EntityKey: Tip] = [:]

    /// The outcome INSERT, prepared once per batch (GRDB's statement cache hashes the SQL on each use).
    var outcomeInsert: Statement?
    /// The per-patient revision log (CareKit sync). Every version this writer inserts (first versions,
    /// new versions, tombstones) is filed there in the same transaction: the three insert paths
    /// (`insert` and `delete` in BatchWriter+Versioning, `writeOutcome` in BatchWriter+OutcomeRows) each
    /// end with one `revisions.append`.
    var revisions: RevisionLog

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
        case .upsert(let entity, let rule): try upsert(entity, effective: rule)
        case .delete(let kind, let id, let date, let rule): try delete(kind, id: id, at: date ?? now, effective: rule)
        case .recordSource(let resource): try record(resource)
        case .recordSourceIfChanged(let resource, let entities):
            if summary.wroteVersion(ofAny: entities) { try record(resource) }
        case .link(let link):
            try SQLiteStore.link(link, in: db)
            summary.linksWritten += 1
        case .setCheckpoint(let checkpoint):
            try SQLiteStore.setCheckpoint(checkpoint, in: db)
            summary.checkpointsSet += 1
        case .recordExportProgress(let progress): try SQLiteStore.recordExportProgress(progress, in: db)
        case .recordReportStart(let start): try SQLiteStore.recordReportStart(start, in: db)
        case .recordConsent(let decision): try SQLiteStore.recordConsent(decision, in: db)
        case .enqueue(let entry):
            summary.outboxEntryIDs.append(try SQLiteStore.enqueue(entry, in: db))
        case .transition(let id, let transition):
            try SQLiteStore.transition(id, transition, in: db)
            summary.outboxTransitions += 1
        case .deadLetter(let letter):
            summary.deadLetterIDs.append(try SQLiteStore.add(letter, in: db))
        case .settleDeadLetter(let id, let settlement):
            if try SQLiteStore.settleDeadLetter(id, settlement, at: now, in: db) { summary.deadLettersSettled += 1 }
        case .settleDeadLettersOfOutboxEntry(let id, let settlement):
            for letter in try Int64.fetchAll(db, sql: "SELECT id FROM deadLetter WHERE outboxEntryID = ? AND resolvedDate IS NULL", arguments: [id]) {
                if try SQLiteStore.settleDeadLetter(letter, settlement, at: now, in: db) { summary.deadLettersSettled += 1 }
            }
        case .appendVersion(let outcome): try appendKeepingUUID(outcome)
        case .admitKnowledge(let push): try admitKnowledge(push)
        case .endRevision: revisions.endRevision()
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

    mutating func record(_ resource: SourceResource) throws {
        if try SQLiteStore.record(resource, in: db) { summary.sourcesRecorded += 1 } else { summary.sourcesUnchanged += 1 }
    }

    /// Stores `outcome`, a version a device made, under its own uuid, after the stored versions its
    /// `previousVersionUUIDs` names, as CareKit's store merges a revision: the store keeps the version graph
    /// the devices made, several tips of one outcome (a conflict) included, which a device resolves by a
    /// version naming them all. Nothing when that uuid is stored.
    ///
    /// - A named version the store never had is left out (CareKit's store drops a link to a version it
    ///   lacks), and so is one of another patient (nothing tells whether it exists); one of another
    ///   outcome of the same patient is refused.
    /// - A uuid another patient's version has is no refusal either: the version is stored under a uuid
    ///   of its own (``ownUUID(_:)``), so that the answer is the same whether the uuid exists or not.
    /// - The version's effective date is no earlier than those it names; its `deletedDate` (a tombstone)
    ///   and its dates are kept as sent. A tombstone of an outcome the store has no version of stores nothing.
    /// - The outcome is filed in `outcomeConflict` while it has several tips (its export waits), and out
    ///   of it once it has one.
    mutating func appendKeepingUUID(_ sent: Outcome) throws {
        guard let outcome = try ownUUID(sent) else {
            summary.file(.unchanged, EntityKey(outcomeOf: sent.taskUUID, occurrence: sent.taskOccurrenceIndex))
            summary.versionUUIDs.append(sent.metadata.uuid)
            return
        }
        let (task, start) = try ownedOccurrence(of: outcome)
        let stored = try outcomeVersions(taskUUID: outcome.taskUUID, eventStart: start, occurrence: outcome.taskOccurrenceIndex)
        var previous: [Tip] = []
        for named in outcome.metadata.previousVersionUUIDs {
            var found = stored.first { $0.version.uuid == named }
            if found == nil, let owner = try patientOfOutcomeVersion(named) {
                if let owner, try ByteExactID.same(owner, revisions.patient(ofTaskVersion: outcome.taskUUID)) {
                    throw StoreError.invalidEntity(
                        kind: .outcome, id: outcome.id, reason: "previousVersionUUIDs names \(named.uuidString), a version of another outcome")
                }
                // Another patient's uuid: the version sent under it was stored under a uuid of its own.
                let substitute = try substituteUUID(named, for: outcome)
                found = stored.first { $0.version.uuid == substitute }
            }
            if let found, !previous.contains(where: { $0.uuid == found.version.uuid }) { previous.append(found.version) }
        }
        let deleted = outcome.metadata.deletedDate
        if deleted != nil, stored.isEmpty {
            summary.file(.unchanged, EntityKey(outcomeOf: outcome.taskUUID, occurrence: outcome.taskOccurrenceIndex))
            return
        }
        var version = with(outcome, taskID: task.task.id)
        version.metadata.effectiveDate = max(version.metadata.effectiveDate, previous.map(\.effectiveDate).max() ?? .distantPast)
        version.metadata.previousVersionUUIDs = previous.map(\.uuid)
        version.metadata.nextVersionUUIDs = []
        version.metadata.createdDate = version.metadata.createdDate ?? now
        version.metadata.updatedDate = version.metadata.updatedDate ?? now
        let exports = Self.queuesAppendedVersionForProvider(
            version.metadata.provenance, deleting: deleted != nil,
            patientWroteAVersion: stored.contains { !$0.fromProvider && $0.version.deletedDate == nil })
        let links = GraphLinks(
            previous: previous, versionNumber: (stored.map(\.version.versionNumber).max() ?? -1) + 1,
            deletedDate: deleted.map { max($0, version.metadata.effectiveDate) }, exports: exports)
        try writeOutcome(
            version, uuid: version.metadata.uuid, taskID: task.task.id, payload: try extras(of: version), after: nil, eventStart: start,
            graph: links)
        summary.versionUUIDs.append(version.metadata.uuid)
        let named = Set(previous.map(\.uuid))
        let tips = stored.filter { $0.isTip && !named.contains($0.version.uuid) }.count + 1
        try setConflict(outcomeID: outcome.id, tips > 1)
        summary.file(
            deleted != nil ? .deleted : stored.isEmpty ? .created : .updated,
            EntityKey(outcomeOf: outcome.taskUUID, occurrence: outcome.taskOccurrenceIndex))
    }

    /// Files outcome `outcomeID` as having several tips, or as having one.
    func setConflict(outcomeID: String, _ several: Bool) throws {
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
}
