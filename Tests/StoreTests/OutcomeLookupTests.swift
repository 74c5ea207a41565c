import CareModel
import Foundation
import Store
import StoreTestSupport
import XCTest

/// Outcomes read by id: each id names a task version and an occurrence, found through the occurrence's
/// start in that version's schedule.
final class OutcomeLookupTests: XCTestCase {
    func testOutcomesByIDAreTheCurrentVersionsOfTheIDsThatExist() throws {
        try forEachStore(sqliteFile: true) { tested in
            let patient = StoreFixtures.patient()
            let plan = StoreFixtures.carePlan(patient: patient)
            let task = try StoreFixtures.task(plan: plan)
            var batch = StoreBatch()
            batch.add(patient)
            batch.add(plan)
            batch.add(task)
            for occurrence in 0..<5 { batch.add(StoreFixtures.outcome(task, occurrence: occurrence, value: Double(100 + occurrence))) }
            let store = tested.store
            try store.apply(batch)

            // Occurrence 1 gets a second version, occurrence 2 is deleted.
            var changes = StoreBatch()
            var updated = try XCTUnwrap(store.outcomes(EntityQuery(ids: [Outcome.id(taskUUID: task.uuid, occurrence: 1)])).first)
            updated.values = [OutcomeValue(.double(141), units: "mmHg", kind: "systolic")]
            changes.update(updated)
            changes.delete(.outcome, id: Outcome.id(taskUUID: task.uuid, occurrence: 2))
            try store.apply(changes)

            let ids = [3, 1, 2, 1, 9].map { Outcome.id(taskUUID: task.uuid, occurrence: $0) }
                + ["not an id", Outcome.id(taskUUID: UUID(), occurrence: 0), Outcome.id(taskUUID: task.uuid, occurrence: -1)]
            // A warm store (task versions cached by the batches) and a store opened afresh agree.
            for reader in [store, try StoreFixtures.reopenedForReading(tested)] {
                let found = try reader.outcomes(EntityQuery(ids: ids))
                XCTAssertEqual(found.map(\.taskOccurrenceIndex), [3, 1], "in the order stored, once each, deleted and unknown ids left out (\(tested.kind))")
                XCTAssertEqual(found.last?.values.first?.value, .double(141), "the current version")
                let day3 = DateInterval(start: StoreFixtures.day(3), end: StoreFixtures.day(4))
                XCTAssertEqual(try reader.outcomes(EntityQuery(ids: ids, dateInterval: day3)).map(\.taskOccurrenceIndex), [3])
                var visited: [Int] = []
                try reader.forEachEntity(.outcome, EntityQuery(ids: ids)) { entity in
                    if case .outcome(let outcome) = entity { visited.append(outcome.taskOccurrenceIndex) }
                }
                XCTAssertEqual(visited, [3, 1])
            }
        }
    }
}

/// CareKit's rules after a deletion: an occurrence can have an outcome again, other ids stay deleted.
final class AfterDeletionTests: XCTestCase {
    func testAnUpsertedOutcomeFollowsTheTombstoneOfTheDeletedOne() throws {
        try forEachStore { tested in
            let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
            var first = StoreBatch()
            first.add(StoreFixtures.outcome(task, occurrence: 1, value: 120))
            try store.apply(first)
            let id = Outcome.id(taskUUID: task.uuid, occurrence: 1)
            var deletion = StoreBatch(date: StoreFixtures.day(5))
            deletion.delete(.outcome, id: id)
            try store.apply(deletion)
            var again = StoreBatch(date: StoreFixtures.day(6))
            again.upsert(StoreFixtures.outcome(task, occurrence: 1, value: 125))
            try store.apply(again)
            let history = try store.history(.outcome, id: id).compactMap { entity -> Outcome? in
                if case .outcome(let outcome) = entity { outcome } else { nil }
            }
            XCTAssertEqual(history.map { $0.deletedDate != nil }, [false, true, false])
            XCTAssertEqual(history.last?.values.first?.value, .double(125))
            XCTAssertEqual(history.last?.previousVersionUUIDs, [history[1].uuid])
            XCTAssertEqual(history.last?.effectiveDate, StoreFixtures.day(5), "in effect no earlier than the deletion")
            XCTAssertEqual(try store.outcomes(.current).count, 1)

            var planDeletion = StoreBatch(date: StoreFixtures.day(7))
            planDeletion.delete(.task, id: task.id)
            try store.apply(planDeletion)
            var revived = StoreBatch(date: StoreFixtures.day(8))
            revived.upsert(task)
            XCTAssertThrowsStoreError(try store.apply(revived), .entityDeleted(kind: .task, id: task.id))
        }
    }
}
