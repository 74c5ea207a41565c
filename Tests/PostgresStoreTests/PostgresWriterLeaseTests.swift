import Foundation
import PostgresStore
import Store
import Synchronization
import TestSupport
import XCTest

/// The PostgreSQL writer lease and append gate (``PostgresWriterLease``) on a real server: one write job
/// at a time across workers (each a lease object with sessions of its own, as another process has),
/// reentrant for its holder, a waiter told who holds it, an append let in at the holder's safe point and
/// no write job with it, and a lease freed by the server when its holder is killed.
final class PostgresWriterLeaseTests: XCTestCase {
    private var server: PostgresServerProcess!
    private var databases: [PostgresDatabase] = []
    private var leases: [PostgresWriterLease] = []

    override func setUpWithError() throws {
        server = try PostgresServerProcess.start()
    }

    override func tearDown() {
        leases.forEach { $0.close() }
        databases.forEach { $0.close() }
        server?.stop()
    }

    /// A worker: a lease of its own sessions, as each `caregate` process has.
    private func worker(busyTimeout: TimeInterval) throws -> PostgresWriterLease {
        guard case .postgres(let location) = try StoreLocation.parse(server.url) else { throw XCTSkip("not PostgreSQL") }
        let database = try PostgresDatabase(location: location, environment: [:], timeout: .seconds(200))
        let lease = PostgresWriterLease(location: location, database: database, environment: [:], busyTimeout: busyTimeout)
        databases.append(database)
        leases.append(lease)
        return lease
    }

    /// Waits (at most 60 s) until `condition` holds; fails otherwise.
    private func eventually(_ what: String, _ condition: () -> Bool, file: StaticString = #filePath, line: UInt = #line) {
        let end = Date().addingTimeInterval(60)
        while !condition() {
            guard Date() < end else { return XCTFail("never: \(what)", file: file, line: line) }
            usleep(10_000)
        }
    }

    func testOneWriterAtATimeReentrantAndAWaiterIsToldWhoHoldsIt() throws {
        let first = try worker(busyTimeout: 0.5)
        let second = try worker(busyTimeout: 0.5)
        try first.withWriterLease("caregate import") {
            // A nested job of the holder runs at once, and so does an append inside the job.
            XCTAssertEqual(try first.withWriterLease("caregate import inner") { try first.withAppendLease("caregate serve push") { 7 } }, 7)
            XCTAssertThrowsError(try second.withWriterLease("caregate export") {}) { error in
                guard case .writerBusy(let path, let holder, let waited)? = error as? StoreError else { return XCTFail("\(error)") }
                XCTAssertTrue(holder.hasPrefix("caregate import (pid \(getpid()) on "), holder)
                XCTAssertEqual(waited, 0.5)
                XCTAssertTrue(path.hasPrefix("postgres://caregate:***@127.0.0.1:\(self.server.port)/caregate_test"), path)
                XCTAssertFalse("\(error)".contains(self.server.password), "no password in \(error)")
            }
            XCTAssertThrowsError(try second.withAppendLease("caregate serve push") {}) { error in
                guard case .writerBusy(_, let holder, _)? = error as? StoreError else { return XCTFail("\(error)") }
                XCTAssertTrue(holder.hasPrefix("caregate import (pid"), holder)
            }
        }
        XCTAssertEqual(try second.withWriterLease("caregate export") { "ran" }, "ran", "the lease is free once its holder's job ends")
        // With a busy timeout of 0 a waiter only tries.
        let impatient = try worker(busyTimeout: 0)
        XCTAssertEqual(try impatient.withWriterLease("caregate import") { 1 }, 1)
    }

