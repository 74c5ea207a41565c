import CareModel
import Foundation
import Store
import StoreTestSupport
import XCTest

/// Outcomes name one occurrence of one task version; events are joined to them across task versions.
final class OutcomeTests: XCTestCase {
    func testOutcomeIsStoredWithItsValuesAndTaskID() throws {
        try forEachStore { tested in
            let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
            var batch = StoreBatch()
            batch.add(StoreFixtures.outcome(task, occurrence: 2, value: 131))
            try store.apply(batch)
            let outcome = try XCTUnwrap(store.outcomes().first)
            XCTAssertEqual(outcome.taskUUID, task.uuid)
            XCTAssertEqual(outcome.taskID, "t1")
            XCTAssertEqual(outcome.taskOccurrenceIndex, 2)
            XCTAssertEqual(outcome.values, [OutcomeValue(.double(131), units: "mmHg", kind: "systolic")])
            XCTAssertEqual(outcome.timezone.identifier, StoreFixtures.utc.identifier)
            let day2 = DateInterval(start: StoreFixtures.day(2), end: StoreFixtures.day(3))
            XCTAssertEqual(try store.outcomes(EntityQuery(dateInterval: day2)).count, 1, "outcomes are found by their event's date")
        }
    }

    func testEveryValueTypeRoundTrips() throws {
        try forEachStore { tested in
            let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
            var outcome = StoreFixtures.outcome(task, occurrence: 0)
            outcome.values = [
                OutcomeValue(.integer(7)), OutcomeValue(.double(1.5), units: "mg"), OutcomeValue(.boolean(true), kind: "taken"),
                OutcomeValue(.text("fine"), index: 3, createdDate: StoreFixtures.day(0, hour: 10), timezone: TimeZone(identifier: "Europe/Paris")!),
                OutcomeValue(.binary(Data([0, 1, 2]))),
                OutcomeValue(.date(StoreFixtures.day(0, hour: 9))),
            ]
            outcome.metadata.tags = ["home"]
            outcome.metadata.notes = [Note(author: "nurse", title: nil, content: "checked")]
            var batch = StoreBatch()
            batch.add(outcome)
            try store.apply(batch)
            let stored = try XCTUnwrap(store.outcomes().first)
            XCTAssertEqual(stored.values, outcome.values)
            XCTAssertEqual(stored.metadata.tags, ["home"])
            XCTAssertEqual(stored.metadata.notes, outcome.metadata.notes)
        }
    }

    func testOutcomeForMissingOccurrenceIsRefused() throws {
        try forEachStore { tested in
            let store = tested.store
            let patient = StoreFixtures.patient()
            let plan = StoreFixtures.carePlan(patient: patient)
            let task = try StoreFixtures.task(plan: plan, endDay: 3)  // occurrences 0, 1, 2
            var setup = StoreBatch()
            setup.add(patient)
            setup.add(plan)
            setup.add(task)
            try store.apply(setup)
            var batch = StoreBatch()
            batch.add(StoreFixtures.outcome(task, occurrence: 3))
            XCTAssertThrowsStoreError(try store.apply(batch), .occurrenceNotFound(taskID: "t1", taskUUID: task.uuid, occurrenceIndex: 3))
            var negative = StoreBatch()
            negative.add(StoreFixtures.outcome(task, occurrence: -1))
            XCTAssertThrowsStoreError(try store.apply(negative), .occurrenceNotFound(taskID: "t1", taskUUID: task.uuid, occurrenceIndex: -1))
        }
    }

    func testOutcomeForUnknownTaskVersionIsRefused() throws {
        try forEachStore { tested in
            let (store, _, plan, _) = try StoreFixtures.storeWithTask(tested)
            let stranger = try StoreFixtures.task("t9", plan: plan)
            var batch = StoreBatch()
            batch.add(StoreFixtures.outcome(stranger, occurrence: 0))
            XCTAssertThrowsStoreError(try store.apply(batch), .versionNotFound(kind: .task, uuid: stranger.uuid))
        }
    }

