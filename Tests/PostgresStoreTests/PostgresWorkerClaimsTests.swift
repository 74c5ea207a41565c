import CareModel
import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// The store protocols of workers side by side (``OutboxClaimingStore``, ``PullPartitionStore``) on the
/// PostgreSQL store, which the sync job's pushes and pulls use: whole groups of an outcome's entries
/// claimed by one worker, claim-checked steps, and cursors moved only under every claim they name. The
/// SQLite store offers neither (its jobs take turns under the writer lease).
final class PostgresWorkerClaimsTests: XCTestCase {
    private var stores: BothStores!
    private let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    override func setUp() {
        stores = BothStores(for: self)
    }

    override func tearDown() {
        stores.stop()
    }

    /// Version `version` of outcome `number`'s export, for the provider.
    private func entry(_ number: Int, version: Int = 1, kind: EntityKind = .outcome) -> OutboxEntry {
        OutboxEntry(
            destination: OutboxEntry.provider, entityKind: kind, entityID: "outcome-\(number)",
            entityUUID: UUID(uuidString: String(format: "00000000-0000-4000-8%03d-%012d", version, number)) ?? UUID(), createdDate: t0)
    }

    private func enqueue(_ entries: [OutboxEntry], in store: PostgreSQLStore) throws -> [Int64] {
        var batch = StoreBatch(date: t0)
        for entry in entries { batch.enqueue(entry) }
        return try store.apply(batch).outboxEntryIDs
    }

    private func claim(_ store: PostgreSQLStore, _ worker: String, after: Int64 = 0, limit: Int = 10, dueAt: Date? = nil) throws -> [Int64] {
        try store.claimOutboxEntries(worker: worker, kinds: [.outcome], after: after, limit: limit, leaseFor: .seconds(600), dueAt: dueAt ?? Date()).compactMap(\.id)
    }

    func testTheSQLiteStoreOffersNoClaims() throws {
        let sqlite: any Store = try stores.sqlite("no-claims")
        XCTAssertNil(sqlite as? any OutboxClaimingStore)
        XCTAssertNil(sqlite as? any PullPartitionStore)
    }

    func testAnOutcomesDueEntriesAreClaimedTogetherBeyondTheLimitAndAClaimGoesOnAfterTheLastItTook() throws {
        let store = try stores.postgres()
        let ids = try enqueue([entry(1), entry(2), entry(1, version: 2), entry(3)], in: store)
        XCTAssertEqual(try claim(store, "a", limit: 1), [ids[0], ids[2]], "outcome 1's two versions, with the limit of one")
        XCTAssertEqual(try claim(store, "a", after: ids[0], limit: 2), [ids[1], ids[3]], "after the first head: outcomes 2 and 3")
        XCTAssertEqual(try claim(store, "b"), [], "everything is held by a")
    }

    func testAnOutcomeAnotherWorkerHoldsAnEntryOfIsPassedOver() throws {
        let store = try stores.postgres()
        let ids = try enqueue([entry(1), entry(2), entry(1, version: 2)], in: store)
        // Another worker holds outcome 1's first version only (a claim by entries, not groups).
        XCTAssertEqual(try store.outbox.claim(worker: "b", limit: 1, leaseFor: .seconds(600)).map(\.id), [ids[0]])
        XCTAssertEqual(try claim(store, "a"), [ids[1]], "outcome 1's newer version waits for the worker that holds its older one")
        _ = try store.outbox.transition([ids[0]], .sent(at: t0), worker: "b")
        _ = try store.outbox.acknowledge([(ids[0], nil)], worker: "b", at: t0)
        XCTAssertEqual(try claim(store, "a"), [ids[2]], "once it is answered, the newer version is claimed")
    }

    func testOnlyTheKindsAskedAndEntriesDueAreClaimed() throws {
        let store = try stores.postgres()
        let ids = try enqueue([entry(1), entry(2, kind: .patient), entry(3), entry(4)], in: store)
        var batch = StoreBatch(date: t0)
        batch.transition(outboxEntry: ids[2], .failed(error: "later", retryAt: t0.addingTimeInterval(60), at: t0))
        batch.transition(outboxEntry: ids[3], .sent(at: t0))
        try store.apply(batch)
        XCTAssertEqual(try claim(store, "a", dueAt: t0), [ids[0]], "not the patient's entry, the failed one not due, nor the one written to a file (sent, unclaimed)")
        XCTAssertEqual(try claim(store, "a", after: ids[0], dueAt: t0.addingTimeInterval(60)), [ids[2]], "the failed one at its retry time")
    }

