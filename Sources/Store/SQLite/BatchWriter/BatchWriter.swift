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
        /// For outcomes: the version's number in its chain (0 for the first).
        var versionNumber = 0
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

    /// Stores `outcome` under its own uuid after the current version of its outcome (a tombstone when it
    /// has `deletedDate`); nothing when that uuid is stored. The store's history stays one chain: a
    /// version another device wrote concurrently follows whichever arrived first.
    mutating func appendKeepingUUID(_ outcome: Outcome) throws {
        if try uuidExists(.outcome, outcome.metadata.uuid) {
            summary.unchanged += 1
            summary.versionUUIDs.append(outcome.metadata.uuid)
            return
        }
        let (task, start) = try ownedOccurrence(of: outcome)
        let current = try outcomeTip(taskUUID: outcome.taskUUID, eventStart: start, occurrence: outcome.taskOccurrenceIndex)
        if let deleted = outcome.metadata.deletedDate {
            guard let current, current.deletedDate == nil else {
                summary.unchanged += 1
                return
            }
            try delete(.outcome, id: outcome.id, at: max(deleted, current.effectiveDate), uuid: outcome.metadata.uuid)
            return
        }
        var version = with(outcome, taskID: task.task.id)
        if let current {
            version.metadata.effectiveDate = max(version.metadata.effectiveDate, current.effectiveDate)
        }
        try insertOutcome(version, after: current, eventStart: start)
        if current == nil { summary.added += 1 } else { summary.updated += 1 }
    }

    /// Moves the outbox entries `ids`, in order, by the same `step`.
    mutating func transition(_ ids: [Int64], _ step: OutboxTransition) throws {
        try SQLiteStore.transition(ids, step, in: db)
        summary.outboxTransitions += ids.count
    }
}
