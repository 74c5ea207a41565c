import Foundation
import Logging
import PostgresNIO
import Synchronization

/// That a worker is alive, shown by a lock its process holds on a session of its own
/// (``PostgresLockSession``): a shared advisory lock on the pair (``classKey``, `hashtext(worker)`), taken
/// before the worker's first claim and held until its store closes. The sync job's claims (outbox groups,
/// pull partitions) are marked `claimed_presence`: such a claim lasts while its lease runs *and* its
/// worker's lock is held, so the claims of a worker whose process died are free at once (its session ends
/// with it: at once when the process is killed, within about 25 s when its machine vanishes), not only when
/// their lease lapses. A claim without the mark (``PostgresOutbox/claim(worker:limit:leaseFor:now:)``'s)
/// lasts its lease.
///
/// The lock is shared, so two live workers whose names hash alike never wait for each other; a dead
/// worker whose name hashes like a live one's keeps its claims until their lease lapses, as without the
/// mark.
final class PostgresWorkerPresence: Sendable {
    /// The first key of every presence lock ("CGWP" in ASCII).
    static let classKey: Int32 = 0x4347_5750

    private let session: PostgresLockSession
    private let database: PostgresDatabase
    /// The workers announced, each with the session connection (its generation) that holds its lock.
    private let announced = Mutex<[String: Int]>([:])
    private static let logger = Logger(label: "caregate.postgres.presence")

    init(database: PostgresDatabase) {
        self.database = database
        session = PostgresLockSession(location: database.connectingLocation)
    }

    deinit {
        let session = session
        Task { await session.close() }
    }

    /// Takes `worker`'s presence lock unless this session holds it already (again after the session was
    /// lost and opened anew).
    func announce(_ worker: String) throws {
        let session = session
        let held = announced.withLock { $0[worker] }
        let generation: Int = try database.run { _ in
            let connection = try await session.open()
            let generation = await session.generation
            if held != generation {
                try await connection.finish("SELECT pg_advisory_lock_shared(\(Self.classKey), hashtext(\(worker)))", logger: Self.logger)
            }
            return generation
        }
        announced.withLock { $0[worker] = generation }
    }

    /// Ends the session, and with it every presence it shows: unlocked first, so that the claims are
    /// free when this returns (a session's end alone frees its locks a moment later, when the server has
    /// read it).
    func close() {
        let session = session
        let announcedAny = !announced.withLock { $0.isEmpty }
        _ = try? database.run { _ in
            if announcedAny, let connection = try? await session.open() {
                try? await connection.finish("SELECT pg_advisory_unlock_all()", logger: Self.logger)
            }
            await session.close()
            return true
        }
        announced.withLock { $0.removeAll() }
    }

    /// SQL: the `objid` of every presence lock held in this database (a CTE body).
    static let presentSQL = """
        SELECT l.objid FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.classid = \(UInt32(bitPattern: classKey))::oid AND l.objsubid = 2 AND l.granted
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        """

    /// SQL: whether the claim of row `alias` is live at `now` (an expression naming the CTE `present`
    /// of ``presentSQL``): its lease runs, and its worker is present when the claim asks for it.
    static func liveSQL(_ alias: String, now: String) -> String {
        "(\(alias).claimed_until > \(now) AND (NOT \(alias).claimed_presence OR hashtext(\(alias).claimed_by)::oid IN (SELECT objid FROM present)))"
    }
}
