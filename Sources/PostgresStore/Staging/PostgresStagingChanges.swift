import Foundation
import Logging
import PostgresNIO
import Store

// OWNER: helper h-pgstaging.
/// The changes of a batch that are not about care entities (checkpoints, export progress, report starts,
/// consent decisions, the outbox, dead letters), applied inside the batch's transaction with the SQLite
/// store's semantics (its `BatchWriter.apply` and `SQLiteStore.apply`): the same rows, the same
/// ``BatchSummary`` counts and ids, the same refusals.
///
/// The entity writer (`PostgreSQLStore.apply`) hands each change, or the changes from a position on,
/// to ``apply(_:at:on:logger:summary:)-(ArraySlice<StoreChange>,_,_,_,_)``; a run of changes of one kind
/// is written in a few statements, as the SQLite store writes a run of outbox steps:
/// - consecutive enqueues: one SELECT of those queued already and one multi-row INSERT of the others, in
///   batch order, so that entry ids grow in the order the batch gave (a later version is sent later);
/// - consecutive outbox transitions taking the same step: one UPDATE per ``idsPerStatement`` ids, under a
///   savepoint; when any entry cannot take the step the UPDATEs are undone and the entries taken one by
///   one, so that the error is the one the first offender meets (as SQLite).
enum PostgresStagingChanges {
    /// Ids per statement of a run of outbox steps, entries per INSERT of a run of enqueues.
    static let idsPerStatement = 5_000

    /// Applies the staging changes at the start of `changes`, in order, on `connection` (in the batch's
    /// transaction), and counts them in `summary`; returns how many it applied (0 when the first change
    /// is not one of these: the entity writer's). `now` is the batch's date (``StoreBatch/date``, or the
    /// time `apply` runs): what a settlement of a dead letter is dated.
    static func apply(
        _ changes: ArraySlice<StoreChange>, at now: Date, on connection: PostgresConnection, logger: Logger, summary: inout BatchSummary
    ) async throws -> Int {
        guard let first = changes.first else { return 0 }
        switch first {
        case .enqueue:
            var entries: [OutboxEntry] = []
            for change in changes {
                guard case .enqueue(let entry) = change else { break }
                entries.append(entry)
            }
            summary.outboxEntryIDs += try await enqueue(entries, on: connection, logger: logger)
            return entries.count
        case .transition(_, let step):
            var ids: [Int64] = []
            for change in changes {
                guard case .transition(let id, let next) = change, next == step else { break }
                ids.append(id)
            }
            try await transition(ids, step, on: connection, logger: logger)
            summary.outboxTransitions += ids.count
            return ids.count
        default:
            return try await apply(first, at: now, on: connection, logger: logger, summary: &summary) ? 1 : 0
        }
    }

    /// Applies `change` on `connection` (in the batch's transaction, dated `now`) and counts it in
    /// `summary`; false when `change` is not one of these (the entity writer's).
    static func apply(
        _ change: StoreChange, at now: Date, on connection: PostgresConnection, logger: Logger, summary: inout BatchSummary
    ) async throws -> Bool {
        switch change {
        case .setCheckpoint(let checkpoint):
            try await setCheckpoint(checkpoint, on: connection, logger: logger)
            summary.checkpointsSet += 1
        case .recordExportProgress(let progress):
            try await recordExportProgress(progress, on: connection, logger: logger)
        case .recordReportStart(let start):
            try await recordReportStart(start, on: connection, logger: logger)
        case .recordConsent(let decision):
            try await recordConsent(decision, on: connection, logger: logger)
        case .enqueue(let entry):
            summary.outboxEntryIDs += try await enqueue([entry], on: connection, logger: logger)
        case .transition(let id, let step):
            try await transition(id, step, on: connection, logger: logger)
            summary.outboxTransitions += 1
        case .deadLetter(let letter):
            summary.deadLetterIDs.append(try await add(letter, on: connection, logger: logger))
        case .settleDeadLetter(let id, let settlement):
            if try await settleDeadLetter(id, settlement, at: now, on: connection, logger: logger) { summary.deadLettersSettled += 1 }
        case .settleDeadLettersOfOutboxEntry(let id, let settlement):
            summary.deadLettersSettled += try await settleDeadLetters(ofOutboxEntry: id, settlement, at: now, on: connection, logger: logger)
        case .add, .update, .upsert, .delete, .recordSource, .recordSourceIfChanged, .link, .appendVersion, .mergeKnowledge, .admitKnowledge,
             .endRevision:
            return false
        }
        return true
    }

    // MARK: Cursors and records

    /// Moves the pull cursor of `checkpoint`'s server and resource type, as the SQLite store does: the
    /// cursor of a batch written by one process, with no claim of its pull. A worker that shares the pulls
    /// with others moves it under its partition's claim instead
    /// (``PostgresPullPartitions/setCheckpoint(_:holding:worker:on:now:)``, the same row).
    static func setCheckpoint(_ checkpoint: SyncCheckpoint, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.finish("""
            INSERT INTO sync_checkpoint (server, resource_type, cursor, updated_date)
            VALUES (\(checkpoint.server), \(checkpoint.resourceType), \(checkpoint.cursor), \(checkpoint.updatedDate.timeIntervalSince1970))
            ON CONFLICT (server, resource_type) DO UPDATE SET cursor = excluded.cursor, updated_date = excluded.updated_date
            """, logger: logger)
    }

    /// Records the last export committed to `progress.target`, replacing the one recorded before.
    static func recordExportProgress(_ progress: ExportProgress, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.finish("""
            INSERT INTO export_progress (target, export_id, file, committed_date)
            VALUES (\(progress.target), \(progress.exportID), \(progress.file), \(progress.committedDate.timeIntervalSince1970))
            ON CONFLICT (target) DO UPDATE SET export_id = excluded.export_id, file = excluded.file, committed_date = excluded.committed_date
            """, logger: logger)
    }

    /// Records `start` unless one is kept for its frequency: the first run's start stays, whichever of two
    /// runs at once commits second.
    static func recordReportStart(_ start: ReportStart, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.finish("""
            INSERT INTO report_start (frequency, first_day, recorded_date)
            VALUES (\(start.frequency), \(start.firstDay), \(start.recordedDate.timeIntervalSince1970))
            ON CONFLICT (frequency) DO NOTHING
            """, logger: logger)
    }
}
