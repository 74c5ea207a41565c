@testable import AppClient
@testable import AppServer
import CareModel
import Foundation
import Store
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
    private func setUp(busyTimeout: String) async throws -> Setup {
        let made = try generatedStore("push-beside-writer")
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

    func testAPushPastTheBusyTimeoutOfAWriteJobInAnotherProcessIs503WithRetryAfterAndStoresNothing() async throws {
        let setup = try await setUp(busyTimeout: "1")
        defer { setup.server.stop() }
        let release = setup.store + ".release"
        let holder = try StoreLockHolder.start(store: setup.store, release: release, locks: StoreLockHolder.leaseAndGate)
        defer { holder.terminate() }
        let before = try SQLiteStore(path: setup.store, mode: .readOnly).serverClock().clock

        let refused = try await push(setup)
        XCTAssertEqual(refused.status, 503, refused.body)
        XCTAssertEqual(refused.retryAfter, "\(SyncRoutes.storeBusyRetryAfterSeconds)")
        XCTAssertTrue(refused.body.contains(#""error":"busy""#), refused.body)
        XCTAssertFalse(refused.body.contains(setup.store), "the store's path is the server's, not the app's")
        XCTAssertTrue(holder.isRunning, "the push was refused before the other process let go")
        XCTAssertEqual(try SQLiteStore(path: setup.store, mode: .readOnly).serverClock().clock, before, "a refused push stored something")

        // Once the other process lets go, the same push is stored.
        FileManager.default.createFile(atPath: release, contents: nil)
        holder.waitUntilExit()
        let stored = try await push(setup)
        XCTAssertEqual(stored.status, 200, stored.body)
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