    func testSecondOutcomeForSameOccurrenceIsRefusedButCanBeUpdated() throws {
        try forEachStore { tested in
            let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
            var first = StoreBatch()
            first.add(StoreFixtures.outcome(task, occurrence: 1, value: 120))
            try store.apply(first)
            let id = "\(task.uuid.uuidString)_1"
            var duplicate = StoreBatch()
            duplicate.add(StoreFixtures.outcome(task, occurrence: 1, value: 125))
            XCTAssertThrowsStoreError(try store.apply(duplicate), .idAlreadyExists(kind: .outcome, id: id))

            var update = StoreBatch()
            update.update(StoreFixtures.outcome(task, occurrence: 1, value: 125))
            XCTAssertEqual(try store.apply(update).updated, 1)
            XCTAssertEqual(try store.outcomes().map(\.values.first?.value), [.double(125)])
            XCTAssertEqual(try store.history(.outcome, id: id).count, 2)

            var delete = StoreBatch()
            delete.delete(.outcome, id: id, at: StoreFixtures.day(1, hour: 12))
            XCTAssertEqual(try store.apply(delete).deleted, 1)
            XCTAssertEqual(try store.outcomes(), [])
            XCTAssertEqual(try store.history(.outcome, id: id).count, 3)
            var updateDeleted = StoreBatch()
            updateDeleted.update(StoreFixtures.outcome(task, occurrence: 1, value: 130))
            XCTAssertThrowsStoreError(try store.apply(updateDeleted), .entityDeleted(kind: .outcome, id: id))
        }
    }

    /// Version 1 of a task owns days 0-9, version 2 (at 18:00 instead of 08:00) owns day 10 on. An outcome
    /// may only go to the version that owns its occurrence, and events come from the owning version.
    func testOutcomesAttachToTheTaskVersionOwningTheirTime() throws {
        try forEachStore { tested in
            let (store, _, plan, v1) = try StoreFixtures.storeWithTask(tested)
            var v2 = try StoreFixtures.task(plan: plan, hour: 18, title: "Measure in the evening", effective: StoreFixtures.day(10))
            v2.uuid = UUID()
            var update = StoreBatch()
            update.update(v2)
            try store.apply(update)

            var early = StoreBatch()
            early.add(StoreFixtures.outcome(v1, occurrence: 3))
            early.add(StoreFixtures.outcome(v2, occurrence: 12))
            try store.apply(early)

            var overshadowed = StoreBatch()
            overshadowed.add(StoreFixtures.outcome(v1, occurrence: 12))
            XCTAssertThrowsStoreError(try store.apply(overshadowed)) {
                if case .occurrenceOutsideVersion("t1", v1.uuid, 12, _, _, StoreFixtures.day(10)) = $0 { return true } else { return false }
            }
            var beforeV2 = StoreBatch()
            beforeV2.add(StoreFixtures.outcome(v2, occurrence: 4))
            XCTAssertThrowsStoreError(try store.apply(beforeV2)) {
                if case .occurrenceOutsideVersion("t1", v2.uuid, 4, _, StoreFixtures.day(10), nil) = $0 { return true } else { return false }
            }

            // Days 2..<13: v1's 08:00 events on days 2-9, v2's 18:00 events on days 10-12.
            let events = try store.events(patientID: "p1", in: DateInterval(start: StoreFixtures.day(2), end: StoreFixtures.day(13)))
            XCTAssertEqual(events.count, 11)
            XCTAssertEqual(events.filter { $0.task.uuid == v1.uuid }.map(\.scheduleEvent.occurrence), Array(2...9))
            XCTAssertEqual(events.filter { $0.task.uuid == v2.uuid }.map(\.scheduleEvent.occurrence), [10, 11, 12])
            XCTAssertEqual(events.first { $0.scheduleEvent.occurrence == 10 }?.scheduleEvent.start, StoreFixtures.day(10, hour: 18))
            let done = events.filter { $0.outcome != nil }.map { ($0.task.uuid, $0.scheduleEvent.occurrence) }
            XCTAssertEqual(done.map(\.0), [v1.uuid, v2.uuid])
            XCTAssertEqual(done.map(\.1), [3, 12])
        }
    }

