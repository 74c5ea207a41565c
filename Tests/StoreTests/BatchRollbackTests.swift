import CareModel
import Foundation
import Store
import StoreTestSupport
import XCTest

/// A batch is one transaction: an error anywhere in it leaves nothing of it behind (on both stores).
final class BatchRollbackTests: XCTestCase {
    func testBadEntityRollsBackTheWholeBatch() throws {
        try forEachStore { tested in
        let (store, _, plan, task) = try StoreFixtures.storeWithTask(tested)
        let before = try store.statistics()

        var batch = StoreBatch()
        batch.add(StoreFixtures.patient("p2"))
        batch.add(try StoreFixtures.task("t2", plan: plan))
        batch.add(StoreFixtures.outcome(task, occurrence: 0))
        batch.record(SourceResource(sourceSystem: "s", resourceType: "Patient", resourceID: "p2", body: Data("{}".utf8)))
        batch.setCheckpoint(SyncCheckpoint(server: "s", resourceType: "Patient", cursor: "2025"))
        batch.enqueue(OutboxEntry(destination: "s", entityKind: .task, entityID: "t1", entityUUID: task.uuid))
        batch.deadLetter(DeadLetter(system: "s", reason: "test"))
        batch.update(StoreFixtures.patient("nobody"))  // refused: no such id
        batch.add(StoreFixtures.patient("p3"))

        XCTAssertThrowsStoreError(try store.apply(batch), .idNotFound(kind: .patient, id: "nobody"))
        XCTAssertEqual(try store.statistics(), before, "nothing of the failed batch is kept")
        XCTAssertEqual(try store.patients().map(\.id), ["p1"])
        XCTAssertNil(try store.checkpoint(server: "s", resourceType: "Patient"))
        XCTAssertEqual(try store.integrityCheck(), [], "\(tested.kind)")
        }
    }

    func testBadOutcomeInLargeBatchRollsBackAllOutcomes() throws {
        try forEachStore { tested in
        let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
        var batch = StoreBatch()
        for day in 0..<500 { batch.add(StoreFixtures.outcome(task, occurrence: day)) }
        batch.add(StoreFixtures.outcome(task, occurrence: 10))  // the same occurrence twice
        XCTAssertThrowsStoreError(try store.apply(batch), .idAlreadyExists(kind: .outcome, id: "\(task.uuid.uuidString)_10"))
        XCTAssertEqual(try store.statistics().entities[.outcome]?.versions, 0)
        XCTAssertEqual(try store.statistics().outcomeValues, 0, "\(tested.kind)")
        }
    }

    func testEmptyBatchChangesNothing() throws {
        try forEachStore { tested in
            let (store, _, _, _) = try StoreFixtures.storeWithTask(tested)
            let before = try store.statistics()
            XCTAssertEqual(try store.apply(StoreBatch()), BatchSummary())
            XCTAssertEqual(try store.statistics(), before, "\(tested.kind)")
        }
    }
}
