@testable import AppClient
@testable import AppServer
import CareModel
import Foundation
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// An app's push while another process writes the store (issue 49: in each sitting of
/// `Scripts/bench-app-api.sh` one push was a 500 `internal`): the sync's import held the writer lease
/// past the server's busy timeout, and the lease's `writerBusy`, thrown outside the push's own refusals,
/// became a 500. A push waits for a write job that ends within the busy timeout; past it, it is a 503
/// `busy` with `Retry-After`, which an app acts on, and stores nothing. The other process here is a real
/// one holding the store's locks as a write job between two safe points holds them.
final class PushBesideWriterTests: XCTestCase {
    private struct Setup {
        let store: String
        let server: AppServerProcess
        let client: AppClient
        let knowledge: KnowledgeVector
    }

    /// A store of two patients served with `--busy-timeout busyTimeout`, and patient-1's device that has
    /// pulled everything.
    private func setUp(busyTimeout: String, on tested: TestStore? = nil) async throws -> Setup {
        let made = try tested.map { try generatedStore("push-beside-writer", on: $0) } ?? generatedStore("push-beside-writer")
        let (store, key) = (made.store, made.key)
        let server = try AppServerProcess.start(store: store, key: key, extra: ["--busy-timeout", busyTimeout])
        let client = AppClient(base: server.base, token: made.token)
        var knowledge = KnowledgeVector([UUID(): 1])
        for record in try await client.pull(knowledge: knowledge) { knowledge.merge(with: record.knowledgeVector) }
        return Setup(store: store, server: server, client: client, knowledge: knowledge)
    }

    /// An empty push of the up-to-date device: its status, `Retry-After` and body.
    private func push(_ setup: Setup) async throws -> (status: Int, retryAfter: String?, body: String) {
        let body = try CareKitJSON.makeEncoder().encode(PushRequest(deviceRevisions: [], deviceKnowledge: setup.knowledge))
        let (data, response) = try await setup.client.send(path: "carekit/v1/revisions", method: "POST", body: body)
        return (response.statusCode, response.value(forHTTPHeaderField: "Retry-After"), String(decoding: data, as: UTF8.self))
    }

    /// On a SQLite file (the lease's lock-file bytes held by a Python process) and on PostgreSQL (its
    /// advisory locks held by `psql` in a session of its own).
    func testAPushPastTheBusyTimeoutOfAWriteJobInAnotherProcessIs503WithRetryAfterAndStoresNothing() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            let setup = try await setUp(busyTimeout: "1", on: tested)
            defer { setup.server.stop() }
            let holder = try OtherWriter(holding: tested, at: setup.store)
            defer { holder.end() }
            let before = try tested.reopen().serverClock().clock

            let refused = try await push(setup)
            XCTAssertEqual(refused.status, 503, "\(tested.kind): \(refused.body)")
            XCTAssertEqual(refused.retryAfter, "\(SyncRoutes.storeBusyRetryAfterSeconds)")
            XCTAssertTrue(refused.body.contains(#""error":"busy""#), refused.body)
            XCTAssertFalse(refused.body.contains(setup.store), "the store's path is the server's, not the app's")
            XCTAssertTrue(holder.isRunning, "the push was refused before the other process let go")
            XCTAssertEqual(try tested.reopen().serverClock().clock, before, "\(tested.kind): a refused push stored something")

            // Once the other process lets go, the same push is stored.
            holder.release()
            let stored = try await push(setup)
            XCTAssertEqual(stored.status, 200, "\(tested.kind): \(stored.body)")
        }
    }

    func testAPushPastTheBusyTimeoutOfSQLitesWriteLockHeldByAnotherProgramIs503WithRetryAfter() async throws {
        let setup = try await setUp(busyTimeout: "0")
        defer { setup.server.stop() }
        let release = setup.store + ".release"
        // Not CareGate (outside the writer lease): SQLite's write lock, which the push meets in its write.
        let holder = try StoreLockHolder.start(store: setup.store, release: release, locks: """
            c = sqlite3.connect(store, isolation_level=None)
            c.execute('BEGIN IMMEDIATE')
            """)
        defer { holder.terminate() }

        let refused = try await push(setup)
        XCTAssertEqual(refused.status, 503, refused.body)
        XCTAssertEqual(refused.retryAfter, "\(SyncRoutes.storeBusyRetryAfterSeconds)")
        XCTAssertTrue(refused.body.contains(#""error":"busy""#), refused.body)
        XCTAssertTrue(holder.isRunning)

        FileManager.default.createFile(atPath: release, contents: nil)
        holder.waitUntilExit()
        let stored = try await push(setup)
        XCTAssertEqual(stored.status, 200, stored.body)
    }

    func testAPushWaitsForAWriteJobInAnotherProcessThatEndsWithinTheBusyTimeout() async throws {
        let setup = try await setUp(busyTimeout: "30")
        defer { setup.server.stop() }
        let release = setup.store + ".release"
        // The holder lets go once a push waits for it: the server's append holds the "appends waiting"
        // byte (2) shared while it waits, which the holder then cannot take.
        let holder = try StoreLockHolder.start(store: setup.store, release: release, locks: StoreLockHolder.leaseAndGate + """

            probe = os.open(store + '-lock', os.O_RDWR)
            def waiting():
                try:
                    fcntl.lockf(probe, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 2)
                except OSError:
                    return True
                fcntl.lockf(probe, fcntl.LOCK_UN, 1, 2)
                return False
            import threading
            def let_go():
                while not waiting(): time.sleep(0.02)
                os.close(lock)
                open(release, 'w').close()
            threading.Thread(target=let_go, daemon=True).start()
            """)
        defer { holder.terminate() }

        let answer = try await push(setup)
        XCTAssertEqual(answer.status, 200, answer.body)
        holder.waitUntilExit()
        XCTAssertEqual(holder.terminationStatus, 0)
    }
}

/// Another process holding the writer lease and the append gate of the store under test, as a write job
/// holds them between two safe points: ``StoreLockHolder`` on a SQLite file, ``PostgresLockHolder`` on a
/// PostgreSQL database.
private final class OtherWriter {
    private let sqlite: (process: Process, releaseFile: String)?
    private let postgres: PostgresLockHolder?

    init(holding tested: TestStore, at store: String) throws {
        switch tested.kind {
        case .sqlite:
            let releaseFile = store + ".release"
            sqlite = (try StoreLockHolder.start(store: store, release: releaseFile, locks: StoreLockHolder.leaseAndGate), releaseFile)
            postgres = nil
        case .postgresql:
            let server = try XCTUnwrap(try SharedPostgres.server())
            let database = try XCTUnwrap(URLComponents(string: store)?.path.dropFirst()).description
            postgres = try PostgresLockHolder(server: server, database: database)
            sqlite = nil
        }
    }

    var isRunning: Bool { sqlite?.process.isRunning ?? postgres?.isRunning ?? false }

    /// Lets go of the locks and waits until the other process has.
    func release() {
        if let sqlite {
            FileManager.default.createFile(atPath: sqlite.releaseFile, contents: nil)
            sqlite.process.waitUntilExit()
        }
        postgres?.release()
    }

    /// Ends the other process, if it still runs.
    func end() {
        if let sqlite, sqlite.process.isRunning { sqlite.process.terminate() }
        if let postgres, postgres.isRunning { postgres.release() }
    }
}
