import CareModel
import Foundation
import Logging
import PostgresNIO
import Store

// OWNER: helper h-pgwrites.
/// The write side of the store protocol: the writer lease and the append gate (``PostgresWriterLease``:
/// PostgreSQL advisory locks on sessions of their own, so that write jobs of any number of processes on any
/// number of machines end as some serial order of them), and ``apply(_:)``: one batch in one transaction,
/// with the SQLite store's semantics (``PostgresBatchWriter``).
extension PostgreSQLStore: Store {
    /// Runs `body` holding the writer lease and the append gate (re-entrant for the thread that holds them).
    public func withWriterLease<T>(_ job: String, _ body: () throws -> T) throws -> T {
        try lease.withWriterLease(job, body)
    }

    /// Runs `body`, a job that only appends outcome versions to tasks that exist, holding the append gate.
    public func withAppendLease<T>(_ job: String, _ body: () throws -> T) throws -> T {
        try lease.withAppendLease(job, body)
    }

    /// Whether an append (of this process or another) waits for the gate the lease's holder keeps.
    public func appendsAreWaiting() -> Bool {
        lease.appendsAreWaiting()
    }

    /// At a safe point of the lease's holder: lets the waiting appends run, then takes the gate back.
    public func yieldToAppends() throws {
        try lease.yieldToAppends()
    }

    /// The transaction-scoped advisory lock every batch takes first ("CGBATCH" in ASCII).
    public static let batchKey: Int64 = 0x0043_4742_4154_4348

    /// Applies every change of `batch` in one transaction (READ COMMITTED, as the server clock needs); on
    /// any error the whole batch is rolled back and the error (a ``StoreError`` for anything the input
    /// caused) is rethrown.
    ///
    /// Batches run one at a time, as SQLite's single writer runs them: each transaction first takes the
    /// advisory lock ``batchKey`` (released at its end), so that a batch reads the tips it appends after
    /// with no other batch in between, even one of a process that holds no lease (two updates of one tip
    /// would otherwise both follow it: a fork). A batch that waits longer than the busy timeout for it is
    /// refused with ``StoreError/busy(path:waitedSeconds:)``.
    ///
    /// A batch of a job holding the writer lease first checks, in its transaction, that the lease's
    /// session still holds it (``PostgresWriterLease/fence()``): a job whose lock session was lost, and
    /// whose lease another worker may have taken, is refused before it writes anything it planned under
    /// the lease it no longer has.
    @discardableResult
    public func apply(_ batch: StoreBatch) throws -> BatchSummary {
        let now = batch.date ?? Date()
        let changes = batch.changes
        let logger = Self.logger
        let wait = max(1, Int((lease.busyTimeout * 1000).rounded(.up)))
        let url = database.location.redacted
        let busyTimeout = lease.busyTimeout
        let fence = lease.fence()
        return try database.run { client in
            try await client.withTransaction(logger: logger) { connection in
                try await connection.finish("SELECT set_config('lock_timeout', \(String(wait) + "ms"), true)", logger: logger)
                do {
                    try await connection.finish("SELECT pg_advisory_xact_lock(\(Self.batchKey))", logger: logger)
                } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55P03" {
                    throw StoreError.busy(path: url, waitedSeconds: busyTimeout)
                }
                if let fence {
                    // The fencing check rides on the statement that resets the lock timeout: no round trip more.
                    guard try await PostgresWriterLease.resetLockTimeoutHoldingLease(fence, on: connection, logger: logger) else {
                        throw PostgresLockSession.Lost()
                    }
                } else {
                    try await connection.finish("SELECT set_config('lock_timeout', '0', true)", logger: logger)
                }
                let writer = PostgresBatchWriter(connection: connection, logger: logger, now: now)
                try await writer.apply(changes)
                return writer.summary
            }
        }
    }
}
