import CareModel
import Foundation
import Logging
import PostgresNIO
import PostgresStore
import Store
import TestSupport
import XCTest

/// Several workers on one PostgreSQL outbox, each with its own connection pool, as separate processes
/// would be: their claims never overlap and together every entry is acknowledged exactly once; a worker
/// that stops without answering leaves its entries, once its lease lapses, to the next claim; and its
/// late answer is refused, never a second acknowledgement.
final class PostgresOutboxClaimsTests: PostgresOutboxTestCase {
    func testWorkersClaimingTogetherClaimDisjointSetsAndAcknowledgeEveryEntryOnce() throws {
        let ids = try outbox.enqueue((0..<600).map { entry($0) })
        let location = try self.location()
        let workers = 4
        let lock = NSLock()
        nonisolated(unsafe) var claimedBy: [String: [Int64]] = [:]
        nonisolated(unsafe) var refusals: [PostgresOutboxRefusal] = []
        nonisolated(unsafe) var failures: [String] = []
        DispatchQueue.concurrentPerform(iterations: workers) { number in
            let worker = "worker-\(number)"
            do {
                let database = try PostgresDatabase(location: location, environment: [:])
                defer { database.close() }
                let outbox = PostgresOutbox(database: database)
                var mine: [Int64] = []
                // The database's clock and a long lease: no claim lapses here.
                while true {
                    let claims = try outbox.claim(worker: worker, limit: 7, leaseFor: .seconds(600))
                    guard !claims.isEmpty else { break }
                    let claimed = claims.map(\.id)
                    mine += claimed
                    let sent = try outbox.transition(claimed, .sent(at: Date()), worker: worker)
                    let acknowledged = try outbox.acknowledge(claimed.map { ($0, ServerVersion(id: "obs-\($0)", version: "1")) }, worker: worker)
                    lock.withLock { refusals += sent.refused + acknowledged.refused }
                }
                lock.withLock { claimedBy[worker] = mine }
            } catch {
                lock.withLock { failures.append("\(worker): \(error)") }
            }
        }
        XCTAssertEqual(failures, [])
        XCTAssertEqual(refusals, [], "a worker's steps on its own claims are never refused")
        let all = claimedBy.values.flatMap { $0 }
        XCTAssertEqual(all.count, ids.count, "no entry claimed twice")
        XCTAssertEqual(Set(all), Set(ids), "every entry claimed")
        let acknowledged = try outbox.entries(in: .acknowledged, limit: 10_000)
        XCTAssertEqual(acknowledged.map(\.id), ids, "every entry acknowledged")
        XCTAssertEqual(Set(acknowledged.map(\.attempts)), [1], "each sent once")
        XCTAssertEqual(acknowledged.map { $0.server?.id }, ids.map { "obs-\($0)" })
        XCTAssertEqual(try outbox.claim(worker: "late", limit: 10, leaseFor: .seconds(60)), [], "nothing left")
    }

    func testALapsedClaimIsTakenOverAndTheFirstWorkersLateAnswerIsRefused() throws {
        let ids = try outbox.enqueue((1...5).map { entry($0) })
        let first = try outbox.claim(worker: "a", limit: 10, leaseFor: .seconds(60), now: t0)
        XCTAssertEqual(first.map(\.id), ids)
        // a sends two and stops without an answer (it died, or hangs).
        XCTAssertEqual(try outbox.transition(Array(ids.prefix(2)), .sent(at: t0), worker: "a").moved, Array(ids.prefix(2)))

        XCTAssertEqual(try outbox.claim(worker: "b", limit: 10, leaseFor: .seconds(60), now: t0.addingTimeInterval(59)), [], "a's claim holds until it lapses")
        let takenOver = try outbox.claim(worker: "b", limit: 10, leaseFor: .seconds(60), now: t0.addingTimeInterval(60))
        XCTAssertEqual(takenOver.map(\.id), ids, "b takes all of a's entries once a's claim lapsed")
        XCTAssertEqual(try outbox.claimHolder(id: ids[0])?.worker, "b")
        // The two a sent may have reached the server: failed, due now, the attempt counted, and said why.
        for claim in takenOver.prefix(2) {
            XCTAssertEqual(claim.entry.state, .failed)
            XCTAssertEqual(claim.entry.attempts, 1)
            XCTAssertEqual(claim.entry.lastError, "sent under the claim of a, which lapsed before the answer was recorded")
        }
        XCTAssertEqual(takenOver.suffix(3).map(\.entry.state), [.pending, .pending, .pending])

        // a comes back and answers late: refused, nothing changes.
        let late = try outbox.acknowledge(ids.map { ($0, nil) }, worker: "a")
        XCTAssertEqual(late.moved, [])
        XCTAssertEqual(late.refused, ids.map { .claimNotHeld(id: $0, worker: "a", holder: "b") })
        XCTAssertThrowsError(try outbox.transition(ids[4], .failed(error: "late", retryAt: nil, at: t0), worker: "a")) { error in
            XCTAssertEqual(error as? PostgresOutboxRefusal, .claimNotHeld(id: ids[4], worker: "a", holder: "b"))
        }
        XCTAssertEqual(try outbox.entry(id: ids[4])?.state, .pending)

        // b sends and is acknowledged; a's second late answer is refused too: acknowledged once.
        XCTAssertEqual(try outbox.transition(ids, .sent(at: t0.addingTimeInterval(61)), worker: "b").moved, ids)
        XCTAssertEqual(try outbox.acknowledge(ids.map { ($0, nil) }, worker: "b").moved, ids)
        let again = try outbox.acknowledge(ids.map { ($0, nil) }, worker: "a")
        XCTAssertEqual(again.moved, [])
        XCTAssertEqual(again.refused, ids.map { .invalidTransition(id: $0, from: .acknowledged, to: .acknowledged) })
        XCTAssertEqual(try outbox.entries(in: .acknowledged).map(\.attempts), [2, 2, 1, 1, 1])
    }

