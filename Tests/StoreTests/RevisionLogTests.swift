import CareModel
import Foundation
import GRDB
@testable import Store
import StoreTestSupport
import TestSupport
import XCTest

/// The per-patient revision log of CareKit sync: every batch that writes a patient's versions files them
/// under that patient in its own transaction, stamped with one tick of the store's clock.
final class RevisionLogTests: XCTestCase {
    private func log(_ store: any AppSyncStore, _ patientID: String, after clock: Int = 0) throws -> RevisionLogRead {
        try store.revisions(patientID: patientID, afterClock: clock, maxEntities: .max) { _ in true }
    }

    func testEachBatchIsOneRevisionPerPatientWithItsVersionsInOrder() throws {
        try forEachStore { tested in
            let (store, patient, plan, task) = try StoreFixtures.storeWithTask(tested)
            let first = try log(store, patient.id)
            XCTAssertEqual(first.revisions.count, 1)
            XCTAssertEqual(first.revisions[0].stamp.serverClock, 1)
            XCTAssertEqual(first.revisions[0].entities.map(\.kind), [.patient, .carePlan, .task])
            XCTAssertEqual(first.revisions[0].entities.map(\.metadata.uuid), [patient.uuid, plan.uuid, task.uuid])
            XCTAssertEqual(first.server.clock, 1)

            let outcome = StoreFixtures.outcome(task, occurrence: 0)
            var batch = StoreBatch()
            batch.add(outcome)
            let summary = try store.apply(batch)
            let second = try log(store, patient.id, after: 1)
            XCTAssertEqual(second.revisions.map(\.stamp.serverClock), [2])
            XCTAssertEqual(second.revisions[0].entities.map(\.metadata.uuid), summary.versionUUIDs)
            XCTAssertEqual(second.server.clock, 2)

            // A tombstone is a version too.
            var deletion = StoreBatch()
            deletion.delete(.outcome, id: outcome.id, at: StoreFixtures.day(1))
            let deleted = try store.apply(deletion)
            let third = try log(store, patient.id, after: 2)
            XCTAssertEqual(third.revisions.first?.entities.map(\.metadata.uuid), deleted.versionUUIDs)
            XCTAssertNotNil(third.revisions.first?.entities.first?.metadata.deletedDate)
        }
    }

    func testAnUnchangedUpsertAndABatchWithoutEntitiesTickNothing() throws {
        try forEachStore { tested in
            let (store, patient, _, _) = try StoreFixtures.storeWithTask(tested)
            var batch = StoreBatch()
            batch.upsert(patient)
            batch.setCheckpoint(SyncCheckpoint(server: "s", resourceType: "Patient", cursor: "c"))
            try store.apply(batch)
            XCTAssertEqual(try store.serverClock().clock, 1)
            XCTAssertEqual(try log(store, patient.id).revisions.count, 1)
        }
    }

    func testPatientsSeeOnlyTheirOwnVersions() throws {
        try forEachStore { tested in
            let store = tested.store
            var batch = StoreBatch()
            var tasks: [CareTask] = []
            for name in ["a", "b"] {
                let patient = StoreFixtures.patient(name)
                let plan = StoreFixtures.carePlan("plan-\(name)", patient: patient)
                let task = try StoreFixtures.task("task-\(name)", plan: plan)
                batch.add(patient)
                batch.add(plan)
                batch.add(task)
                tasks.append(task)
            }
            try store.apply(batch)
            var outcomes = StoreBatch()
            outcomes.add(StoreFixtures.outcome(tasks[1], occurrence: 0))
            try store.apply(outcomes)

            let a = try log(store, "a")
            let b = try log(store, "b")
            XCTAssertEqual(a.revisions.flatMap(\.entities).map(\.id), ["a", "plan-a", "task-a"])
            XCTAssertEqual(b.revisions.flatMap(\.entities).count, 4)
            XCTAssertEqual(b.revisions.map(\.stamp.serverClock), [1, 2])
            // One clock for the store: patient a's log has no revision at 2, but the clock moved.
            XCTAssertEqual(a.server.clock, 2)
            XCTAssertEqual(a.server.processUUID, b.server.processUUID)
        }
    }

