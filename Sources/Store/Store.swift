import CareModel
import Foundation

/// The staging store between the FHIR side and the care-app side: every version of every care entity,
/// the raw resources they came from and the links to them, sync checkpoints, the export outbox and dead
/// letters.
///
/// The embedded implementation is ``SQLiteStore``; `PostgreSQLStore` (module PostgresStore) serves deployments that
/// outgrow one machine. Every write goes through ``apply(_:)``: one batch, one transaction.
///
/// ## Topics
///
/// ### Writing
///
/// - ``withWriterLease(_:_:)``
/// - ``withAppendLease(_:_:)``, ``appendsAreWaiting()``, ``yieldToAppends()``
/// - ``apply(_:)``
/// - ``StoreBatch``
///
/// ### Reading care entities
///
/// - ``patients(_:)``, ``carePlans(_:)``, ``contacts(_:)``, ``tasks(_:)``, ``outcomes(_:)``
/// - ``tasks(carePlanID:_:)``
/// - ``history(_:id:)``, ``histories(_:ids:)``
/// - ``events(patientID:in:)``, ``lastOutcomeEventStarts(taskUUIDs:)``
///
/// ### Reading staging data
///
/// - ``links(resourceType:resourceID:)``, ``sourceResources(resourceType:resourceID:)``,
///   ``activitiesWithDetail(resourceType:resourceID:)``
/// - ``checkpoint(server:resourceType:)``, ``exportProgress(target:)``, ``reportStart(frequency:)``
/// - ``dueOutboxEntries(at:limit:)``, ``outboxEntries(in:limit:)``, ``outboxEntry(id:)``, ``outboxEntry(destination:entityUUID:)``,
///   ``outboxEntries(destination:entityUUIDs:)``
/// - ``deadLetters(limit:includingResolved:since:)``, ``deadLetter(id:)``, ``deadLetters(limit:)``, ``waitingDeadLetterCount()``
/// - ``statistics()``, ``integrityCheck()``
/// - ``forEachEntity(_:_:_:)``, ``forEachVersion(_:_:)``: streaming reads for dumps
public protocol Store: AnyObject, Sendable {
    /// Runs `body` as the store's only writer: no other write job, in this process or another, runs
    /// until it returns (a holder that waits longer than the store's busy timeout gets
    /// ``StoreError/writerBusy(path:holder:waitedSeconds:)``). A job that plans from what it reads and
    /// then writes (an import, an export, an app's outcomes) holds it from its first read to its last
    /// write, so that whatever several processes do at once ends as some serial order of their jobs.
    /// Reads never wait for it. A holder may take it again (nested jobs). `job` names the holder in
    /// the message another waiter gets (no patient data).
    ///
    /// Docs/concurrency.md states the guarantee; a PostgreSQL store gives it with an advisory lock.
    func withWriterLease<T>(_ job: String, _ body: () throws -> T) throws -> T

    /// Runs `body`, a job that only appends outcome versions to tasks that exist (an app's push), as a
    /// writer: after the job holding the writer lease ends, or earlier, at one of its safe points
    /// (``yieldToAppends()``), and before any other write job starts. Whatever runs at once still ends
    /// as some serial order of the jobs: the append as if it came before the rest of the job it
    /// interrupted. Waits at most the busy timeout, as ``withWriterLease(_:_:)`` does.
    func withAppendLease<T>(_ job: String, _ body: () throws -> T) throws -> T

    /// Whether an append waits (``withAppendLease(_:_:)``): cheap, for a job holding the lease to ask at
    /// each of its safe points.
    func appendsAreWaiting() -> Bool

    /// Called by the job holding the writer lease at a safe point (nothing planned from an earlier read is
    /// still to be written): runs the waiting appends, then goes on as the lease's holder; returns at
    /// once when none waits (it asks as ``appendsAreWaiting()`` does). Throws
    /// ``StoreError/writerBusy(path:holder:waitedSeconds:)`` when an append outlasts the busy timeout.
    func yieldToAppends() throws

    /// Applies every change of `batch` in one transaction; on any error nothing of it is kept.
    @discardableResult
    func apply(_ batch: StoreBatch) throws -> BatchSummary

    func patients(_ query: EntityQuery) throws -> [Patient]
    func carePlans(_ query: EntityQuery) throws -> [CarePlan]
    func contacts(_ query: EntityQuery) throws -> [Contact]
    func tasks(_ query: EntityQuery) throws -> [CareTask]
    /// Outcomes (the current ones, or those whose events fall in the query's interval).
    func outcomes(_ query: EntityQuery) throws -> [Outcome]
    /// The tasks of care plan `carePlanID`, as `query` picks their versions.
    func tasks(carePlanID: String, _ query: EntityQuery) throws -> [CareTask]
    /// Every version of entity `kind/id`, oldest first, tombstones included.
    func history(_ kind: EntityKind, id: String) throws -> [CareEntity]
    /// Every version of each entity `kind/id` of `ids`, read at once (what an export of many outcomes
    /// asks), in stored order; ids with no versions are left out.
    func histories(_ kind: EntityKind, ids: [String]) throws -> [CareEntity]
    /// The task versions whose uuids are `uuids`, each once, in stored order; uuids not found are left
    /// out. `ids` are the tasks they belong to: a store without a lookup by version reads their
    /// histories. What an export of many outcomes asks: the versions its outcomes name, not every
    /// version of their tasks.
    func taskVersions(uuids: [UUID], ids: [String]) throws -> [CareTask]
    /// The events of patient `patientID` overlapping `interval` (start inclusive, running events count;
    /// end exclusive), each from the task version that owned its time, with its outcome if any: the tasks
    /// of the patient's care plans and their tasks of no care plan (orders; an Observation log's
    /// occurrences only where it has a reading).
    func events(patientID: String, in interval: DateInterval) throws -> [Event]
    /// The latest event start among the outcomes (every version, tombstones included) of each task
    /// version of `taskUUIDs`, by task version; those with no outcome are left out. Where a task
    /// version's recorded occurrences end: a new version of the task effective after it leaves every
    /// outcome (and the id it was exported under) with the version it belongs to.
    func lastOutcomeEventStarts(taskUUIDs: [UUID]) throws -> [UUID: Date]

