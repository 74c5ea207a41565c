import CareModel
import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// The PostgreSQL outbox keeps the SQLite outbox's rules, on a real server (``PostgresServerProcess``):
/// one entry per destination and entity version, however often and however concurrently it is enqueued;
/// the steps ``OutboxState/allows(_:)`` permits and no other, each refusal a typed error; failed entries
/// due again at their retry time, never without one; and only a claimant may take a step.
final class PostgresOutboxTests: PostgresOutboxTestCase {
    func testEnqueueingAnEntityVersionTwiceKeepsOneEntry() throws {
        let first = entry(1, payload: "first")
        let ids = try outbox.enqueue([first, entry(2)])
        var again = first
        again.payload = Data("second".utf8)
        let other = OutboxEntry(destination: "elsewhere", entityKind: .outcome, entityID: first.entityID, entityUUID: first.entityUUID, createdDate: t0)
        let later = try outbox.enqueue([entry(3), again, other, again])
        XCTAssertEqual(later[1], ids[0], "the same entity version for the same destination keeps its entry")
        XCTAssertEqual(later[3], ids[0])
        XCTAssertNotEqual(later[2], ids[0], "another destination has an entry of its own")
        XCTAssertEqual(try outbox.entry(id: ids[0])?.payload, Data("first".utf8), "the entry first queued is kept as it was")
        XCTAssertEqual(try outbox.entry(destination: OutboxEntry.provider, entityUUID: first.entityUUID)?.id, ids[0])
        XCTAssertEqual(try outbox.entries(in: .pending).count, 4)
    }

