import CareModel
import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// Outcomes on both stores: their versions, the task versions they attach to, long runs of adds, the
/// version graph devices make (appendVersion, conflicts), and what is queued for export (StoreTests'
/// OutcomeTests, OutcomeRunTests and RevisionLogTests' device cases, ported).
final class EntityWriteOutcomeTests: EntityWriteTestCase {
    private typealias F = WriteFixtures

    /// A pair of stores holding the basics (patient p1, care plan cp1, task t1 daily at 08:00) and task t2 at 09:00.
    private func storesWithTwoTasks() throws -> (StorePair, CareTask, CareTask) {
        let stores = try pair("entity-write-outcomes")
        let (_, plan, first, basics) = try F.basics()
        var batch = basics
        let second = try F.task("t2", plan: plan, hour: 9)
        batch.add(second)
        stores.apply(batch)
        return (stores, first, second)
    }

    func testOutcomeVersionsAndTheirRefusalsAreAlike() throws {
        let (stores, task, _) = try storesWithTwoTasks()
        var outcome = F.outcome(task, occurrence: 0)
        outcome.values = [
            OutcomeValue(.integer(7)), OutcomeValue(.double(1.5), units: "mg"), OutcomeValue(.boolean(true), kind: "taken"),
            OutcomeValue(.text("fine"), index: 3, createdDate: F.day(0, hour: 10).addingTimeInterval(0.123456), timezone: TimeZone(identifier: "Europe/Paris")!),
            OutcomeValue(.binary(Data([0, 1, 2]))), OutcomeValue(.date(F.day(0, hour: 9).addingTimeInterval(0.5))),
        ]
        outcome.metadata.tags = ["home"]
        outcome.metadata.notes = [Note(author: "nurse", title: nil, content: "checked")]
        outcome.metadata.source = "app"
        var batch = StoreBatch(date: F.day(0))
        batch.add(outcome)
        batch.add(F.outcome(task, occurrence: 1, provenance: F.provenance("Observation", "o1", hash: "h")))
        XCTAssertEqual(try stores.apply(batch).get().outboxEntryIDs.count, 1, "only the patient's outcome is queued")

        let id = "\(task.uuid.uuidString)_1"
        batch = StoreBatch(date: F.day(1))
        batch.add(F.outcome(task, occurrence: 1, value: 125))
        XCTAssertEqual(stores.apply(batch).error, .idAlreadyExists(kind: .outcome, id: id))
        batch = StoreBatch(date: F.day(1))
        batch.add(F.outcome(task, occurrence: -1))
        XCTAssertEqual(stores.apply(batch).error, .occurrenceNotFound(taskID: "t1", taskUUID: task.uuid, occurrenceIndex: -1))
        let stranger = try F.task("t9", plan: nil)
        batch = StoreBatch(date: F.day(1))
        batch.add(F.outcome(stranger, occurrence: 0))
        XCTAssertEqual(stores.apply(batch).error, .versionNotFound(kind: .task, uuid: stranger.uuid))

        // Update, unchanged upsert, upsert raised to its tip, delete, and a new outcome after the tombstone.
        batch = StoreBatch(date: F.day(1))
        batch.update(F.outcome(task, occurrence: 1, value: 125))
        XCTAssertEqual(try stores.apply(batch).get().updated, 1)
        batch = StoreBatch(date: F.day(1))
        batch.upsert(F.outcome(task, occurrence: 1, value: 125))
        XCTAssertEqual(try stores.apply(batch).get().unchanged, 1)
        var earlier = F.outcome(task, occurrence: 1, value: 126)
        earlier.effectiveDate = F.day(0)
        batch = StoreBatch(date: F.day(2))
        batch.upsert(earlier, effective: .noEarlierThanPrevious)
        XCTAssertEqual(try stores.apply(batch).get().updated, 1)
        batch = StoreBatch(date: F.day(2))
        batch.delete(.outcome, id: id, at: F.day(1, hour: 12))
        batch.delete(.outcome, id: "not an outcome id", at: F.day(1, hour: 12))
        XCTAssertEqual(stores.apply(batch).error, .idNotFound(kind: .outcome, id: "not an outcome id"))
        batch = StoreBatch(date: F.day(2))
        batch.delete(.outcome, id: id, at: F.day(1, hour: 12))
        XCTAssertEqual(try stores.apply(batch).get().deleted, 1)
        batch = StoreBatch(date: F.day(3))
        batch.update(F.outcome(task, occurrence: 1, value: 130))
        XCTAssertEqual(stores.apply(batch).error, .entityDeleted(kind: .outcome, id: id))
        batch = StoreBatch(date: F.day(3))
        batch.upsert(F.outcome(task, occurrence: 1, value: 131))
        XCTAssertEqual(try stores.apply(batch).get().added, 1, "an occurrence whose outcome was deleted takes one again")
        XCTAssertEqual(try stores.assertSameHistories(.outcome, ids: [outcome.id, id]), 6)
        try stores.assertSameRevisions(patientID: "p1")
    }