    func testALapsedClaimNobodyTookStillLetsItsWorkerAnswer() throws {
        let ids = try outbox.enqueue([entry(1)])
        _ = try outbox.claim(worker: "a", limit: 1, leaseFor: .seconds(1), now: t0)
        try outbox.transition(ids[0], .sent(at: t0), worker: "a")
        // Its lease lapsed long ago, but no claim took the entry: a's answer is the only one, and counts.
        try outbox.acknowledge(ids[0], worker: "a", server: nil, at: t0.addingTimeInterval(3_600))
        XCTAssertEqual(try outbox.entry(id: ids[0])?.state, .acknowledged)
        XCTAssertEqual(try outbox.claim(worker: "b", limit: 1, leaseFor: .seconds(1), now: t0.addingTimeInterval(7_200)), [])
    }

    func testAFailedEntryReleasedByOneWorkerIsClaimedByAnother() throws {
        let ids = try outbox.enqueue([entry(1), entry(2)])
        _ = try outbox.claim(worker: "a", limit: 2, leaseFor: .seconds(600), now: t0)
        _ = try outbox.transition(ids, .sent(at: t0), worker: "a")
        _ = try outbox.transition(ids, .failed(error: "connection reset", retryAt: t0.addingTimeInterval(10), at: t0), worker: "a")
        XCTAssertNil(try outbox.claimHolder(id: ids[0]), "a failure releases the claim before its lease ends")
        XCTAssertEqual(try outbox.claim(worker: "b", limit: 5, leaseFor: .seconds(60), now: t0.addingTimeInterval(10)).map(\.id), ids)
        XCTAssertThrowsError(try outbox.transition(ids[0], .sent(at: t0), worker: "a")) { error in
            XCTAssertEqual(error as? PostgresOutboxRefusal, .claimNotHeld(id: ids[0], worker: "a", holder: "b"))
        }
    }

    func testAClaimPassesOverRowsAnotherTransactionHoldsInsteadOfWaiting() throws {
        let ids = try outbox.enqueue((1...3).map { entry($0) })
        let holder = try PostgresDatabase(location: location(), environment: [:])
        defer { holder.close() }
        let locked = DispatchSemaphore(value: 0)
        let release = Gate()
        let finished = DispatchSemaphore(value: 0)
        let first = ids[0]
        // Another transaction (another claim in flight, say) holds the first entry's row until released.
        Thread.detachNewThread {
            _ = try? holder.run { client in
                try await client.withTransaction(logger: Logger(label: "test")) { connection in
                    try await connection.query("SELECT id FROM outbox WHERE id = \(first) FOR UPDATE", logger: Logger(label: "test"))
                    locked.signal()
                    await release.wait()
                }
            }
            finished.signal()
        }
        locked.wait()
        // Were it to wait for that row, this call would never return: the holder waits for it to.
        XCTAssertEqual(try outbox.claim(worker: "a", limit: 10, leaseFor: .seconds(60), now: t0).map(\.id), Array(ids.dropFirst()))
        release.open()
        finished.wait()
        XCTAssertEqual(try outbox.claim(worker: "b", limit: 10, leaseFor: .seconds(60), now: t0).map(\.id), [first], "free again once released")
    }
}

/// A one-shot gate an async task waits at until a thread opens it.
private final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = false
    private var waiter: CheckedContinuation<Void, Never>?

    func wait() async {
        await withCheckedContinuation { continuation in
            let openAlready = lock.withLock {
                if isOpen { return true }
                waiter = continuation
                return false
            }
            if openAlready { continuation.resume() }
        }
    }

    func open() {
        let waiting = lock.withLock {
            isOpen = true
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume()
    }
}