    func testEnqueuersRunningTogetherKeepOneEntryEach() throws {
        let entries = (0..<60).map { entry($0) }
        let location = try self.location()
        let lock = NSLock()
        nonisolated(unsafe) var results: [[Int64]] = []
        nonisolated(unsafe) var failures: [String] = []
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            do {
                let database = try PostgresDatabase(location: location, environment: [:])
                defer { database.close() }
                // Each in another order: the store sorts what it inserts, so they cannot deadlock.
                let order = worker % 2 == 0 ? Array(entries.indices) : entries.indices.reversed()
                let ids = try PostgresOutbox(database: database).enqueue(order.map { entries[$0] })
                let byPosition = Dictionary(uniqueKeysWithValues: zip(order, ids))
                lock.withLock { results.append(entries.indices.map { byPosition[$0] ?? -1 }) }
            } catch {
                lock.withLock { failures.append("\(error)") }
            }
        }
        XCTAssertEqual(failures, [])
        XCTAssertEqual(results.count, 4)
        XCTAssertEqual(Set(results).count, 1, "every enqueuer was given the same id for each entity version")
        XCTAssertEqual(try outbox.entries(in: .pending, limit: 1_000).count, 60)
    }

    func testStepsFollowTheStateRulesAndRefusalsAreTyped() throws {
        let ids = try outbox.enqueue([entry(1), entry(2)])
        let claimed = try outbox.claim(worker: "a", limit: 10, leaseFor: .seconds(60), now: t0)
        XCTAssertEqual(claimed.map(\.id), ids)
        XCTAssertEqual(claimed.map(\.until), [t0.addingTimeInterval(60), t0.addingTimeInterval(60)])

        XCTAssertThrowsError(try outbox.acknowledge(ids[0], worker: "a", server: nil, at: t0)) { error in
            XCTAssertEqual(error as? PostgresOutboxRefusal, .invalidTransition(id: ids[0], from: .pending, to: .acknowledged))
            XCTAssertEqual((error as? PostgresOutboxRefusal)?.storeError, .invalidOutboxTransition(id: ids[0], from: .pending, to: .acknowledged))
        }
        try outbox.transition(ids[0], .sent(at: t0), worker: "a")
        XCTAssertThrowsError(try outbox.transition(ids[0], .sent(at: t0), worker: "a")) { error in
            XCTAssertEqual(error as? PostgresOutboxRefusal, .invalidTransition(id: ids[0], from: .sent, to: .sent))
        }
        try outbox.acknowledge(ids[0], worker: "a", server: ServerVersion(id: "obs-1", version: "2"), at: t0.addingTimeInterval(1))
        let acknowledged = try XCTUnwrap(try outbox.entry(id: ids[0]))
        XCTAssertEqual(acknowledged.state, .acknowledged)
        XCTAssertEqual(acknowledged.attempts, 1)
        XCTAssertEqual(acknowledged.server, ServerVersion(id: "obs-1", version: "2"))
        XCTAssertEqual(acknowledged.updatedDate, t0.addingTimeInterval(1))
        XCTAssertNil(try outbox.claimHolder(id: ids[0]), "an acknowledgement releases the claim")
        XCTAssertThrowsError(try outbox.acknowledge(ids[0], worker: "a", server: nil, at: t0)) { error in
            XCTAssertEqual(error as? PostgresOutboxRefusal, .invalidTransition(id: ids[0], from: .acknowledged, to: .acknowledged), "acknowledged once")
        }
        XCTAssertThrowsError(try outbox.transition(999_999, .sent(at: t0), worker: "a")) { error in
            XCTAssertEqual((error as? PostgresOutboxRefusal)?.storeError, .outboxEntryNotFound(id: 999_999))
        }
        XCTAssertThrowsError(try outbox.transition(ids[1], .sent(at: t0), worker: "b")) { error in
            XCTAssertEqual(error as? PostgresOutboxRefusal, .claimNotHeld(id: ids[1], worker: "b", holder: "a"))
        }
        XCTAssertEqual(try outbox.entry(id: ids[1])?.state, .pending, "a refused step changes nothing")
        XCTAssertEqual(try outbox.entry(id: ids[1])?.attempts, 0)
    }

    func testAFailedEntryIsDueAtItsRetryTimeAndNeverWithoutOne() throws {
        let ids = try outbox.enqueue([entry(1), entry(2)])
        XCTAssertEqual(try outbox.claim(worker: "a", limit: 10, leaseFor: .seconds(60), now: t0).map(\.id), ids)
        let result = try outbox.transition(ids, .sent(at: t0), worker: "a")
        XCTAssertEqual(result, PostgresOutboxStepResult(moved: ids))
        try outbox.transition(ids[0], .failed(error: "503 from the server", retryAt: t0.addingTimeInterval(300), at: t0), worker: "a")
        try outbox.transition(ids[1], .failed(error: "422: refused", retryAt: nil, at: t0), worker: "a")
        let failed = try XCTUnwrap(try outbox.entry(id: ids[0]))
        XCTAssertEqual(failed.state, .failed)
        XCTAssertEqual(failed.lastError, "503 from the server")
        XCTAssertEqual(failed.nextAttemptDate, t0.addingTimeInterval(300))

        XCTAssertEqual(try outbox.claim(worker: "b", limit: 10, leaseFor: .seconds(60), now: t0.addingTimeInterval(299)), [], "not due before its retry time")
        let retried = try outbox.claim(worker: "b", limit: 10, leaseFor: .seconds(60), now: t0.addingTimeInterval(300))
        XCTAssertEqual(retried.map(\.id), [ids[0]], "due at its retry time, for any worker")
        XCTAssertEqual(retried.first?.entry.state, .failed)
        // failed → sent → acknowledged, as in SQLite; the attempts count both sends.
        try outbox.transition(ids[0], .sent(at: t0), worker: "b")
        try outbox.acknowledge(ids[0], worker: "b", server: nil)
        XCTAssertEqual(try outbox.entry(id: ids[0])?.attempts, 2)
        XCTAssertNil(try outbox.entry(id: ids[0])?.lastError, "an acknowledgement clears the last error")
        XCTAssertEqual(try outbox.claim(worker: "c", limit: 10, leaseFor: .seconds(60), now: t0.addingTimeInterval(1e8)), [], "never due without a retry time")
    }

    func testABatchMovesWhatItMayAndReportsTheRest() throws {
        let ids = try outbox.enqueue((1...4).map { entry($0) })
        _ = try outbox.claim(worker: "a", limit: 3, leaseFor: .seconds(60), now: t0)
        XCTAssertEqual(try outbox.transition(ids, .sent(at: t0), worker: "a").moved, Array(ids.prefix(3)))
        let result = try outbox.acknowledge(
            [(ids[2], ServerVersion(id: "c", version: nil)), (ids[0], ServerVersion(id: "a", version: "1")), (ids[3], nil), (424_242, nil), (ids[0], nil)],
            worker: "a")
        XCTAssertEqual(result.moved, [ids[0], ids[2]], "in id order, each once")
        XCTAssertEqual(result.refused, [.invalidTransition(id: ids[3], from: .pending, to: .acknowledged), .notFound(id: 424_242)])
        XCTAssertEqual(try outbox.entry(id: ids[0])?.server, ServerVersion(id: "a", version: "1"), "the first receipt of an id counts")
        XCTAssertEqual(try outbox.entry(id: ids[2])?.server, ServerVersion(id: "c", version: nil))
        XCTAssertEqual(try outbox.entry(id: ids[1])?.state, .sent)
        XCTAssertEqual(try outbox.transition([ids[3]], .sent(at: t0), worker: "a").refused, [.claimNotHeld(id: ids[3], worker: "a", holder: nil)], "never claimed")
    }

    func testRequestsOutOfBoundsAreRefused() throws {
        XCTAssertThrowsError(try outbox.claim(worker: "", limit: 1, leaseFor: .seconds(1)))
        XCTAssertThrowsError(try outbox.claim(worker: "a", limit: 0, leaseFor: .seconds(1)))
        XCTAssertThrowsError(try outbox.claim(worker: "a", limit: 10_001, leaseFor: .seconds(1)))
        XCTAssertThrowsError(try outbox.claim(worker: "a", limit: 1, leaseFor: .zero))
        XCTAssertThrowsError(try outbox.claim(worker: "a", limit: 1, leaseFor: .seconds(86_401))) { error in
            XCTAssertNotNil(error as? PostgresOutboxRequestError)
        }
    }
}

/// A real PostgreSQL server with the outbox's migrations applied, and entries to queue.
class PostgresOutboxTestCase: XCTestCase {
    var server: PostgresServerProcess!
    var database: PostgresDatabase!
    var outbox: PostgresOutbox!
    /// A fixed clock: claims and steps are given their time, so that nothing waits for a lease to lapse.
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    override func setUpWithError() throws {
        server = try PostgresServerProcess.start()
        database = try PostgresDatabase(location: location(), environment: [:])
        outbox = PostgresOutbox(database: database)
        try outbox.prepare()
    }

    override func tearDown() {
        database?.close()
        server?.stop()
    }

    func location() throws -> PostgresLocation {
        guard case .postgres(let location) = try StoreLocation.parse(server.url) else { throw XCTSkip("not PostgreSQL") }
        return location
    }

    /// An export of outcome `number`, for the provider.
    func entry(_ number: Int, payload: String? = nil) -> OutboxEntry {
        OutboxEntry(
            destination: OutboxEntry.provider, entityKind: .outcome, entityID: "outcome-\(number)",
            entityUUID: UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", number)) ?? UUID(),
            payload: payload.map { Data($0.utf8) }, createdDate: t0)
    }
}