    func testOutcomesAttachToTheTaskVersionOwningTheirTimeAlike() throws {
        let (stores, v1, _) = try storesWithTwoTasks()
        let plan = F.carePlan(patient: F.patient())
        var v2 = try F.task(plan: plan, hour: 18, title: "Measure in the evening", effective: F.day(10))
        v2.uuid = UUID()
        v2.carePlanUUID = nil
        v2.carePlanID = "cp1"
        var batch = StoreBatch(date: F.day(10))
        batch.update(v2)
        stores.apply(batch)
        batch = StoreBatch(date: F.day(10))
        batch.add(F.outcome(v1, occurrence: 3))
        batch.add(F.outcome(v2, occurrence: 12))
        stores.apply(batch)
        batch = StoreBatch(date: F.day(10))
        batch.add(F.outcome(v1, occurrence: 12))
        XCTAssertNotNil(stores.apply(batch).error)
        batch = StoreBatch(date: F.day(10))
        batch.add(F.outcome(v2, occurrence: 4))
        XCTAssertNotNil(stores.apply(batch).error)
        // A deleted task takes no outcome.
        batch = StoreBatch(date: F.day(11))
        batch.delete(.task, id: "t1", at: F.day(11))
        batch.add(F.outcome(v2, occurrence: 13))
        XCTAssertNotNil(stores.apply(batch).error, "the occurrence lies after the task's tombstone")
        try stores.assertSameHistories(.task, ids: ["t1"])
        try stores.assertSameRevisions(patientID: "p1")
    }

    func testLongRunsOfAddsAreStoredAndRefusedAlike() throws {
        let (stores, first, second) = try storesWithTwoTasks()
        func interleaved(_ days: Range<Int>) -> [Outcome] {
            days.flatMap { day in [F.outcome(first, occurrence: day), F.outcome(second, occurrence: day)] }
        }
        var batch = StoreBatch(date: F.day(0))
        batch.add(F.outcome(second, occurrence: 5))
        stores.apply(batch)

        // An earlier duplicate is reported before a later bad occurrence; a repeat inside the run as batch order meets it.
        batch = StoreBatch(date: F.day(1))
        for outcome in interleaved(0..<200) { batch.add(outcome) }
        batch.add(F.outcome(first, occurrence: -1))
        XCTAssertEqual(stores.apply(batch).error, .idAlreadyExists(kind: .outcome, id: "\(second.uuid.uuidString)_5"))
        batch = StoreBatch(date: F.day(1))
        for outcome in interleaved(6..<200) { batch.add(outcome) }
        batch.add(F.outcome(second, occurrence: 7))
        batch.add(F.outcome(first, occurrence: 3))
        batch.add(F.outcome(first, occurrence: 4))
        XCTAssertEqual(stores.apply(batch).error, .idAlreadyExists(kind: .outcome, id: "\(second.uuid.uuidString)_7"))
        // A short run (written in batch order) and a long one (task by task), with their exports and revisions.
        batch = StoreBatch(date: F.day(1))
        for outcome in interleaved(0..<5) { batch.add(outcome) }
        let short = try stores.apply(batch).get()
        XCTAssertEqual([short.added, short.outboxEntryIDs.count], [10, 10])
        batch = StoreBatch(date: F.day(2))
        for (position, var outcome) in interleaved(6..<206).enumerated() {
            outcome.values = [OutcomeValue(.integer(position), units: "n", kind: "position")]
            outcome.metadata.provenance = position.isMultiple(of: 3) ? F.provenance("Observation", "o\(position)") : nil
            batch.add(outcome)
        }
        let long = try stores.apply(batch).get()
        XCTAssertEqual(long.added, 400)
        var all: [CareEntity] = []
        try stores.postgres.forEachVersion(.outcome) { all.append($0) }
        var expected: [CareEntity] = []
        try stores.sqlite.forEachVersion(.outcome) { expected.append($0) }
        XCTAssertEqual(all.count, 411)
        XCTAssertEqual(all.map(stores.postgresNames.normalised), expected.map(stores.sqliteNames.normalised), "every version, in the order stored")
        try stores.assertSameRevisions(patientID: "p1")
        XCTAssertEqual(try stores.postgresCount("SELECT count(*) FROM resource_link WHERE entity_kind = 'outcome'"), 134)
    }

