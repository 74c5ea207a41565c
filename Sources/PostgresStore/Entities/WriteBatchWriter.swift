import CareModel
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Store

/// Applies the changes of one batch inside its PostgreSQL transaction, with the SQLite store's rules
/// (Sources/Store/SQLite/BatchWriter/BatchWriter.swift, which this ports change for change):
///
/// - add refuses an id that exists, even when its current version is a tombstone;
/// - update appends a version after the current one (the tip) and links the two; it refuses a deleted id
///   and an effective date before the tip's;
/// - delete appends a tombstone (a copy of the tip with `deleted_date`);
/// - an upsert or delete that asks for ``EffectiveDateRule/noEarlierThanPrevious`` is raised to the tip's
///   effective date rather than refused;
/// - upsert adds, or does nothing when the content is unchanged, or updates; an outcome whose current
///   version is a tombstone gets a new version after it;
/// - an outcome must name an occurrence of its task version's schedule in the time that version owns;
/// - a device's outcome version is kept under its own uuid in its outcome's version graph
///   (``appendKeepingUUID(_:)``), several tips filed in `outcome_conflict`.
///
/// Every version written is filed in the revision log (``PostgresRevisionLog``), whose clock is ticked
/// once, at the end of the batch (``finish()``). The changes that are not about entities go to
/// ``PostgresStagingChanges``. Any error leaves the transaction to be rolled back by the caller.
///
/// Its parts, one file each: versioning (`WriteVersioning`), reads of the store (`WriteLookups`), rows
/// (`WriteRows`), outcomes (`WriteOutcomes`, `WriteOutcomeRuns`), device versions (`WriteDeviceVersions`),
/// the export feed (`WriteExportFeed`), the revision log (`WriteRevisionLog`, `WriteDeviceKnowledge`).
final class PostgresBatchWriter {
    let connection: PostgresConnection
    let logger: Logger
    let now: Date
    var summary = BatchSummary()
    var uuids = VersionUUIDGenerator()
    let revisions: PostgresRevisionLog

    /// The current version of an entity.
    struct Tip {
        let rowID: Int64
        let uuid: UUID
        let effectiveDate: Date
        let deletedDate: Date?
        let contentHash: String?
        /// For outcomes: the version's arrival number among its outcome's versions (0 for the first).
        var versionNumber = 0
        /// For outcomes with several tips: the tips besides this one, the newest.
        var others: [Tip] = []
    }

    /// How a version a device made joins its outcome's version graph.
    struct GraphLinks {
        var previous: [Tip]
        var versionNumber: Int
        var deletedDate: Date?
        var exports: Bool
    }

    /// What outcome checks need of a task version.
    struct TaskVersion {
        var task: CareTask
        var effectiveDate: Date
        var nextEffectiveDate: Date?
        var deleted: Bool
    }

    /// The task versions this batch read or wrote (valid while it runs: a change forgets what it changes).
    var taskVersionsRead: [UUID: TaskVersion] = [:]
    var lastTaskVersion: (uuid: UUID, version: TaskVersion)?
    /// What this batch knows of the store, read in bulk before its first change (``prefetch(_:)``) and kept
    /// up to date by its writes, so that most changes need no read of their own (``WritePrefetch``).
    var known = KnownState()
    /// Links and raw resources, written in bulk at the end of the batch (nothing the batch reads).
    var pendingLinks: [ResourceLink] = []
    var pendingSources: [SourceResource] = []
    /// Versions to insert at the next read (``flushPending()``), with the row ids allocated to them.
    var pendingEntities: [EntityKind: [(rowID: Int64, entity: CareEntity, body: ByteBuffer)]] = [:]
    var pendingOutcomes: [(rowID: Int64, row: OutcomeRow)] = []
    /// Row ids allocated ahead, per table, the next last; how many one allocation takes.
    var rowIDPool: [EntityKind: [Int64]] = [:]
    var allocationSize = 16

    init(connection: PostgresConnection, logger: Logger, now: Date) {
        self.connection = connection
        self.logger = logger
        self.now = now
        revisions = PostgresRevisionLog(connection: connection, logger: logger)
    }

    /// Applies every change of `changes`, in order: long runs of outcome adds in bulk.
    func apply(_ changes: [StoreChange]) async throws {
        try await prefetch(changes)
        allocationSize = max(16, min(Self.rowsPerStatement, changes.count))
        revisions.beforeRead = { [unowned self] in try await self.flushPending() }
        revisions.readsClocksAtTheEnd = !changes.contains {
            switch $0 {
            case .mergeKnowledge, .admitKnowledge: return true
            default: return false
            }
        }
        var position = changes.startIndex
        while position < changes.endIndex {
            var end = position
            while end < changes.endIndex, case .add(.outcome) = changes[end] { end += 1 }
            if end - position >= Self.bulkRunMinimum {
                try await addOutcomes(changes[position..<end])
            } else if !Self.isEntityChange(changes[position]) {
                // Staging changes: a run of enqueues or of one outbox step goes in bulk.
                try await flushPending()
                let applied = try await PostgresStagingChanges.apply(changes[position...], at: now, on: connection, logger: logger, summary: &summary)
                guard applied > 0 else { throw PostgresStoreError.unavailable(feature: "the batch change \(Self.name(of: changes[position]))") }
                end = position + applied
            } else {
                end = max(end, position + 1)
                for change in changes[position..<end] { try await apply(change) }
            }
            position = end
        }
        try await flushPending()
        try await flushLinksAndSources()
        try await revisions.finish()
    }

