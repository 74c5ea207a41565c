import Foundation
import Logging
import PostgresNIO
import Store

/// The writer lease and the append gate of a PostgreSQL store (``Store/withWriterLease(_:_:)``,
/// ``Store/withAppendLease(_:_:)``): the SQLite store's guarantees (Docs/concurrency.md) for workers on
/// several machines, as PostgreSQL session-level advisory locks.
///
/// - The lease is `pg_advisory_lock(`` leaseKey ``)`, the gate `pg_advisory_lock(`` gateKey ``)`. A write
///   job holds both from its first read to its last write; an append (an app's push) holds the gate only.
/// - An append says it waits by holding `pg_advisory_lock_shared(`` appendsWaitingKey ``)` while it waits for
///   the gate; the lease's holder probes it without blocking (`pg_try_advisory_lock`, released in the same
///   statement) at its safe points (``appendsAreWaiting()``), and there opens the gate (``yieldToAppends()``):
///   the appends run whole between two of its transactions, then it takes the gate back.
/// - Locks are taken in one order, lease, then appends-waiting, then gate, and the holder of the gate never
///   waits for appends-waiting (it only probes it), so workers cannot deadlock one another.
/// - Each lock is held on a session of this object's own (``PostgresLockSession``: the lease's, and the
///   appends'), never on a pooled connection, and is released by the server when that session ends: at
///   once when the holder's process dies, within about 25 s when its machine vanishes (TCP keepalives).
/// - Within a process, a recursive lock serializes write jobs (a thread holding the lease takes it again:
///   nested jobs) and a condition serializes the gate, as the SQLite lease does.
/// - A waiter gives up after the busy timeout with ``StoreError/writerBusy(path:holder:waitedSeconds:)``
///   naming the holder: each holder sets its session's `application_name` to its job, process id and host
///   before taking a lock, and a waiter reads it from `pg_locks` and `pg_stat_activity` (no patient data).
///
/// Waits are PostgreSQL's own lock queue, bounded by `lock_timeout`, so the first to ask is served first.
/// All calls are synchronous and wait on the caller's thread (``PostgresDatabase/run(_:)``).
///
/// ## Topics
/// - ``init(location:database:environment:busyTimeout:warn:)``, ``close()``
/// - ``withWriterLease(_:_:)``, ``withAppendLease(_:_:)``, ``appendsAreWaiting()``, ``yieldToAppends()``
/// - ``leaseKey``, ``gateKey``, ``appendsWaitingKey``
// Unchecked: `depth`, `holdsGate` and `leaseJob` are touched only by the thread holding `threads`, a
// recursive lock held for the whole job (reentrant, and waited for with a deadline: neither of which Mutex
// does); `gateTaken` and `appendsWaitingHere` only while `gate` is locked (threads sleep on it).
public final class PostgresWriterLease: @unchecked Sendable {
    /// The writer lease's advisory lock ("CGWRITER" in ASCII).
    public static let leaseKey: Int64 = 0x4347_5752_4954_4552
    /// The append gate's advisory lock ("CGAPPEND").
    public static let gateKey: Int64 = 0x4347_4150_5045_4E44
    /// Held shared by each append waiting for the gate ("CGAPWAIT").
    public static let appendsWaitingKey: Int64 = 0x4347_4150_5741_4954
    /// The most time one opening of the gate waits for appends to come in, one after another.
    static let longestOpening: TimeInterval = 2
    /// The least time the holder waits to take the gate back, whatever the busy timeout: the append under
    /// way is one transaction of a bounded push, and giving up would stop the job part-way.
    static let shortestRetake: TimeInterval = 120

    /// How long a waiter waits before it gives up, in seconds (0: it only tries); a wait on the server is
    /// also cut 1 s short of the bound of one call to the database (``PostgresDatabase/timeout``).
    public let busyTimeout: TimeInterval
    private let database: PostgresDatabase
    private let leaseSession: PostgresLockSession
    private let appendSession: PostgresLockSession
    private let logger: Logger
    private let threads = NSRecursiveLock()
    /// Guarded by `threads`: nesting of the jobs holding the lease, whether they hold the gate, and the job.
    private var depth = 0
    private var holdsGate = false
    private var leaseJob = ""
    /// Guarded by `threads`: the lease session's connection that holds the lease (``PostgresLockSession/generation``).
    private var leaseGeneration: Int?
    /// The server process of the lease's session while a job holds the lease (``fence()``).
    private var leasePID: Int32?
    private let gate = NSCondition()
    /// Guarded by `gate`: whether a thread of this process holds or takes the gate; appends waiting here.
    private var gateTaken = false
    private var appendsWaitingHere = 0