    /// The entities made from FHIR resource `resourceType/resourceID`.
    func links(resourceType: String, resourceID: String) throws -> [ResourceLink]
    /// The entities made from each of `resources` (type and id), read at once: what an import of many
    /// resources asks before writing them.
    func links(ofResources resources: [(type: String, id: String)]) throws -> [ResourceLink]
    /// The contents kept of FHIR resource `resourceType/resourceID`, oldest first.
    func sourceResources(resourceType: String, resourceID: String) throws -> [SourceResource]
    /// ``SourceResource/activitiesWithDetail`` of the last content kept of FHIR resource
    /// `resourceType/resourceID`, without reading its body; nil when none is kept, or when it was kept
    /// before stores recorded it.
    func activitiesWithDetail(resourceType: String, resourceID: String) throws -> [String]?
    func checkpoint(server: String, resourceType: String) throws -> SyncCheckpoint?
    /// The last export committed to file target `target` (a file, or a folder), if one was.
    func exportProgress(target: String) throws -> ExportProgress?
    /// The first day the care-team reports of `frequency` cover, if their first run recorded one.
    func reportStart(frequency: String) throws -> ReportStart?
    func outboxEntry(id: Int64) throws -> OutboxEntry?
    /// The entry of entity version `entityUUID` for `destination`, if one was queued (whatever its state):
    /// what a job asks before it makes an export it queues once.
    func outboxEntry(destination: String, entityUUID: UUID) throws -> OutboxEntry?
    /// The entries of entity versions `entityUUIDs` for `destination` (those queued, in no particular
    /// order), read at once: what an export asks to know which earlier versions of its outcomes were sent.
    func outboxEntries(destination: String, entityUUIDs: [UUID]) throws -> [OutboxEntry]
    /// Pending entries, and failed ones whose retry time has come; none of an outcome that has several
    /// tips now (devices' versions in conflict): its export waits for the device's resolution.
    func dueOutboxEntries(at now: Date, limit: Int) throws -> [OutboxEntry]
    /// Entries in `state`, oldest first (what `caregate outbox` lists).
    func outboxEntries(in state: OutboxState, limit: Int) throws -> [OutboxEntry]
    /// Dead letters, newest first: those waiting for a person (not resolved by a replay), or all of them
    /// when `includingResolved`; only those kept from `since` on when it is given.
    func deadLetters(limit: Int, includingResolved: Bool, since: Date?) throws -> [DeadLetter]
    /// Dead letter `id`, waiting or resolved, with its payload.
    func deadLetter(id: Int64) throws -> DeadLetter?
    /// How many dead letters wait for a person (cheap: what a sync run's report says at its end).
    func waitingDeadLetterCount() throws -> Int
    /// Counts of everything kept.
    func statistics() throws -> StoreStatistics
    /// The outbox's depth by state, its oldest waiting entry and the dead letters (for metrics).
    func outboxSummary() throws -> OutboxSummary

    /// Calls `body` with each entity of `kind` that `query` picks, in the order they were stored,
    /// streaming, so that millions of outcomes never sit in memory at once.
    func forEachEntity(_ kind: EntityKind, _ query: EntityQuery, _ body: (CareEntity) throws -> Void) throws
    /// Calls `body` with every version of every entity of `kind`, tombstones included, in stored order.
    func forEachVersion(_ kind: EntityKind, _ body: (CareEntity) throws -> Void) throws
    /// The backend's own consistency check; an empty array means the store is sound.
    func integrityCheck() throws -> [String]
}

extension Store {
    /// The current patients (as SQLiteStore's defaults, for any store).
    public func patients() throws -> [Patient] { try patients(.current) }
    /// The current care plans.
    public func carePlans() throws -> [CarePlan] { try carePlans(.current) }
    /// The current contacts.
    public func contacts() throws -> [Contact] { try contacts(.current) }
    /// The current tasks.
    public func tasks() throws -> [CareTask] { try tasks(.current) }
    /// The current outcomes.
    public func outcomes() throws -> [Outcome] { try outcomes(.current) }

    /// A store without an append gate serializes an append as any write job.
    public func withAppendLease<T>(_ job: String, _ body: () throws -> T) throws -> T {
        try withWriterLease(job, body)
    }

    public func appendsAreWaiting() -> Bool { false }

    public func yieldToAppends() throws {}

    /// The versions asked for, picked from the histories of their tasks.
    public func taskVersions(uuids: [UUID], ids: [String]) throws -> [CareTask] {
        let wanted = Set(uuids)
        var seen: Set<UUID> = []
        return try histories(.task, ids: ids).compactMap {
            guard case .task(let task) = $0, wanted.contains(task.metadata.uuid), seen.insert(task.metadata.uuid).inserted else { return nil }
            return task
        }
    }

    /// The dead letters waiting for a person, newest first.
    public func deadLetters(limit: Int) throws -> [DeadLetter] {
        try deadLetters(limit: limit, includingResolved: false, since: nil)
    }
}
