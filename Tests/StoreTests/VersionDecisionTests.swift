import CareModel
import Foundation
import Store
import StoreTestSupport
import XCTest

/// The store's versioning decides, once, when a new version takes effect and whether each entity of a
/// batch was created, updated, deleted or unchanged, and says so in the batch summary.
final class VersionDecisionTests: XCTestCase {
    private func patient(effective: Date, given: String) -> Patient {
        var patient = StoreFixtures.patient(effective: effective)
        patient.name.givenName = given
        return patient
    }

    func testAVersionDatedBeforeItsTipIsRaisedToTheTipWhenTheBatchAsks() throws {
        try forEachStore { tested in
            let store = tested.store
            var first = StoreBatch()
            first.upsert(patient(effective: StoreFixtures.day(5), given: "Ada"))
            try store.apply(first)

            var refused = StoreBatch()
            refused.upsert(patient(effective: StoreFixtures.day(2), given: "Augusta"))
            XCTAssertThrowsStoreError(try store.apply(refused)) {
                if case .effectiveDateBeforePrevious(.patient, "p1", _, _) = $0 { return true } else { return false }
            }

            var raised = StoreBatch()
            raised.upsert(patient(effective: StoreFixtures.day(2), given: "Augusta"), effective: .noEarlierThanPrevious)
            XCTAssertEqual(try store.apply(raised).updated, 1)
            let current = try XCTUnwrap(store.patients().first)
            XCTAssertEqual(current.name.givenName, "Augusta")
            XCTAssertEqual(current.effectiveDate, StoreFixtures.day(5), "raised to the version it follows")

            var later = StoreBatch()
            later.upsert(patient(effective: StoreFixtures.day(7), given: "Ada"), effective: .noEarlierThanPrevious)
            try store.apply(later)
            XCTAssertEqual(try store.patients().first?.effectiveDate, StoreFixtures.day(7), "a later date is kept")
        }
    }

    func testTheTipItIsRaisedToIsTheOneCurrentInTheTransaction() throws {
        try forEachStore { tested in
            let store = tested.store
            var batch = StoreBatch()
            batch.upsert(patient(effective: StoreFixtures.day(1), given: "Ada"))
            batch.upsert(patient(effective: StoreFixtures.day(9), given: "Augusta"), effective: .noEarlierThanPrevious)
            batch.upsert(patient(effective: StoreFixtures.day(3), given: "Ada King"), effective: .noEarlierThanPrevious)
            try store.apply(batch)
            let dates = try store.history(.patient, id: "p1").map(\.metadata.effectiveDate)
            XCTAssertEqual(dates, [StoreFixtures.day(1), StoreFixtures.day(9), StoreFixtures.day(9)])
        }
    }

    func testATombstoneDatedBeforeItsTipIsRaisedWhenTheBatchAsks() throws {
        try forEachStore { tested in
            let (store, _, _, _) = try StoreFixtures.storeWithTask(tested)
            var refused = StoreBatch()
            refused.delete(.patient, id: "p1", at: StoreFixtures.day(-2))
            XCTAssertThrowsStoreError(try store.apply(refused)) {
                if case .effectiveDateBeforePrevious(.patient, "p1", _, _) = $0 { return true } else { return false }
            }
            var raised = StoreBatch()
            raised.delete(.patient, id: "p1", at: StoreFixtures.day(-2), effective: .noEarlierThanPrevious)
            XCTAssertEqual(try store.apply(raised).deleted, 1)
            let tombstone = try XCTUnwrap(store.history(.patient, id: "p1").last)
            XCTAssertEqual(tombstone.metadata.deletedDate, StoreFixtures.day0)
            XCTAssertEqual(tombstone.metadata.effectiveDate, StoreFixtures.day0)
        }
    }

    func testAnOutcomeVersionDatedBeforeItsTipIsRaised() throws {
        try forEachStore { tested in
            let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
            var first = StoreBatch()
            first.add(StoreFixtures.outcome(task, occurrence: 2, value: 120))
            try store.apply(first)
            var changed = StoreFixtures.outcome(task, occurrence: 2, value: 135)
            changed.metadata.effectiveDate = StoreFixtures.day(1)
            var batch = StoreBatch()
            batch.upsert(changed, effective: .noEarlierThanPrevious)
            XCTAssertEqual(try store.apply(batch).updated, 1)
            let current = try XCTUnwrap(store.outcomes(EntityQuery(ids: [changed.id])).first)
            XCTAssertEqual(current.values.first?.value, .double(135))
            XCTAssertEqual(current.metadata.effectiveDate, StoreFixtures.day(2, hour: 9))
        }
    }

