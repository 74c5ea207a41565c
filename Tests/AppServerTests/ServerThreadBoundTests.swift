@testable import AppClient
@testable import AppServer
import CareModel
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `caregate serve`'s threads under 500 concurrent pushes with reads beside them (issue 47, item 5): a
/// store call never holds one of the threads that serve connections (``AsyncAppStore``), pushes wait
/// for the store's writer lease on ``ServerLimits/pushWorkers`` threads, reads run on at most
/// ``ServerLimits/readThreads``, and pushes past ``ServerLimits/maxUploads`` are answered 503 with
/// `Retry-After` at once. So however many pushes arrive, the process runs a bounded number of threads
/// (Docs/concurrency.md, "Threads of the app server"), and every request is answered. The server is a
/// real process with its default limits; another process holds the store's writer lease and append
/// gate, as a sync's import does between two safe points, so that the pushes pile up.
final class ServerThreadBoundTests: XCTestCase {
    /// The most threads `caregate serve` runs with its default limits, whatever the load: main, NIO's
    /// event loops and Swift's concurrency pool (one each per core), ``ServerLimits/readThreads`` readers,
    /// ``ServerLimits/defaultPushWorkers`` writers, the audit trail's writer, and the few threads of
    /// Dispatch, NIO and Foundation that any such process has (Docs/concurrency.md).
    static var threadBound: Int {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        return 3 * cores + ServerLimits.readThreads + ServerLimits.defaultPushWorkers + 16
    }

    static let pushes = 500
    static let reads = 150

    /// With the default limits: 16 pushes read and wait for the lease, the others are refused at once.
    func testFiveHundredConcurrentPushesWithReadsBesideThemAreAllAnsweredOnABoundedNumberOfThreads() async throws {
        let stored = try await pushAndRead(options: [], placesHeld: ServerLimits.defaultMaxUploads)
        XCTAssertEqual(stored, ServerLimits.defaultMaxUploads, "every push given an upload place is stored once the other process lets go")
    }

    /// With room for every push (`--max-uploads 1000`): all 500 wait for the lease at once, in the
    /// writers' queue, and are stored one after the other once it is free.
    func testFiveHundredPushesAllWaitingForTheLeaseHoldNoMoreThreads() async throws {
        let stored = try await pushAndRead(options: ["--max-uploads", "1000"], placesHeld: Self.pushes)
        XCTAssertEqual(stored, Self.pushes)
    }

    /// The same on a PostgreSQL store (the generated store moved there by `caregate store migrate`): its
    /// calls run on threads of the store's own (as many as its connection pool), within the same bound.
    func testOnPostgreSQLFiveHundredConcurrentPushesWithReadsBesideThemAreAllAnsweredOnABoundedNumberOfThreads() async throws {
        let stored = try await pushAndRead(options: [], placesHeld: ServerLimits.defaultMaxUploads, onPostgreSQL: true)
        XCTAssertEqual(stored, ServerLimits.defaultMaxUploads, "every push given an upload place is stored once the other process lets go")
    }