    /// The locks of the store at `location` (its password from the URL, `PGPASSWORD` or the password file,
    /// as ``PostgresDatabase`` finds it), waiting through `database`. No session opens before first use.
    public init(
        location: PostgresLocation, database: PostgresDatabase, environment: [String: String] = ProcessInfo.processInfo.environment,
        busyTimeout: TimeInterval = 30, warn: (String) -> Void = { _ in }
    ) {
        let located = location.withPassword(environment: environment, warn: warn)
        leaseSession = PostgresLockSession(location: located)
        appendSession = PostgresLockSession(location: located)
        self.database = database
        self.busyTimeout = max(0, busyTimeout)
        var logger = Logger(label: "caregate.postgres.locks")
        logger.logLevel = .warning
        self.logger = logger
    }

    deinit {
        let sessions = [leaseSession, appendSession]
        Task { for session in sessions { await session.close() } }
    }

    /// Ends both sessions, and with them any lock they hold.
    public func close() {
        let sessions = [leaseSession, appendSession]
        _ = try? database.run { _ in
            for session in sessions { await session.close() }
            return true
        }
    }

    /// Runs `body` holding the lease and the gate, waiting at most the busy timeout for them; a thread that
    /// holds the lease runs `body` at once (nested jobs). `job` names the holder to waiters.
    public func withWriterLease<T>(_ job: String, _ body: () throws -> T) throws -> T {
        let deadline = Date().addingTimeInterval(busyTimeout)
        guard threads.lock(before: deadline) else { throw busy("another job of this process") }
        defer { threads.unlock() }
        if depth == 0 {
            guard try acquire(Self.leaseKey, on: leaseSession, as: job, until: deadline) else {
                throw busy(holder(of: Self.leaseKey) ?? "another process")
            }
            let session = leaseSession
            do {
                leaseGeneration = try database.run { _ in await session.generation }
                leasePID = try run(on: leaseSession, keeping: leaseGeneration) { connection in
                    try await connection.values("SELECT pg_backend_pid()", as: Int32.self, logger: self.logger).first
                }
                try takeGate(on: leaseSession, keeping: leaseGeneration, as: job, until: deadline) {
                    self.busy(self.holder(of: Self.gateKey) ?? "an app's push")
                }
            } catch {
                leaseGeneration = nil
                leasePID = nil
                releaseAll(on: leaseSession)
                throw error
            }
            holdsGate = true
            leaseJob = job
        }
        depth += 1
        defer {
            depth -= 1
            if depth == 0 {
                releaseAll(on: leaseSession)
                if holdsGate { openGateHere() }
                holdsGate = false
                leaseGeneration = nil
                leasePID = nil
            }
        }
        return try body()
    }

    /// The server process (`pg_backend_pid`) of the session holding the lease, when the calling thread's
    /// job holds it; nil otherwise. A batch of that job checks, in its own transaction, that this process
    /// still holds the lease (``PostgreSQLStore/apply(_:)``): a job whose lock session was lost (a network
    /// cut, a server restart) writes nothing more, even between two of its safe points.
    public func fence() -> Int32? {
        guard threads.try() else { return nil }
        defer { threads.unlock() }
        return depth > 0 ? leasePID : nil
    }

    /// Resets the transaction's `lock_timeout` to none and says whether server process `pid` holds the
    /// lease now: asked on `connection`, inside a batch's transaction, so that the answer and the batch's
    /// writes are one step.
    static func resetLockTimeoutHoldingLease(_ pid: Int32, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        try await connection.values("""
            SELECT set_config('lock_timeout', '0', true) = '0' AND EXISTS (
                SELECT 1 FROM pg_locks
                WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND pid = \(pid)
                  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                  AND classid::int8 = \(leaseKey >> 32) AND objid::int8 = \(leaseKey & 0xFFFF_FFFF))
            """, as: Bool.self, logger: logger).first ?? false
    }

