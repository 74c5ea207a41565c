import CareModel
import Foundation
import Store
import StoreTestSupport
import XCTest

/// A long run of outcome adds in one batch (a bulk import) is written task by task rather than in batch
/// order; what the store holds, the summary and the error a bad run reports are those of batch order.
final class OutcomeRunTests: XCTestCase {
    /// A store with one patient, one care plan and two daily tasks (08:00 and 09:00 UTC).
    private func storeWithTwoTasks(_ tested: TestStore) throws -> (AnyTestStore, CareTask, CareTask) {
        let (store, _, plan, first) = try StoreFixtures.storeWithTask(tested)
        let second = try StoreFixtures.task("t2", plan: plan, hour: 9)
        var batch = StoreBatch()
        batch.add(second)
        try store.apply(batch)
        return (store, first, second)
    }

    /// Outcomes of both tasks for `days`, interleaved day by day as an import lists them.
    private func interleaved(_ first: CareTask, _ second: CareTask, days: Range<Int>) -> [Outcome] {
        days.flatMap { day in [StoreFixtures.outcome(first, occurrence: day), StoreFixtures.outcome(second, occurrence: day)] }
    }

    func testLongRunStoresEveryOutcomeAndReportsVersionsInBatchOrder() throws {
        try forEachStore { tested in
            let (store, first, second) = try storeWithTwoTasks(tested)
            let outcomes = interleaved(first, second, days: 0..<200)
            var batch = StoreBatch()
            for (position, outcome) in outcomes.enumerated() {
                var outcome = outcome
                outcome.values = [OutcomeValue(.integer(position), units: "n", kind: "position")]
                batch.add(outcome)
            }
            let summary = try store.apply(batch)

            XCTAssertEqual(summary.added, 400)
            XCTAssertEqual(summary.versionUUIDs.count, 400)
            let stored = Dictionary(uniqueKeysWithValues: try store.outcomes().map { ($0.id, $0) })
            XCTAssertEqual(stored.count, 400)
            for (position, outcome) in outcomes.enumerated() {
                let found = try XCTUnwrap(stored[outcome.id], outcome.id)
                XCTAssertEqual(found.uuid, summary.versionUUIDs[position], "the summary's uuid at \(position) is that outcome's")
                XCTAssertEqual(found.values.first?.value, .integer(position))
                XCTAssertEqual(found.taskID, position.isMultiple(of: 2) ? "t1" : "t2")
            }
            let day = try store.events(patientID: "p1", in: DateInterval(start: StoreFixtures.day(150), duration: 86_400))
            XCTAssertEqual(day.map { $0.outcome?.values.first?.value }, [.integer(300), .integer(301)])
            XCTAssertEqual(try store.integrityCheck(), [])
        }
    }

    func testLongRunReportsAnEarlierDuplicateBeforeALaterBadOccurrence() throws {
        try forEachStore { tested in
            let (store, first, second) = try storeWithTwoTasks(tested)
            var earlier = StoreBatch()
            earlier.add(StoreFixtures.outcome(second, occurrence: 5))
            try store.apply(earlier)
            let before = try store.statistics()

            var batch = StoreBatch()
            for outcome in interleaved(first, second, days: 0..<200) { batch.add(outcome) }  // repeats (t2, 5)
            batch.add(StoreFixtures.outcome(first, occurrence: -1))  // no such occurrence
            XCTAssertThrowsStoreError(try store.apply(batch), .idAlreadyExists(kind: .outcome, id: "\(second.uuid.uuidString)_5"))
            XCTAssertEqual(try store.statistics(), before, "nothing of the failed batch is kept")
        }
    }

    func testDuplicatesInsideALongRunReportTheOneBatchOrderMeetsFirst() throws {
        try forEachStore { tested in
            let (store, first, second) = try storeWithTwoTasks(tested)
            let before = try store.statistics()
            var batch = StoreBatch()
            for outcome in interleaved(first, second, days: 0..<200) { batch.add(outcome) }
            // Written task by task, the first task's repeat is written first; batch order meets the second's first.
            batch.add(StoreFixtures.outcome(second, occurrence: 7))
            batch.add(StoreFixtures.outcome(first, occurrence: 3))
            XCTAssertThrowsStoreError(try store.apply(batch), .idAlreadyExists(kind: .outcome, id: "\(second.uuid.uuidString)_7"))
            XCTAssertEqual(try store.statistics(), before)
        }
    }
}