    /// Sends the pushes and the reads at once while another process holds the lease, checks every
    /// answer and the server's threads throughout; returns how many pushes were stored. `placesHeld` pushes
    /// take an upload place and wait for the lease; the others are answered (refused) before it is let go.
    private func pushAndRead(options: [String], placesHeld: Int, onPostgreSQL: Bool = false) async throws -> Int {
        let connections = Self.pushes + Self.reads
        guard OpenFiles.raiseLimit(toward: 2 * connections + 200) >= 2 * connections + 200 else {
            throw XCTSkip("this process may not open \(connections) connections and the server as many")
        }
        let made = try generatedStore("thread-bound", tokenExpiresIn: "30m")
        let (key, token) = (made.key, made.token)
        var store = made.store
        let database = onPostgreSQL ? try PostgresServerProcess.start() : nil
        defer { database?.stop() }
        if let database {
            let moved = try CLIRunner.run(["store", "migrate", "--from", made.store, "--to", database.url])
            XCTAssertEqual(moved.status, 0, moved.stderr)
            store = database.url
        }
        // The pushes holding places wait for the lease as long as the test holds it, however slow the machine.
        let server = try AppServerProcess.start(store: store, key: key, extra: ["--busy-timeout", "600"] + options)
        defer { server.stop() }
        let port = server.base.port ?? 0

        // The device pulls everything first: its empty push is then one the server stores (200).
        let client = AppClient(base: server.base, token: token)
        var knowledge = KnowledgeVector([UUID(): 1])
        for record in try await client.pull(knowledge: knowledge) { knowledge.merge(with: record.knowledgeVector) }
        let pushBody = String(decoding: try CareKitJSON.makeEncoder().encode(PushRequest(deviceRevisions: [], deviceKnowledge: knowledge)), as: UTF8.self)
        let push = "POST /carekit/v1/revisions HTTP/1.1\r\nHost: caregate\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(pushBody.utf8.count)\r\nConnection: close\r\n\r\n" + pushBody
        let vector = String(decoding: try CareKitJSON.makeEncoder().encode(knowledge), as: UTF8.self)
            .addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let readPaths = ["/carekit/v1/revisions?knowledgeVector=\(vector)", "/carekit/v1/events?date=2025-01-15", "/carekit/v1/tasks"]

        let holder: any LeaseHolder = try database.map { try PostgresLockHolder(server: $0, database: $0.database) }
            ?? SQLiteLockHolder(store: made.store)
        let baseline = try server.threads()
        let sampler = ThreadSampler(processIdentifier: server.processIdentifier)

        var pushConnections: [RawConnection] = []
        for _ in 0..<Self.pushes {
            let connection = try RawConnection(port: port)
            XCTAssertTrue(connection.send(push))
            pushConnections.append(connection)
        }
        var readConnections: [RawConnection] = []
        for index in 0..<Self.reads {
            let connection = try RawConnection(port: port)
            let path = readPaths[index % readPaths.count]
            XCTAssertTrue(connection.send("GET \(path) HTTP/1.1\r\nHost: caregate\r\nAuthorization: Bearer \(token)\r\nConnection: close\r\n\r\n"))
            readConnections.append(connection)
        }
        // Reads never queue behind pushes waiting for the lease: all answered while it is held.
        let readAnswers = readConnections.map { $0.readToEnd(within: 120) }
        XCTAssertTrue(holder.isRunning, "the reads were answered only once the other process let go")
        for (index, answer) in readAnswers.enumerated() {
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 200"), "read \(index) (\(readPaths[index % readPaths.count].prefix(30))): \(answer.prefix(200))")
        }

        // Every push past the places is answered before the lease is let go: one reaching the upload check
        // later would take a freed place and be stored too.
        let refusedFirst = Self.pushes - placesHeld
        let deadline = Date().addingTimeInterval(120)
        while pushConnections.filter({ $0.readable(within: 0) }).count < refusedFirst, Date() < deadline { usleep(50_000) }
        holder.release()
        let pushAnswers = pushConnections.map { $0.readToEnd(within: 120) }
        let (peak, names) = sampler.stop()
        let stored = pushAnswers.filter { $0.hasPrefix("HTTP/1.1 200") }.count
        let refused = pushAnswers.filter { $0.hasPrefix("HTTP/1.1 503") && $0.lowercased().contains("\r\nretry-after: ") }.count
        print("threads of caregate serve: \(baseline) before \(Self.pushes) pushes and \(Self.reads) reads, at most \(peak) during them"
            + " (bound \(Self.threadBound)); pushes: \(stored) stored (200), \(refused) refused 503 with Retry-After; at the peak: \(names)")
        XCTAssertEqual(stored + refused, Self.pushes, "pushes answered otherwise: \(Set(pushAnswers.map { String($0.prefix(12)) }))")
        XCTAssertGreaterThan(stored, 0, "no push was stored once the other process let go")
        XCTAssertLessThan(peak, Self.threadBound, "the server's threads grew with the requests: \(names)")
        return stored
    }
}

/// Another process holding the store's writer lease and append gate until ``release()``.
private protocol LeaseHolder {
    var isRunning: Bool { get }
    func release()
}

extension PostgresLockHolder: LeaseHolder {}

/// `StoreLockHolder` on a SQLite store: its lock file's bytes, until a release file appears.
private final class SQLiteLockHolder: LeaseHolder {
    private let process: Process
    private let releaseFile: String

    init(store: String) throws {
        releaseFile = store + ".release"
        process = try StoreLockHolder.start(store: store, release: releaseFile, locks: StoreLockHolder.leaseAndGate)
    }

    var isRunning: Bool { process.isRunning }

    func release() {
        FileManager.default.createFile(atPath: releaseFile, contents: nil)
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}

/// The most threads a process ran, read from /proc every 10 ms on a thread of its own until ``stop()``,
/// and their names then.
private final class ThreadSampler: @unchecked Sendable {
    /// Guards `peak`, `names` and `running`.
    private let lock = NSLock()
    private var peak = 0
    private var names = ""
    private var running = true
    private let finished = DispatchSemaphore(value: 0)

    init(processIdentifier: Int32) {
        let thread = Thread { [self] in
            while lock.withLock({ running }) {
                if let count = AppServerProcess.threads(of: processIdentifier), count > lock.withLock({ peak }) {
                    let named = AppServerProcess.threadNames(of: processIdentifier)
                    lock.withLock { (peak, names) = (count, named) }
                }
                usleep(10_000)
            }
            finished.signal()
        }
        thread.start()
    }

    /// Stops sampling; the most threads seen, and how many had each name then.
    func stop() -> (Int, String) {
        lock.withLock { running = false }
        finished.wait()
        return lock.withLock { (peak, names) }
    }
}