    func testAnAppendRunsAtTheHoldersSafePointAndNoWriteJobWithIt() throws {
        let holder = try worker(busyTimeout: 30)
        // An append of another worker (another process), and of the holder's own process.
        for appender in [try worker(busyTimeout: 30), holder] {
            let writer = try worker(busyTimeout: 30)
            let events = Mutex<[String]>([])
            let appended = DispatchSemaphore(value: 0)
            let written = DispatchSemaphore(value: 0)
            try holder.withWriterLease("caregate import") {
                events.withLock { $0.append("import step 1") }
                Thread.detachNewThread {
                    do { try writer.withWriterLease("caregate export") { events.withLock { $0.append("export") } } } catch { events.withLock { $0.append("\(error)") } }
                    written.signal()
                }
                Thread.detachNewThread {
                    do { try appender.withAppendLease("caregate serve push") { events.withLock { $0.append("push") } } } catch { events.withLock { $0.append("\(error)") } }
                    appended.signal()
                }
                eventually("the holder sees the append waiting") { holder.appendsAreWaiting() }
                XCTAssertEqual(events.withLock { $0 }, ["import step 1"], "nothing runs before the safe point")
                XCTAssertTrue(try holder.yieldToAppends())
                XCTAssertEqual(appended.wait(timeout: .now() + 60), .success, "the append ran")
                XCTAssertFalse(try holder.yieldToAppends(), "none waits any more")
                events.withLock { $0.append("import step 2") }
            }
            XCTAssertEqual(written.wait(timeout: .now() + 60), .success)
            XCTAssertEqual(events.withLock { $0 }, ["import step 1", "push", "import step 2", "export"])
        }
    }