    /// A task of no care plan (a medication order, an Observation log) is the patient's its linkage names,
    /// and so are its outcomes: devices pull them.
    private func taskOfNoCarePlan(of patient: Patient) throws -> CareTask {
        var task = try StoreFixtures.task("MedicationRequest/m1", plan: StoreFixtures.carePlan(patient: patient))
        task.carePlanUUID = nil
        task.carePlanID = nil
        task.metadata.linkage.patientID = patient.id
        return task
    }

    func testATaskOfNoCarePlanAndItsOutcomesAreInItsLinkedPatientsLog() throws {
        try forEachStore { tested in
            let store = tested.store
            let patient = StoreFixtures.patient("a")
            let task = try taskOfNoCarePlan(of: patient)
            var batch = StoreBatch()
            batch.add(patient)
            batch.add(task)
            batch.add(StoreFixtures.outcome(task, occurrence: 0))
            try store.apply(batch)
            XCTAssertEqual(try log(store, "a").revisions.flatMap(\.entities).map(\.kind), [.patient, .task, .outcome])
            XCTAssertEqual(try log(store, "b").revisions.count, 0)
        }
    }

    func testAStoreMadeBeforeV9FilesItsTasksOfNoCarePlanInANewRecord() throws {
        let folder = try makeScratchFolder("revision-v9")
        let path = folder.appendingPathComponent("v8.sqlite").path
        let patient = StoreFixtures.patient("a")
        let task = try taskOfNoCarePlan(of: patient)
        do {
            let store = try SQLiteStore(path: path)
            var batch = StoreBatch()
            batch.add(patient)
            batch.add(task)
            batch.add(StoreFixtures.outcome(task, occurrence: 0))
            try store.apply(batch)
        }
        // As a store of v8 left it: the task and its outcome filed nowhere.
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "DELETE FROM revision WHERE entityKind IN ('task', 'outcome')")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v9 %'")
        }
        try queue.close()
        let store = try SQLiteStore(path: path)
        let read = try log(store, "a")
        XCTAssertEqual(read.revisions.map(\.stamp.serverClock), [1, 2], "a new record after what devices have")
        XCTAssertEqual(read.revisions[1].entities.map(\.kind), [.task, .outcome])
        XCTAssertEqual(read.server.clock, 2)
    }

    func testAFailedBatchFilesNothingAndTicksNothing() throws {
        try forEachStore { tested in
            let (store, patient, _, task) = try StoreFixtures.storeWithTask(tested)
            var batch = StoreBatch()
            batch.add(StoreFixtures.outcome(task, occurrence: 0))
            batch.add(StoreFixtures.outcome(task, occurrence: 0))  // a duplicate: the batch is refused
            XCTAssertThrowsError(try store.apply(batch))
            XCTAssertEqual(try store.serverClock().clock, 1)
            XCTAssertEqual(try log(store, patient.id).revisions.flatMap(\.entities).count, 3)
        }
    }

    /// A batch that ends a revision (an import writing many tasks' versions in one transaction) files the
    /// versions after the end as a batch of their own would: a tick and a stamp of their own; an end with
    /// nothing after it ticks nothing.
    func testAnEndedRevisionFilesWhatFollowsAsABatchOfItsOwnWould() throws {
        try forEachStore { tested in
            let (store, patient, _, task) = try StoreFixtures.storeWithTask(tested)
            var batch = StoreBatch()
            batch.add(StoreFixtures.outcome(task, occurrence: 0))
            batch.endRevision()
            batch.add(StoreFixtures.outcome(task, occurrence: 1))
            batch.add(StoreFixtures.outcome(task, occurrence: 2))
            batch.endRevision()
            let summary = try store.apply(batch)
            let read = try log(store, patient.id, after: 1)
            XCTAssertEqual(read.revisions.map(\.stamp.serverClock), [2, 3])
            XCTAssertEqual(
                read.revisions.map { $0.entities.map(\.metadata.uuid) }, [Array(summary.versionUUIDs[..<1]), Array(summary.versionUUIDs[1...])])
            XCTAssertEqual(read.server.clock, 3)
        }
    }

    func testReadsStopAfterWholeRevisionsAndFilter() throws {
        try forEachStore { tested in
            let (store, patient, _, task) = try StoreFixtures.storeWithTask(tested)
            for occurrence in 0..<3 {
                var batch = StoreBatch()
                batch.add(StoreFixtures.outcome(task, occurrence: occurrence))
                try store.apply(batch)
            }
            let page = try store.revisions(patientID: patient.id, afterClock: 0, maxEntities: 4) { _ in true }
            XCTAssertEqual(page.revisions.map(\.stamp.serverClock), [1, 2])
            XCTAssertTrue(page.hasMore)
            let filtered = try store.revisions(patientID: patient.id, afterClock: 0, maxEntities: .max) { $0.serverClock != 3 }
            XCTAssertEqual(filtered.revisions.map(\.stamp.serverClock), [1, 2, 4])
            XCTAssertFalse(filtered.hasMore)
        }
    }

    func testAStoreMadeBeforeTheLogHasItsVersionsFiledAtClockOne() throws {
        let folder = try makeScratchFolder("revision-migration")
        let path = folder.appendingPathComponent("v6.sqlite").path
        let patient = StoreFixtures.patient()
        let plan = StoreFixtures.carePlan(patient: patient)
        let task = try StoreFixtures.task(plan: plan)
        // As a CareGate that had no log left it: a store of this build with its log tables dropped.
        do {
            let store = try SQLiteStore(path: path)
            var batch = StoreBatch()
            batch.add(patient)
            batch.add(plan)
            batch.add(task)
            batch.add(StoreFixtures.outcome(task, occurrence: 1))
            try store.apply(batch)
        }
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            for table in ["revision", "revisionStamp", "patientKnowledge", "syncClock"] { try db.execute(sql: "DROP TABLE \(table)") }
            // The later migrations of those tables run again after it.
            try db.execute(
                sql: "DELETE FROM grdb_migrations WHERE identifier IN ('v7 revision log', 'v19 served device processes (bounded knowledge vectors)')")
        }
        try queue.close()
        let store = try SQLiteStore(path: path)
        let read = try log(store, patient.id)
        XCTAssertEqual(read.revisions.map(\.stamp.serverClock), [1])
        XCTAssertEqual(read.revisions[0].entities.map(\.kind), [.patient, .carePlan, .task, .outcome])
        XCTAssertEqual(read.server.clock, 1)
    }

    /// What a CareKit device pushes: each version kept under the device's uuid, after the current one,
    /// stamped with the device clocks merged first, queued for export once; the same versions again are
    /// nothing; a device's tombstone is kept under its uuid too.
    func testADeviceVersionIsKeptUnderItsUUIDOnce() throws {
        try forEachStore { tested in
            let (store, patient, _, task) = try StoreFixtures.storeWithTask(tested)
            let device = UUID()
            var first = StoreFixtures.outcome(task, occurrence: 0)
            first.metadata.uuid = UUID()
            var second = first
            second.metadata.uuid = UUID()
            second.metadata.previousVersionUUIDs = [first.uuid]
            second.values = [OutcomeValue(.double(130))]
            var batch = StoreBatch()
            batch.mergeKnowledge(patientID: patient.id, clocks: [device: 3])
            batch.appendVersion(keepingUUIDOf: first)
            batch.appendVersion(keepingUUIDOf: second)
            let summary = try store.apply(batch)
            XCTAssertEqual([summary.added, summary.updated, summary.unchanged], [1, 1, 0])
            XCTAssertEqual(try store.history(.outcome, id: first.id).map(\.metadata.uuid), [first.uuid, second.uuid])
            XCTAssertEqual(try store.history(.outcome, id: first.id).last?.metadata.previousVersionUUIDs, [first.uuid])
            let read = try log(store, patient.id, after: 1)
            XCTAssertEqual(read.revisions.map(\.stamp.deviceClocks), [[device: 3]])
            XCTAssertEqual(read.deviceClocks, [device: 3])
            XCTAssertEqual(summary.outboxEntryIDs.count, 2)

            let clock = try store.serverClock().clock
            let again = try store.apply(batch)
            XCTAssertEqual([again.added, again.updated, again.unchanged], [0, 0, 2])
            XCTAssertEqual(again.outboxEntryIDs, [])
            XCTAssertEqual(try store.serverClock().clock, clock, "nothing written, no tick")

            var gone = second
            gone.metadata.uuid = UUID()
            gone.metadata.previousVersionUUIDs = [second.uuid]
            gone.metadata.deletedDate = StoreFixtures.day(2)
            var deletion = StoreBatch()
            deletion.mergeKnowledge(patientID: patient.id, clocks: [device: 2])
            deletion.appendVersion(keepingUUIDOf: gone)
            XCTAssertEqual(try store.apply(deletion).deleted, 1)
            XCTAssertEqual(try store.history(.outcome, id: first.id).last?.metadata.uuid, gone.uuid)
            XCTAssertNotNil(try store.history(.outcome, id: first.id).last?.metadata.deletedDate)
            XCTAssertEqual(try log(store, patient.id).deviceClocks, [device: 3], "a clock never goes back")
            XCTAssertEqual(try store.outcomes(.current), [])
        }
    }

    /// Two devices' edits of one version are two tips (CareKit's version graph), each naming the version it
    /// replaced; the outcome's export waits while it has several; a version naming both (a device's
    /// resolution) makes one tip again, and the export is due; a version the store writes itself (an
    /// upsert) after several tips names them all.
    func testDevicesVersionsKeepTheGraphAndAConflictHoldsTheExport() throws {
        try forEachStore { tested in
            let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
            func version(_ value: Double, after previous: [UUID], day: Int = 1) -> Outcome {
                var outcome = StoreFixtures.outcome(task, occurrence: 0)
                outcome.metadata.uuid = UUID()
                outcome.metadata.previousVersionUUIDs = previous
                outcome.metadata.effectiveDate = StoreFixtures.day(day)
                outcome.values = [OutcomeValue(.double(value))]
                return outcome
            }
            let root = version(1, after: [])
            let left = version(2, after: [root.uuid])
            let right = version(3, after: [root.uuid])
            var batch = StoreBatch()
            // In a push, a version may come before the one it names: the app server orders them; the store
            // links a version after those it holds.
            batch.appendVersion(keepingUUIDOf: root)
            batch.appendVersion(keepingUUIDOf: left)
            batch.appendVersion(keepingUUIDOf: right)
            try store.apply(batch)
            let id = root.id
            XCTAssertEqual(Set(try store.outcomes(.current).map(\.uuid)), [left.uuid, right.uuid])
            let history = try store.history(.outcome, id: id)
            XCTAssertEqual(history.map(\.metadata.previousVersionUUIDs), [[], [root.uuid], [root.uuid]])
            XCTAssertEqual(try store.dueOutboxEntries(at: Date(), limit: 10).count, 0, "an outcome in conflict is not exported")
            if let claiming = store as? any OutboxClaimingStore {
                let claimed = try claiming.claimOutboxEntries(worker: "w", kinds: [.outcome], after: 0, limit: 10, leaseFor: .seconds(60), dueAt: Date())
                XCTAssertEqual(claimed.count, 0, "nor claimed by a worker's push (\(tested.kind))")
            }
            XCTAssertEqual(try store.outboxEntries(in: .pending, limit: 10).count, 3)

            let resolution = version(3, after: [left.uuid, right.uuid], day: 2)
            batch = StoreBatch()
            batch.appendVersion(keepingUUIDOf: resolution)
            XCTAssertEqual(try store.apply(batch).updated, 1)
            XCTAssertEqual(try store.outcomes(.current).map(\.uuid), [resolution.uuid])
            XCTAssertEqual(try store.history(.outcome, id: id).last?.metadata.previousVersionUUIDs, [left.uuid, right.uuid])
            XCTAssertEqual(try store.dueOutboxEntries(at: Date(), limit: 10).count, 4)

            // A conflict again, then the store's own write after it: one version naming every tip.
            let third = version(4, after: [resolution.uuid], day: 3)
            let fourth = version(5, after: [resolution.uuid], day: 3)
            batch = StoreBatch()
            batch.appendVersion(keepingUUIDOf: third)
            batch.appendVersion(keepingUUIDOf: fourth)
            try store.apply(batch)
            XCTAssertEqual(try store.outcomes(.current).count, 2)
            batch = StoreBatch()
            batch.upsert(version(6, after: [], day: 4))
            try store.apply(batch)
            let tips = try store.outcomes(.current)
            XCTAssertEqual(tips.count, 1)
            XCTAssertEqual(Set(tips.first?.metadata.previousVersionUUIDs ?? []), [third.uuid, fourth.uuid])
            XCTAssertEqual(try store.dueOutboxEntries(at: Date(), limit: 10).count, 7)
        }
    }

    /// A store made before the version graph (one chain per outcome) migrates: nothing to convert, and a
    /// device's versions are kept as a graph from then on.
    func testAStoreMadeBeforeTheVersionGraphMigrates() throws {
        let folder = try makeScratchFolder("graph-migration")
        let path = folder.appendingPathComponent("v7.sqlite").path
        let task: CareTask
        do {
            let made = try StoreFixtures.storeWithTask(path: path)
            task = made.3
            var batch = StoreBatch()
            batch.add(StoreFixtures.outcome(task, occurrence: 1))
            try made.0.apply(batch)
        }
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "DROP TABLE outcomeConflict")
            try db.execute(sql: "ALTER TABLE outcome DROP COLUMN previousVersionUUIDs")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v8 outcome version graph'")
        }
        try queue.close()
        let store = try SQLiteStore(path: path)
        let current = try XCTUnwrap(try store.outcomes(.current).first)
        var left = current
        left.metadata.uuid = UUID()
        left.metadata.previousVersionUUIDs = [current.uuid]
        var right = left
        right.metadata.uuid = UUID()
        var resolution = left
        resolution.metadata.uuid = UUID()
        resolution.metadata.previousVersionUUIDs = [left.uuid, right.uuid]
        var batch = StoreBatch()
        for version in [left, right, resolution] { batch.appendVersion(keepingUUIDOf: version) }
        try store.apply(batch)
        XCTAssertEqual(try store.outcomes(.current).map(\.uuid), [resolution.uuid])
        XCTAssertEqual(try store.history(.outcome, id: current.id).last?.metadata.previousVersionUUIDs, [left.uuid, right.uuid])
    }

    func testAuditEntriesAreKeptNewestFirst() throws {
        try forEachStore { tested in
            let store = tested.store
            for (n, patient) in ["a", "b", "a"].enumerated() {
                try store.recordAudit(AuditEntry(
                    date: StoreFixtures.day(n), subject: patient, patientID: patient, action: "GET /carekit/v1/tasks", status: 200, detail: "\(n)"))
            }
            XCTAssertEqual(try store.auditEntries(patientID: nil, limit: 10).map(\.detail), ["2", "1", "0"])
            XCTAssertEqual(try store.auditEntries(patientID: "a", limit: 1).map(\.detail), ["2"])
        }
    }
}