    func testEventsRunningAtTheStartCountAndTheEndIsExclusive() throws {
        try forEachStore { tested in
            let (store, _, _, _) = try StoreFixtures.storeWithTask(tested)  // daily 08:00-08:30
            let running = try store.events(patientID: "p1", in: DateInterval(start: StoreFixtures.day(1, hour: 8).addingTimeInterval(600), end: StoreFixtures.day(2)))
            XCTAssertEqual(running.map(\.scheduleEvent.occurrence), [1])
            let endsAtEvent = try store.events(patientID: "p1", in: DateInterval(start: StoreFixtures.day(1, hour: 9), end: StoreFixtures.day(2, hour: 8)))
            XCTAssertEqual(endsAtEvent.map(\.scheduleEvent.occurrence), [])
            XCTAssertEqual(try store.events(patientID: "nobody", in: DateInterval(start: StoreFixtures.day(0), end: StoreFixtures.day(5))), [])
        }
    }

    func testDeletedTaskStopsMakingEventsAndTakingOutcomes() throws {
        try forEachStore { tested in
            let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
            var delete = StoreBatch()
            delete.delete(.task, id: "t1", at: StoreFixtures.day(5))
            try store.apply(delete)
            let events = try store.events(patientID: "p1", in: DateInterval(start: StoreFixtures.day(3), end: StoreFixtures.day(8)))
            XCTAssertEqual(events.map(\.scheduleEvent.occurrence), [3, 4])
            var late = StoreBatch()
            late.add(StoreFixtures.outcome(task, occurrence: 6))
            XCTAssertThrowsStoreError(try store.apply(late)) {
                if case .occurrenceOutsideVersion("t1", task.uuid, 6, _, _, StoreFixtures.day(5)) = $0 { return true } else { return false }
            }
        }
    }

    func testUpsertOfSameOutcomeIsIdempotent() throws {
        try forEachStore { tested in
            let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
            for _ in 0..<3 {
                var batch = StoreBatch()
                batch.upsert(StoreFixtures.outcome(task, occurrence: 0, value: 118))
                try store.apply(batch)
            }
            XCTAssertEqual(try store.history(.outcome, id: "\(task.uuid.uuidString)_0").count, 1)
            var changed = StoreBatch()
            changed.upsert(StoreFixtures.outcome(task, occurrence: 0, value: 119))
            XCTAssertEqual(try store.apply(changed).updated, 1)
        }
    }

    /// The store remembers task versions between batches; a later version must still end the earlier
    /// one's time, and a rolled-back batch must leave no trace of the versions it made.
    func testRememberedTaskVersionsFollowUpdatesAndRollbacks() throws {
        try forEachStore { tested in
            let (store, _, plan, v1) = try StoreFixtures.storeWithTask(tested)
            var first = StoreBatch()
            first.add(StoreFixtures.outcome(v1, occurrence: 1))  // v1 is read, and remembered
            try store.apply(first)

            var v2 = try StoreFixtures.task(plan: plan, hour: 18, effective: StoreFixtures.day(10))
            v2.uuid = UUID()
            var failing = StoreBatch()
            failing.update(v2)
            failing.add(StoreFixtures.outcome(v2, occurrence: 11))
            failing.update(StoreFixtures.patient("nobody"))
            XCTAssertThrowsError(try store.apply(failing))
            var orphan = StoreBatch()
            orphan.add(StoreFixtures.outcome(v2, occurrence: 11))
            XCTAssertThrowsStoreError(try store.apply(orphan), .versionNotFound(kind: .task, uuid: v2.uuid))

            var update = StoreBatch()
            update.update(v2)
            try store.apply(update)
            var late = StoreBatch()
            late.add(StoreFixtures.outcome(v1, occurrence: 12))
            XCTAssertThrowsStoreError(try store.apply(late)) {
                if case .occurrenceOutsideVersion("t1", v1.uuid, 12, _, _, StoreFixtures.day(10)) = $0 { return true } else { return false }
            }
        }
    }
}