    func testAnAppendWaitsForAWriteJobWithoutSafePointsAndNoAppendMeansNoYield() throws {
        let holder = try worker(busyTimeout: 30)
        let appender = try worker(busyTimeout: 30)
        let events = Mutex<[String]>([])
        let appended = DispatchSemaphore(value: 0)
        try holder.withWriterLease("caregate export") {
            XCTAssertFalse(holder.appendsAreWaiting())
            XCTAssertFalse(try holder.yieldToAppends(), "no append waits: the job goes on at once")
            Thread.detachNewThread {
                _ = try? appender.withAppendLease("caregate serve push") { events.withLock { $0.append("push") } }
                appended.signal()
            }
            eventually("the append waits") { holder.appendsAreWaiting() }
            // A nested job cannot let appends in: it does not know its caller's plans.
            XCTAssertFalse(try holder.withWriterLease("caregate export inner") { try holder.yieldToAppends() })
            events.withLock { $0.append("export") }
        }
        XCTAssertEqual(appended.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(events.withLock { $0 }, ["export", "push"])
    }

    func testManyAppendsOfTwoWorkersRunOnlyAtSafePointsOrAfterTheJob() throws {
        let holder = try worker(busyTimeout: 60)
        let appenders = [try worker(busyTimeout: 60), try worker(busyTimeout: 60)]
        let inStep = Mutex(false)
        let pushes = Mutex(0)
        let problems = Mutex<[String]>([])
        let group = DispatchGroup()
        try holder.withWriterLease("caregate import") {
            for index in 0..<8 {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    do {
                        try appenders[index % 2].withAppendLease("caregate serve push") {
                            if inStep.withLock({ $0 }) { problems.withLock { $0.append("a push ran inside a step of the job") } }
                            pushes.withLock { $0 += 1 }
                        }
                    } catch {
                        problems.withLock { $0.append("\(error)") }
                    }
                }
            }
            eventually("pushes wait") { holder.appendsAreWaiting() }
            for _ in 0..<20 {
                inStep.withLock { $0 = true }
                usleep(2_000)
                inStep.withLock { $0 = false }
                try holder.yieldToAppends()
            }
            XCTAssertGreaterThan(pushes.withLock { $0 }, 0, "pushes ran at the job's safe points")
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        XCTAssertEqual(problems.withLock { $0 }, [])
        XCTAssertEqual(pushes.withLock { $0 }, 8, "every push ran, at a safe point or after the job")
    }

    func testAHolderWhoseLockSessionIsLostIsToldAtItsNextSafePoint() throws {
        let holder = try worker(busyTimeout: 5)
        let other = try worker(busyTimeout: 5)
        try holder.withWriterLease("caregate import") {
            // The server ends the holder's lock session (a network cut, a restart, an administrator).
            XCTAssertEqual(try server.psql("SELECT count(pg_terminate_backend(pid)) FROM (SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' AND granted) AS holders")
                .trimmingCharacters(in: .whitespacesAndNewlines), "1")
            XCTAssertEqual(try other.withWriterLease("caregate export") { "taken" }, "taken", "the lease went with the session")
            XCTAssertThrowsError(try holder.yieldToAppends(), "the holder is not left believing it holds the lease") { error in
                XCTAssertTrue("\(error)".contains("the connection that held the store's writer lease was lost"), "\(error)")
            }
        }
        XCTAssertEqual(try holder.withWriterLease("caregate import") { "again" }, "again", "a new session serves the next job")
    }

    func testAHolderInAnotherProcessIsNamedAndItsLeaseIsFreedWhenItIsKilled() throws {
        // The holder: psql in a process of its own, idle in its session after taking the lease, as a
        // worker is between two statements.
        let psql = try startPSQL(named: "caregate sync (pid 4242 on worker-b)", script: """
            SELECT pg_advisory_lock(\(PostgresWriterLease.leaseKey));
            \\echo locked
            """)
        defer { stop(psql) }
        XCTAssertEqual(psql.locked.wait(timeout: .now() + 60), .success, "psql took the lease")

        let waiter = try worker(busyTimeout: 0.5)
        XCTAssertThrowsError(try waiter.withWriterLease("caregate import") {}) { error in
            guard case .writerBusy(_, let holder, _)? = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertEqual(holder, "caregate sync (pid 4242 on worker-b)", "the holder's name crosses processes")
        }

        kill(psql.process.processIdentifier, SIGKILL)
        let killed = Date()
        // The bound: the kernel closes a killed process's socket and the server ends its session at once;
        // 20 s leaves room for a loaded machine, and is below the keepalives' 25 s.
        let patient = try worker(busyTimeout: 20)
        XCTAssertEqual(try patient.withWriterLease("caregate import") { "taken" }, "taken")
        print("the lease of a SIGKILLed holder was taken \(String(format: "%.3f", Date().timeIntervalSince(killed))) s after the kill")
    }

    func testAHolderKilledWhileItsSessionWaitsForTheGateLosesTheLease() throws {
        // An app's push holds the gate; the holder, in another process, holds the lease and waits for the
        // gate (its session busy in a statement, not reading its socket) when it is killed.
        let pusher = try worker(busyTimeout: 30)
        try pusher.withAppendLease("caregate serve push") {
            let psql = try startPSQL(named: "caregate import (pid 4243 on worker-c)", script: """
                SET client_connection_check_interval = 1000;
                SELECT pg_advisory_lock(\(PostgresWriterLease.leaseKey));
                \\echo locked
                SELECT pg_advisory_lock(\(PostgresWriterLease.gateKey));
                """)
            defer { stop(psql) }
            XCTAssertEqual(psql.locked.wait(timeout: .now() + 60), .success, "psql took the lease")
            eventually("psql waits for the gate") { (try? advisoryLocks(granted: false)) == 1 }

            kill(psql.process.processIdentifier, SIGKILL)
            let killed = Date()
            // The bound: client_connection_check_interval (1 s) on a loaded machine, below the keepalives' 25 s.
            let end = killed.addingTimeInterval(20)
            while (try advisoryLocks(granted: true)) > 1, Date() < end { usleep(10_000) }
            XCTAssertEqual(try advisoryLocks(granted: true), 1, "only the push's gate is left")
            print("the lease of a holder SIGKILLed while waiting for the gate was freed \(String(format: "%.3f", Date().timeIntervalSince(killed))) s after the kill")
        }
    }

    /// The advisory locks of the test's database, granted or waited for.
    private func advisoryLocks(granted: Bool) throws -> Int {
        Int(try server.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND \(granted ? "" : "NOT ")granted")
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// `psql` in a process of its own, named `name` (its `application_name`), running `script` and then
    /// waiting on its input, its session idle; `locked` is signalled once it prints "locked".
    private func startPSQL(named name: String, script: String) throws -> (process: Process, input: Pipe, locked: DispatchSemaphore) {
        let psql = Process()
        psql.executableURL = server.binaries.appendingPathComponent("psql")
        psql.arguments = ["-X", "-q", "-A", "-t", "-h", server.host, "-p", "\(server.port)", "-U", server.user, "-d", server.database]
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        environment["PGPASSWORD"] = server.password
        environment["PGAPPNAME"] = name
        psql.environment = environment
        let input = Pipe()
        let output = Pipe()
        psql.standardInput = input
        psql.standardOutput = output
        psql.standardError = FileHandle.standardError
        try psql.run()
        input.fileHandleForWriting.write(Data((script + "\n").utf8))
        let locked = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var seen = ""
            while !seen.contains("locked") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                seen += String(decoding: chunk, as: UTF8.self)
            }
            locked.signal()
        }
        return (psql, input, locked)
    }

    private func stop(_ psql: (process: Process, input: Pipe, locked: DispatchSemaphore)) {
        if psql.process.isRunning { kill(psql.process.processIdentifier, SIGKILL) }
        psql.process.waitUntilExit()
    }
}
