import Foundation
import PostgresNIO
import PostgresStore
import Store
import Synchronization
import TestSupport
import XCTest

/// Several sync workers split the pulls of one PostgreSQL store: claims of partitions never overlap, a
/// dead worker's lapse and are taken over, and a cursor moves only under its partition's claim, which a
/// takeover waits for while the import transaction that moves it is open.
final class PostgresPullPartitionsTests: XCTestCase {
    private lazy var both = BothStores(for: self)
    private let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    override func tearDown() {
        both.stop()
    }

    /// `count` stores (pools) on one database.
    private func workers(_ count: Int) throws -> [PostgreSQLStore] {
        let name = "pulls_\(UUID().uuidString.prefix(8).lowercased())"
        return try [both.postgres(database: name)] + (1..<count).map { _ in try both.postgres(database: name, create: false) }
    }

    private let types = ["AllergyIntolerance", "CarePlan", "Condition", "Goal", "MedicationRequest", "Observation", "Patient", "Practitioner"]

    func testWorkersClaimingTogetherHoldDisjointPartitionsThatCoverTheWork() throws {
        let stores = try workers(4)
        let partitions = types.map { PostgresPullPartitions.partition(server: "https://ehr.example/fhir", resourceType: $0) }
        let claimed = Mutex<[Int: [String]]>([:])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            let mine = (try? stores[worker].pulls.claim(partitions.shuffled(), worker: "w\(worker)", leaseFor: .seconds(60))) ?? ["failed"]
            claimed.withLock { $0[worker] = mine }
        }
        let all = claimed.withLock { $0.values.flatMap { $0 } }
        XCTAssertEqual(all.count, partitions.count, "no partition held twice: \(claimed.withLock { $0 })")
        XCTAssertEqual(Set(all), Set(partitions), "every partition held by someone")
        // Claiming again renews one's own, and takes nothing of another's.
        let first = claimed.withLock { $0[0] ?? [] }
        XCTAssertEqual(try stores[0].pulls.claim(partitions, worker: "w0", leaseFor: .seconds(60)), first.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }

    func testALapsedClaimIsTakenOverAndItsFormerHolderMovesNoCursor() throws {
        let stores = try workers(2)
        let (a, b) = (stores[0].pulls, stores[1].pulls)
        let partition = PostgresPullPartitions.partition(server: "https://ehr.example/fhir", resourceType: "Observation")
        XCTAssertEqual(try a.claim([partition], worker: "a", leaseFor: .seconds(60), now: t0), [partition])
        XCTAssertEqual(try b.claim([partition], worker: "b", leaseFor: .seconds(60), now: t0.addingTimeInterval(30)), [], "a's claim is live")
        let cursor = SyncCheckpoint(server: "https://ehr.example/fhir", resourceType: "Observation", cursor: "2026-11-01T00:00:00Z", updatedDate: t0)
        XCTAssertTrue(try a.setCheckpoint(cursor, holding: partition, worker: "a", now: t0.addingTimeInterval(30)))
        XCTAssertEqual(try b.checkpoint(server: cursor.server, resourceType: "Observation"), cursor)

        // a dies: its lease lapses, b takes the partition over; a's late cursor is refused.
        XCTAssertEqual(try b.claim([partition], worker: "b", leaseFor: .seconds(60), now: t0.addingTimeInterval(61)), [partition])
        XCTAssertEqual(try b.holder(of: partition, now: t0.addingTimeInterval(61))?.worker, "b")
        var late = cursor
        late.cursor = "2026-11-02T00:00:00Z"
        XCTAssertFalse(try a.setCheckpoint(late, holding: partition, worker: "a", now: t0.addingTimeInterval(62)), "a no longer holds it")
        XCTAssertEqual(try b.checkpoint(server: cursor.server, resourceType: "Observation")?.cursor, cursor.cursor, "nothing moved")
        XCTAssertTrue(try b.setCheckpoint(late, holding: partition, worker: "b", now: t0.addingTimeInterval(62)))
        XCTAssertEqual(try a.checkpoint(server: cursor.server, resourceType: "Observation")?.cursor, late.cursor)

        // Released: another worker takes it at once.
        try b.release([partition], worker: "b")
        XCTAssertEqual(try a.claim([partition], worker: "a", leaseFor: .seconds(60), now: t0.addingTimeInterval(63)), [partition])
    }

    /// The import transaction that moves a cursor holds the partition: a takeover passes over it until the
    /// transaction commits, so the cursor and the data it covers are never written under two claims.
    func testATakeoverWaitsForTheImportTransactionThatMovesTheCursor() throws {
        let stores = try workers(2)
        let partition = PostgresPullPartitions.partition(server: "s", resourceType: "Observation")
        XCTAssertEqual(try stores[0].pulls.claim([partition], worker: "a", leaseFor: .seconds(60), now: t0), [partition])
        let locked = DispatchSemaphore(value: 0)
        let finish = Atomic<Bool>(false)
        let moved = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        let database = stores[0].database
        let cursor = SyncCheckpoint(server: "s", resourceType: "Observation", cursor: "c1", updatedDate: t0)
        let now = t0.addingTimeInterval(30)
        DispatchQueue.global().async {
            let result = try? database.run { client in
                try await client.withTransaction(logger: Logger(label: "test")) { connection in
                    let ok = try await PostgresPullPartitions.setCheckpoint(cursor, holding: partition, worker: "a", on: connection, now: now)
                    locked.signal()
                    while !finish.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(20)) }
                    return ok
                }
            }
            moved.store(result == true, ordering: .relaxed)
            done.signal()
        }
        XCTAssertEqual(locked.wait(timeout: .now() + 60), .success)
        // a's lease has lapsed by b's clock, but a's transaction still holds the row: b passes over it.
        XCTAssertEqual(try stores[1].pulls.claim([partition], worker: "b", leaseFor: .seconds(60), now: t0.addingTimeInterval(120)), [])
        finish.store(true, ordering: .relaxed)
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        XCTAssertTrue(moved.load(ordering: .relaxed))
        XCTAssertEqual(try stores[1].pulls.checkpoint(server: "s", resourceType: "Observation")?.cursor, "c1")
        XCTAssertEqual(try stores[1].pulls.claim([partition], worker: "b", leaseFor: .seconds(60), now: t0.addingTimeInterval(120)), [partition])
    }

    func testRequestsOutOfBoundsAreRefused() throws {
        let pulls = try workers(1)[0].pulls
        XCTAssertThrowsError(try pulls.claim(["p"], worker: "", leaseFor: .seconds(60)))
        XCTAssertThrowsError(try pulls.claim([""], worker: "w", leaseFor: .seconds(60)))
        XCTAssertThrowsError(try pulls.claim(["p"], worker: "w", leaseFor: .zero))
        XCTAssertThrowsError(try pulls.claim(Array(repeating: "p", count: 10_001), worker: "w", leaseFor: .seconds(1)))
    }
}