    /// Devices' versions keep their uuids once; two edits of one version are two tips (a conflict, filed),
    /// a version naming both resolves it, and the store's own version after several tips names them all.
    func testDeviceVersionsGraphsAndConflictsAreAlike() throws {
        let (stores, task, _) = try storesWithTwoTasks()
        let device = UUID()
        func version(_ value: Double, after previous: [UUID], day: Int = 1) -> Outcome {
            var outcome = F.outcome(task, occurrence: 0)
            outcome.metadata.uuid = UUID()
            outcome.metadata.previousVersionUUIDs = previous
            outcome.metadata.effectiveDate = F.day(day)
            outcome.values = [OutcomeValue(.double(value))]
            return outcome
        }
        let root = version(1, after: [])
        let left = version(2, after: [root.uuid])
        let right = version(3, after: [root.uuid])
        var batch = StoreBatch(date: F.day(1))
        batch.mergeKnowledge(patientID: "p1", clocks: [device: 3])
        batch.appendVersion(keepingUUIDOf: root)
        batch.appendVersion(keepingUUIDOf: left)
        batch.appendVersion(keepingUUIDOf: right)
        XCTAssertEqual(try stores.apply(batch).get().outboxEntryIDs.count, 3)
        XCTAssertEqual(try stores.postgresCount("SELECT count(*) FROM outcome_conflict"), 1, "two tips: a conflict")
        XCTAssertEqual(try stores.apply(batch).get().unchanged, 3, "the same push again stores nothing")

        batch = StoreBatch(date: F.day(2))
        batch.appendVersion(keepingUUIDOf: version(3, after: [left.uuid, right.uuid], day: 2))
        XCTAssertEqual(try stores.apply(batch).get().updated, 1)
        XCTAssertEqual(try stores.postgresCount("SELECT count(*) FROM outcome_conflict"), 0, "resolved")

        let third = version(4, after: [], day: 3)
        batch = StoreBatch(date: F.day(3))
        let tipUUID = try XCTUnwrap(stores.postgres.history(.outcome, id: root.id).last?.metadata.uuid)
        var a = third
        a.metadata.previousVersionUUIDs = [tipUUID]
        var b = version(5, after: [tipUUID], day: 3)
        b.metadata.uuid = UUID()
        batch.appendVersion(keepingUUIDOf: a)
        batch.appendVersion(keepingUUIDOf: b)
        stores.apply(batch)
        batch = StoreBatch(date: F.day(4))
        batch.upsert(version(6, after: [], day: 4))
        XCTAssertEqual(try stores.apply(batch).get().updated, 1)
        XCTAssertEqual(try stores.postgresCount("SELECT count(*) FROM outcome_conflict"), 0, "the store's version names every tip")

        // A tombstone from a device, and one for an outcome the store never had.
        var gone = version(7, after: [], day: 5)
        gone.metadata.previousVersionUUIDs = [a.uuid]
        gone.metadata.deletedDate = F.day(5)
        var never = F.outcome(task, occurrence: 9)
        never.metadata.uuid = UUID()
        never.metadata.deletedDate = F.day(9)
        batch = StoreBatch(date: F.day(5))
        batch.mergeKnowledge(patientID: "p1", clocks: [device: 2])
        batch.appendVersion(keepingUUIDOf: gone)
        batch.appendVersion(keepingUUIDOf: never)
        let deletion = try stores.apply(batch).get()
        XCTAssertEqual([deletion.deleted, deletion.unchanged], [1, 1])
        try stores.assertSameHistories(.outcome, ids: [root.id, never.id])
        try stores.assertSameRevisions(patientID: "p1")
    }
}