    /// Runs `body`, a job that only appends outcome versions to tasks that exist, holding the gate: after
    /// the lease's holder ends or lets appends in at a safe point, before any other write job starts. A
    /// thread holding the lease runs `body` at once.
    public func withAppendLease<T>(_ job: String, _ body: () throws -> T) throws -> T {
        if threads.try() {
            defer { threads.unlock() }
            if depth > 0 { return try body() }
        }
        let deadline = Date().addingTimeInterval(busyTimeout)
        gate.withLock { appendsWaitingHere += 1 }
        // Holders in other processes see the shared lock; an append they cannot see (it failed) waits for
        // the job's end instead. Sessions count shared locks: one per append waiting here.
        let advertised = (try? run(on: appendSession) { connection in
            try await connection.finish("SELECT pg_advisory_lock_shared(\(Self.appendsWaitingKey))", logger: self.logger)
            return true
        }) ?? false
        var waiting = true
        func stopWaiting() {
            guard waiting else { return }
            waiting = false
            gate.withLock { appendsWaitingHere -= 1 }
            if advertised {
                _ = try? run(on: appendSession) { connection in
                    try await connection.finish("SELECT pg_advisory_unlock_shared(\(Self.appendsWaitingKey))", logger: self.logger)
                    return true
                }
            }
        }
        defer { stopWaiting() }
        try takeGate(on: appendSession, keeping: nil, as: job, until: deadline) {
            self.busy(self.holder(of: Self.leaseKey) ?? self.holder(of: Self.gateKey) ?? "another app's push")
        }
        stopWaiting()
        defer {
            let released = try? run(on: appendSession) { connection in
                try await connection.finish("SELECT pg_advisory_unlock(\(Self.gateKey))", logger: self.logger)
                return true
            }
            if released == nil { closeAfterFailure(appendSession) }
            openGateHere()
        }
        return try body()
    }

    /// Whether an append, in this process or another, waits for the gate: one round trip to the server
    /// (on the lease's session for its holder), none when one waits in this process.
    public func appendsAreWaiting() -> Bool {
        if gate.withLock({ appendsWaitingHere > 0 }) { return true }
        let key = Self.appendsWaitingKey
        let logger = logger
        // Taken and given back in one statement: a probe never keeps the lock, even on a pooled connection.
        let probe: @Sendable (PostgresConnection) async throws -> Bool = { connection in
            try await connection.values(
                "SELECT CASE WHEN pg_try_advisory_lock(\(key)) THEN NOT pg_advisory_unlock(\(key)) ELSE true END", as: Bool.self, logger: logger
            ).first ?? false
        }
        if threads.try() {
            defer { threads.unlock() }
            // A failure says yes: the holder's yieldToAppends then finds out what failed (a lost lease).
            if depth > 0 { return (try? run(on: leaseSession, keeping: leaseGeneration, probe)) ?? true }
        }
        return (try? database.run { client in try await client.withConnection { try await probe($0) } }) ?? false
    }

    /// Called by the lease's holder at a safe point: when appends wait, opens the gate until none waits (at
    /// most ``longestOpening``), then takes it back, waiting for the append under way (at least
    /// ``shortestRetake``). Returns whether any waited. Only the outermost job lets appends in: a nested job
    /// cannot know its caller's plans. When it throws, the job no longer holds the gate.
    @discardableResult
    public func yieldToAppends() throws -> Bool {
        threads.lock()
        defer { threads.unlock() }
        guard depth == 1, holdsGate, appendsAreWaiting() else { return false }
        holdsGate = false
        do {
            _ = try run(on: leaseSession, keeping: leaseGeneration) { connection in
                try await connection.finish("SELECT pg_advisory_unlock(\(Self.gateKey))", logger: self.logger)
                return true
            }
        } catch {
            openGateHere()
            throw error
        }
        openGateHere()
        let end = Date().addingTimeInterval(Self.longestOpening)
        repeat {
            usleep(5_000)
        } while appendsAreWaiting() && Date() < end
        let retake = max(busyTimeout, Self.shortestRetake)
        try takeGate(on: leaseSession, keeping: leaseGeneration, as: leaseJob, until: Date().addingTimeInterval(retake)) {
            StoreError.writerBusy(path: self.database.location.redacted, holder: self.holder(of: Self.gateKey) ?? "an app's push", waitedSeconds: retake)
        }
        holdsGate = true
        return true
    }

    // MARK: - Locks