    func testTheSummarySaysWhatEachEntityCameTo() throws {
        try forEachStore { tested in
            let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
            var batch = StoreBatch()
            batch.upsert(StoreFixtures.patient())  // the same content
            batch.upsert(patient(effective: StoreFixtures.day(1), given: "Augusta"))
            batch.upsert(StoreFixtures.patient("p2"))
            batch.add(StoreFixtures.outcome(task, occurrence: 0))
            batch.delete(.patient, id: "p2", at: StoreFixtures.day(2))
            let summary = try store.apply(batch)
            XCTAssertEqual(summary.entityChanges, [
                EntityChange(entity: EntityKey(.patient, id: "p1"), change: .unchanged),
                EntityChange(entity: EntityKey(.patient, id: "p1"), change: .updated),
                EntityChange(entity: EntityKey(.patient, id: "p2"), change: .created),
                EntityChange(entity: EntityKey(.outcome, id: Outcome.id(taskUUID: task.uuid, occurrence: 0)), change: .created),
                EntityChange(entity: EntityKey(.patient, id: "p2"), change: .deleted),
            ])
            XCTAssertEqual([summary.added, summary.updated, summary.unchanged, summary.deleted], [2, 1, 1, 1])
        }
    }

    func testARunOfOutcomeAddsIsSummarisedPerOutcome() throws {
        try forEachStore { tested in
            let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
            var batch = StoreBatch()
            for occurrence in 0..<300 { batch.add(StoreFixtures.outcome(task, occurrence: occurrence)) }
            let summary = try store.apply(batch)
            XCTAssertEqual(summary.added, 300)
            XCTAssertEqual(summary.entityChanges.map(\.entity.id), (0..<300).map { Outcome.id(taskUUID: task.uuid, occurrence: $0) })
            XCTAssertTrue(summary.entityChanges.allSatisfy { $0.change == .created && $0.entity.kind == .outcome })
        }
    }

    func testAResourceIsKeptOnlyWhenAnEntityMadeFromItChanged() throws {
        try forEachStore { tested in
            let store = tested.store
            func record(_ body: String) -> SourceResource {
                SourceResource(sourceSystem: "https://ehr.example/fhir", resourceType: "Patient", resourceID: "123", body: Data(body.utf8))
            }
            let made = [EntityKey(.patient, id: "p1")]
            var first = StoreBatch()
            first.upsert(StoreFixtures.patient())
            first.record(record("{\"v\":1}"), ifChanged: made)
            XCTAssertEqual(try store.apply(first).sourcesRecorded, 1)

            var same = StoreBatch()
            same.upsert(StoreFixtures.patient())
            same.record(record("{\"v\":1,\"meta\":{}}"), ifChanged: made)
            let unchanged = try store.apply(same)
            XCTAssertEqual([unchanged.sourcesRecorded, unchanged.sourcesUnchanged], [0, 0], "nothing made from it changed")

            var changed = StoreBatch()
            changed.upsert(patient(effective: StoreFixtures.day(1), given: "Augusta"))
            changed.record(record("{\"v\":2}"), ifChanged: made)
            XCTAssertEqual(try store.apply(changed).sourcesRecorded, 1)
            XCTAssertEqual(try store.sourceResources(resourceType: "Patient", resourceID: "123").count, 2)
        }
    }

    func testADryRunAsksTheSameRule() {
        let stored = StoreFixtures.patient()
        XCTAssertEqual(VersionChange.ofUpsert(.patient(StoreFixtures.patient()), over: nil), .created)
        XCTAssertEqual(VersionChange.ofUpsert(.patient(StoreFixtures.patient()), over: .patient(stored)), .unchanged)
        XCTAssertEqual(VersionChange.ofUpsert(.patient(patient(effective: StoreFixtures.day0, given: "Augusta")), over: .patient(stored)), .updated)
    }

    func testAnOutcomeKeyIsTheSameKeyAsItsID() {
        let task = UUID()
        let byOccurrence = EntityKey(outcomeOf: task, occurrence: 3)
        let byID = EntityKey(.outcome, id: Outcome.id(taskUUID: task, occurrence: 3))
        XCTAssertEqual(byOccurrence, byID)
        XCTAssertEqual(byOccurrence.id, byID.id)
        XCTAssertEqual(Set([byOccurrence, byID]).count, 1)
        XCTAssertNotEqual(byOccurrence, EntityKey(outcomeOf: task, occurrence: 4))
        XCTAssertNotEqual(byOccurrence, EntityKey(.task, id: byID.id))
    }
}