    func apply(_ change: StoreChange) async throws {
        switch change {
        case .add(let entity): try await add(entity)
        case .update(let entity): try await update(entity)
        case .upsert(let entity, let rule): try await upsert(entity, effective: rule)
        case .delete(let kind, let id, let date, let rule): try await delete(kind, id: id, at: date ?? now, effective: rule)
        case .recordSource(let resource): try await record(resource)
        case .recordSourceIfChanged(let resource, let entities):
            if summary.wroteVersion(ofAny: entities) { try await record(resource) }
        case .link(let link):
            pendingLinks.append(link)
            summary.linksWritten += 1
        case .appendVersion(let outcome): try await appendKeepingUUID(outcome)
        case .admitKnowledge(let push): try await admitKnowledge(push)
        case .mergeKnowledge(let patientID, let clocks): try await mergeKnowledge(patientID: patientID, clocks: clocks)
        case .endRevision: try await revisions.endRevision()
        default:
            try await flushPending()
            guard try await PostgresStagingChanges.apply(change, at: now, on: connection, logger: logger, summary: &summary) else {
                throw PostgresStoreError.unavailable(feature: "the batch change \(Self.name(of: change))")
            }
        }
    }

    /// Whether `change` is the entity writer's (else the staging changes').
    static func isEntityChange(_ change: StoreChange) -> Bool {
        switch change {
        case .add, .update, .upsert, .delete, .recordSource, .recordSourceIfChanged, .link, .appendVersion, .admitKnowledge, .mergeKnowledge,
             .endRevision: true
        default: false
        }
    }

    /// The name of a change's case, for an error (no content).
    static func name(of change: StoreChange) -> String {
        String(describing: change).prefix { $0 != "(" }.description
    }

    /// Keeps `resource` at the end of the batch, unless the same content is kept (counted then).
    func record(_ resource: SourceResource) async throws {
        pendingSources.append(resource)
    }

    /// Writes the batch's links and raw resources, each once, in batch order, and counts the resources kept
    /// and those whose content was kept already.
    func flushLinksAndSources() async throws {
        try await Self.link(pendingLinks, on: connection, logger: logger)
        pendingLinks = []
        for start in stride(from: 0, to: pendingSources.count, by: Self.rowsPerStatement) {
            let chunk = pendingSources[start..<min(start + Self.rowsPerStatement, pendingSources.count)]
            let kept = try await connection.values("""
                INSERT INTO source_resource
                    (source_system, resource_type, resource_id, version_id, last_updated, content_hash, format, body, received_date, activities_with_detail)
                SELECT source_system, resource_type, resource_id, version_id, last_updated, content_hash, format, body, received_date, activities_with_detail
                FROM unnest(\(chunk.map(\.sourceSystem))::text[], \(chunk.map(\.resourceType))::text[], \(chunk.map(\.resourceID))::text[],
                            \(NullableArray(chunk.map(\.versionID)))::text[], \(NullableArray(chunk.map(\.lastUpdated)))::text[], \(chunk.map(\.contentHash))::text[],
                            \(chunk.map(\.format))::text[], \(chunk.map(\.body.byteBuffer))::bytea[], \(chunk.map(\.receivedDate.timeIntervalSince1970))::float8[],
                            \(NullableArray(chunk.map { $0.activitiesWithDetail.map { $0.joined(separator: "\n") } }))::text[])
                     WITH ORDINALITY AS t(source_system, resource_type, resource_id, version_id, last_updated, content_hash, format, body, received_date,
                                          activities_with_detail, position)
                ORDER BY position
                ON CONFLICT (resource_type, resource_id, source_system, content_hash) DO NOTHING
                RETURNING row_id
                """, as: Int64.self, logger: logger).count
            summary.sourcesRecorded += kept
            summary.sourcesUnchanged += chunk.count - kept
        }
        pendingSources = []
    }

    /// Files outcome `outcomeID` as having several tips, or as having one.
    func setConflict(outcomeID: String, _ several: Bool) async throws {
        if several {
            try await connection.finish(
                "INSERT INTO outcome_conflict (outcome_id, since) VALUES (\(outcomeID), \(now.timeIntervalSince1970)) ON CONFLICT (outcome_id) DO NOTHING",
                logger: logger)
        } else {
            try await connection.finish("DELETE FROM outcome_conflict WHERE outcome_id = \(outcomeID)", logger: logger)
        }
    }
}