    /// Takes the gate for this process, then on `session`, waiting until `deadline`; `busy` says who kept it.
    private func takeGate(on session: PostgresLockSession, keeping generation: Int?, as job: String, until deadline: Date, busy: () -> StoreError) throws {
        gate.lock()
        while gateTaken {
            guard gate.wait(until: deadline) else {
                gate.unlock()
                throw busy()
            }
        }
        gateTaken = true
        gate.unlock()
        do {
            guard try acquire(Self.gateKey, on: session, keeping: generation, as: job, until: deadline) else { throw busy() }
        } catch {
            openGateHere()
            throw error
        }
    }

    /// Gives the gate back to this process's other threads (the caller released it on the server).
    private func openGateHere() {
        gate.withLock {
            gateTaken = false
            gate.broadcast()
        }
    }

    /// Takes advisory lock `key` on `session` as `job`, waiting in the server's queue until `deadline`
    /// (`lock_timeout`); false when another session still holds it then.
    private func acquire(_ key: Int64, on session: PostgresLockSession, keeping generation: Int? = nil, as job: String, until deadline: Date) throws -> Bool {
        let name = Self.applicationName(job)
        // Inside the bound of a call to the database, so that a wait never outlives its caller's answer.
        let wait = min(deadline.timeIntervalSinceNow, Double(database.timeout.components.seconds) - 1)
        let logger = logger
        return try run(on: session, keeping: generation) { connection in
            guard wait > 0 else {
                try await connection.finish("SELECT set_config('application_name', \(name), false)", logger: logger)
                return try await connection.values("SELECT pg_try_advisory_lock(\(key))", as: Bool.self, logger: logger).first ?? false
            }
            let timeout = "\(max(1, Int((wait * 1000).rounded(.up))))ms"
            try await connection.finish("SELECT set_config('application_name', \(name), false), set_config('lock_timeout', \(timeout), false)", logger: logger)
            do {
                try await connection.finish("SELECT pg_advisory_lock(\(key))", logger: logger)
                return true
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55P03" {
                return false  // lock_not_available: the wait reached lock_timeout.
            }
        }
    }

    /// Releases every lock of the lease's session; a session that cannot say so is closed, which does.
    private func releaseAll(on session: PostgresLockSession) {
        let released = try? run(on: session, keeping: leaseGeneration) { connection in
            try await connection.finish("SELECT pg_advisory_unlock_all()", logger: self.logger)
            return true
        }
        if released == nil { closeAfterFailure(session) }
    }

    private func closeAfterFailure(_ session: PostgresLockSession) {
        _ = try? database.run { _ in
            await session.close()
            return true
        }
    }

    /// Runs `body` on `session` and waits for it; a failure of the connection itself (not an error the
    /// server answered) closes the session, so that nothing stays held on a connection in doubt.
    /// With `generation`, only on the connection of that generation (one whose locks the caller holds).
    private func run<T: Sendable>(
        on session: PostgresLockSession, keeping generation: Int? = nil, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) throws -> T {
        try database.run { _ in
            let connection = try await session.open(keeping: generation)
            do {
                return try await body(connection)
            } catch let error as PSQLError where error.serverInfo != nil {
                throw error
            } catch {
                await session.close()
                throw error
            }
        }
    }

    // MARK: - Who holds a lock

    /// The `application_name` of the session holding advisory lock `key` in this database, if any.
    private func holder(of key: Int64) -> String? {
        let logger = logger
        let found = try? database.run { client -> String in
            let rows = try await client.query(
                """
                SELECT coalesce(a.application_name, '') FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                  AND l.classid::int8 = \(key >> 32) AND l.objid::int8 = \(key & 0xFFFF_FFFF)
                LIMIT 1
                """, logger: logger)
            for try await name in rows.decode(String.self) { return name }
            return ""
        }
        return found.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// What a holder's session is called while it holds a lock: its job, process id and host, in
    /// printable ASCII and PostgreSQL's 63 bytes (no patient data: jobs are named by CareGate).
    static func applicationName(_ job: String) -> String {
        String((printable(job).prefix(max(0, 63 - processSuffix.utf8.count)) + processSuffix).prefix(63))
    }

    /// " (pid N on host)": who this process is, found once.
    private static let processSuffix = " (pid \(getpid()) on \(printable(ProcessInfo.processInfo.hostName).prefix(24)))"

    private static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }))
    }

    private func busy(_ holder: String) -> StoreError {
        .writerBusy(path: database.location.redacted, holder: holder, waitedSeconds: busyTimeout)
    }
}