    func testAStepOfAWorkerWhoseClaimWasTakenOverIsRefusedWithItsReason() throws {
        let store = try stores.postgres()
        let ids = try enqueue([entry(1), entry(2)], in: store)
        XCTAssertEqual(try claim(store, "a"), ids)
        XCTAssertEqual(try store.transitionClaimed(ids, .sent(at: t0), worker: "a").moved, ids)
        // b comes an hour later: a's claims lapsed; the sent ones come back failed, due now.
        let taken = try store.outbox.claim(worker: "b", limit: 1, leaseFor: .seconds(600), now: Date().addingTimeInterval(3_600))
        XCTAssertEqual(taken.map(\.id), [ids[0]])
        let late = try store.acknowledgeClaimed([(ids[0], ServerVersion(id: "o1", version: "1")), (ids[1], nil)], worker: "a", at: t0)
        XCTAssertEqual(late.moved, [ids[1]])
        XCTAssertEqual(late.refused.map(\.id), [ids[0]])
        XCTAssertTrue(late.refused.first?.reason.contains("claimed by b") == true, "\(late.refused)")
        XCTAssertEqual(try store.outbox.entry(id: ids[0])?.state, .failed, "not acknowledged by a")
        XCTAssertEqual(try store.transitionClaimed([ids[0]], .sent(at: t0), worker: "b").moved, [ids[0]])
        XCTAssertEqual(try store.acknowledgeClaimed([(ids[0], nil)], worker: "b", at: t0).moved, [ids[0]])
        XCTAssertEqual(try store.acknowledgeClaimed([(ids[0], nil)], worker: "b", at: t0).refused.map(\.id), [ids[0]], "acknowledged once")
    }

    func testCursorsMoveOnlyUnderEveryClaimTheyNameOrNotAtAll() throws {
        let store = try stores.postgres()
        let server = "https://fhir.example.org/r4"
        let (patients, plans) = (PullPartition.name(server: server, resourceType: "Patient"), PullPartition.name(server: server, resourceType: "CarePlan"))
        XCTAssertEqual(try store.claimPullPartitions([patients, plans], worker: "a", leaseFor: .seconds(600)).sorted(), [plans, patients].sorted())
        XCTAssertEqual(try store.claimPullPartitions([plans], worker: "b", leaseFor: .seconds(600)), [], "a holds it")
        // b takes CarePlan over an hour later, when a's claim has lapsed.
        XCTAssertEqual(try store.pulls.claim([plans], worker: "b", leaseFor: .seconds(600), now: Date().addingTimeInterval(3_600)), [plans])
        let cursors = [
            SyncCheckpoint(server: server, resourceType: "Patient", cursor: "2026-01-01T00:00:00Z"),
            SyncCheckpoint(server: server, resourceType: "CarePlan", cursor: "2026-01-02T00:00:00Z"),
        ]
        XCTAssertThrowsError(try store.setCheckpoints(cursors, underClaimsOf: "a")) { error in
            XCTAssertEqual(error as? PullPartitionClaimLost, PullPartitionClaimLost(partitions: [plans], worker: "a"))
        }
        XCTAssertNil(try store.checkpoint(server: server, resourceType: "Patient"), "nothing moved, not even the cursor a still holds")
        try store.setCheckpoints([cursors[0]], underClaimsOf: "a")
        XCTAssertEqual(try store.checkpoint(server: server, resourceType: "Patient")?.cursor, "2026-01-01T00:00:00Z")
        try store.releasePullPartitions([patients, plans], worker: "a")
        XCTAssertThrowsError(try store.setCheckpoints([cursors[0]], underClaimsOf: "a"), "a released it")
        XCTAssertEqual(try store.claimPullPartitions([patients], worker: "c", leaseFor: .seconds(600)), [patients], "released: free at once")
        XCTAssertEqual(try store.pulls.holder(of: plans)?.worker, "b", "a's release leaves b's claim")
    }

    func testTheClaimsOfAWorkerWhoseProcessEndedAreFreeAtOnceWhateverTheirLease() throws {
        let name = "db_presence"
        let (dying, living) = (try stores.postgres(database: name), try stores.postgres(database: name, create: false))
        defer { living.close() }
        let ids = try enqueue([entry(1), entry(2)], in: dying)
        let plans = PullPartition.name(server: "https://fhir.example.org/r4", resourceType: "CarePlan")
        XCTAssertEqual(try claim(dying, "a"), ids)
        XCTAssertEqual(try dying.claimPullPartitions([plans], worker: "a", leaseFor: .seconds(600)), [plans])
        XCTAssertEqual(try claim(living, "b"), [], "a is alive: its claims hold")
        XCTAssertEqual(try living.claimPullPartitions([plans], worker: "b", leaseFor: .seconds(600)), [])
        XCTAssertEqual(try living.pulls.holder(of: plans)?.worker, "a")

        // a's process ends (its store's sessions with it): its presence goes, and its claims with it.
        dying.close()
        XCTAssertNil(try living.pulls.holder(of: plans))
        XCTAssertEqual(try claim(living, "b"), ids, "taken over at once, ten minutes before a's lease lapses")
        XCTAssertEqual(try living.claimPullPartitions([plans], worker: "b", leaseFor: .seconds(600)), [plans])
        XCTAssertEqual(try living.outbox.claim(worker: "c", limit: 10, leaseFor: .seconds(60)), [], "b is alive: its claims hold")
    }
}
