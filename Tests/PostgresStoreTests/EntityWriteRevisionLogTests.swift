import CareModel
import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// The revision log of CareKit sync on both stores: each batch files its versions under their patients at
/// one tick of the clock, stamped with the device clocks the patient's devices taught the store (StoreTests'
/// RevisionLogTests and DeviceKnowledgeTests, ported).
final class EntityWriteRevisionLogTests: EntityWriteTestCase {
    private typealias F = WriteFixtures

    /// A task of no care plan (a medication order), the patient's its linkage names.
    private func taskOfNoCarePlan(_ id: String, of patient: Patient) throws -> CareTask {
        var task = try F.task(id, plan: nil)
        task.carePlanID = nil
        task.metadata.linkage.patientID = patient.id
        return task
    }

    func testEachPatientsLogAndTheClockAreAlike() throws {
        let stores = try pair("entity-write-revisions")
        var (batch, tasks) = try F.twoPatients()
        let medication = try taskOfNoCarePlan("MedicationRequest/m1", of: F.patient("a"))
        batch.add(medication)
        // A contact of no care plan and no patient (a practitioner) is in no patient's log.
        batch.add(Contact(id: "Practitioner/1", name: PersonName(givenName: "Grace", familyName: "Hopper"), metadata: EntityMetadata(effectiveDate: F.day(0), timezone: F.utc)))
        stores.apply(batch)

        batch = StoreBatch(date: F.day(1))
        batch.add(F.outcome(tasks[1], occurrence: 0))
        batch.add(F.outcome(medication, occurrence: 0))
        stores.apply(batch)

        // An unchanged upsert ticks nothing; nor does a refused batch.
        batch = StoreBatch(date: F.day(1))
        batch.upsert(F.patient("a"))
        XCTAssertEqual(try stores.apply(batch).get().unchanged, 1)
        batch = StoreBatch(date: F.day(1))
        batch.add(F.outcome(tasks[0], occurrence: 1))
        batch.add(F.outcome(tasks[0], occurrence: 1))
        XCTAssertNotNil(stores.apply(batch).error)
        XCTAssertEqual(try PostgresServerClock.serverClock(in: stores.postgres.database).clock, 2)

        // A care plan moved to another patient: its tasks' new versions follow it.
        var moved = F.carePlan("plan-a", patient: F.patient("b"))
        moved.patientUUID = nil
        moved.patientID = "b"
        moved.effectiveDate = F.day(2)
        var renamed = tasks[0]
        renamed.title = "Renamed"
        renamed.uuid = UUID()
        renamed.carePlanUUID = nil
        renamed.carePlanID = "plan-a"
        renamed.effectiveDate = F.day(2)
        batch = StoreBatch(date: F.day(2))
        batch.update(moved)
        batch.update(renamed)
        batch.delete(.task, id: "MedicationRequest/m1", at: F.day(3))
        stores.apply(batch)
        for patient in ["a", "b", "nobody"] { try stores.assertSameRevisions(patientID: patient) }
    }

    func testDeviceKnowledgeIsAdmittedAndStampedAlike() throws {
        let stores = try pair("entity-write-revisions")
        let (_, _, task, basics) = try F.basics()
        stores.apply(basics)
        let phone = UUID(), watch = UUID()
        var batch = StoreBatch(date: F.day(1))
        batch.admitKnowledge(DeviceKnowledgePush(patientID: "p1", clocks: [phone: 4, watch: 2, UUID(): 7], carried: [phone: 3, watch: 1]))
        batch.add(F.outcome(task, occurrence: 0))
        stores.apply(batch)
        batch = StoreBatch(date: F.day(2))
        batch.admitKnowledge(DeviceKnowledgePush(patientID: "p1", clocks: [phone: .max, UUID(): 3], carried: [:]))
        batch.mergeKnowledge(patientID: "p1", clocks: [watch: 1, UUID(uuidString: "00000000-0000-0000-0000-0000000000AA")!: 5])
        batch.add(F.outcome(task, occurrence: 1))
        stores.apply(batch)
        try stores.assertSameRevisions(patientID: "p1")

        // Past the bounds: the same refusal, naming the same process, and nothing kept.
        let many = Dictionary(uniqueKeysWithValues: (0...DeviceKnowledgeLimits.newProcessesPerPush).map { _ in (UUID(), 1) })
        batch = StoreBatch(date: F.day(3))
        batch.admitKnowledge(DeviceKnowledgePush(patientID: "p1", clocks: many, carried: many))
        guard case .deviceProcessLimit(_, DeviceKnowledgeLimits.newProcessesPerPush, .push)? = stores.apply(batch).error else {
            return XCTFail("the push's bound")
        }
        for round in 0..<(DeviceKnowledgeLimits.processesPerPatient / DeviceKnowledgeLimits.newProcessesPerPush + 1) {
            let some = Dictionary(uniqueKeysWithValues: (0..<DeviceKnowledgeLimits.newProcessesPerPush).map { _ in (UUID(), round + 1) })
            batch = StoreBatch(date: F.day(4))
            batch.admitKnowledge(DeviceKnowledgePush(patientID: "p1", clocks: some, carried: some))
            stores.apply(batch)
        }
        try stores.assertSameRevisions(patientID: "p1")
    }

    /// A device's version under a uuid another patient's version has is stored under a uuid of its own
    /// (no existence oracle), once; naming a version of another outcome of the same patient is refused.
    func testForeignUUIDsAndCrossOutcomeLinksAreAlike() throws {
        let stores = try pair("entity-write-revisions")
        var (batch, tasks) = try F.twoPatients()
        stores.apply(batch)
        var mine = F.outcome(tasks[0], occurrence: 0)
        mine.metadata.uuid = UUID()
        batch = StoreBatch(date: F.day(1))
        batch.appendVersion(keepingUUIDOf: mine)
        stores.apply(batch)
        var theirs = F.outcome(tasks[1], occurrence: 0)
        theirs.metadata.uuid = mine.uuid
        batch = StoreBatch(date: F.day(1))
        batch.appendVersion(keepingUUIDOf: theirs)
        XCTAssertEqual(try stores.apply(batch).get().added, 1, "stored under a substitute uuid")
        XCTAssertEqual(try stores.apply(batch).get().unchanged, 1, "the same push again")
        var crossing = F.outcome(tasks[0], occurrence: 1)
        crossing.metadata.uuid = UUID()
        crossing.metadata.previousVersionUUIDs = [mine.uuid]
        batch = StoreBatch(date: F.day(1))
        batch.appendVersion(keepingUUIDOf: crossing)
        guard case .invalidEntity(.outcome, _, _)? = stores.apply(batch).error else { return XCTFail("a link across outcomes") }
        try stores.assertSameHistories(.outcome, ids: [mine.id, theirs.id])
        for patient in ["a", "b"] { try stores.assertSameRevisions(patientID: patient) }
    }
}
