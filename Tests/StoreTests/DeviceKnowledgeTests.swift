import CareModel
import Foundation
import GRDB
@testable import Store
import StoreTestSupport
import TestSupport
import XCTest

/// The store's side of bounded knowledge vectors (``DeviceKnowledgePush``): what a push may add, and the
/// repair of a vector bloated before the rule, on upgrade.
final class DeviceKnowledgeTests: XCTestCase {
    private func clocks(_ count: Int, _ clock: Int = 1) -> [UUID: Int] {
        Dictionary(uniqueKeysWithValues: (0..<count).map { _ in (UUID(), clock) })
    }

    /// Only the processes a record with entities carries, beyond what the store knew, are added; a served
    /// one moves on; the rest is ignored; the bounds refuse the whole batch.
    func testAPushAddsOnlyWhatItsRecordsCarry() throws {
        try forEachStore { tested in
            let (store, patient, _, task) = try StoreFixtures.storeWithTask(tested)
            let phone = UUID(), watch = UUID(), server = try store.serverClock().processUUID
            let made = clocks(5)
            var device = KnowledgeVector([phone: 4, watch: 2, server: 1])
            device.merge(with: KnowledgeVector(made))
            let records = [
                CareKitRevisionRecord(entities: [CareKitEntity(.outcome(StoreFixtures.outcome(task, occurrence: 0)))], knowledgeVector: KnowledgeVector([phone: 3, watch: 1, server: 1])),
                CareKitRevisionRecord(entities: [], knowledgeVector: device),
            ]
            let push = DeviceKnowledgePush(patientID: patient.id, deviceKnowledge: device, records: records, server: server)
            XCTAssertEqual(push.carried, [phone: 3, watch: 1])
            XCTAssertNil(push.clocks[server])
            var batch = StoreBatch()
            batch.admitKnowledge(push)
            try store.apply(batch)
            let read = { try store.revisions(patientID: patient.id, afterClock: 0, maxEntities: 0) { _ in true }.deviceClocks }
            XCTAssertEqual(try read(), [phone: 4, watch: 2], "the device's clocks, for what its records carry")

            // A served process moves on without a record; a process no record carries never comes in.
            var later = StoreBatch()
            later.admitKnowledge(DeviceKnowledgePush(patientID: patient.id, clocks: [phone: 9, UUID(): 3], carried: [:]))
            try store.apply(later)
            XCTAssertEqual(try read(), [phone: 9, watch: 2])

            // A clock past the largest kept is kept as it: never Int.max, on which CareKit's increment traps.
            var huge = StoreBatch()
            huge.admitKnowledge(DeviceKnowledgePush(patientID: patient.id, clocks: [phone: .max], carried: [phone: .max]))
            try store.apply(huge)
            XCTAssertEqual(try read(), [phone: DeviceKnowledgeLimits.maximumClock, watch: 2])

            // Past the bound of one push: refused, nothing kept.
            let many = clocks(DeviceKnowledgeLimits.newProcessesPerPush + 1)
            var refused = StoreBatch()
            refused.admitKnowledge(DeviceKnowledgePush(patientID: patient.id, clocks: many, carried: many))
            XCTAssertThrowsError(try store.apply(refused)) { error in
                guard case StoreError.deviceProcessLimit(_, let limit, .push) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(limit, DeviceKnowledgeLimits.newProcessesPerPush)
            }
            XCTAssertEqual(try read(), [phone: DeviceKnowledgeLimits.maximumClock, watch: 2])
        }
    }

    /// A store whose vectors were bloated before the rule: upgrading retires the device processes of
    /// every patient over the bound (and clears them from its stamps), keeps their clocks for devices
    /// that know them, and leaves a patient under the bound alone.
    func testUpgradingRetiresABloatedVector() throws {
        let folder = try makeScratchFolder("device-knowledge-upgrade")
        let path = folder.appendingPathComponent("v18.sqlite").path
        let patient = StoreFixtures.patient()
        let plan = StoreFixtures.carePlan(patient: patient)
        let task = try StoreFixtures.task(plan: plan)
        let bloat = clocks(DeviceKnowledgeLimits.processesPerPatient + 1, 2)
        let few = clocks(3)
        do {
            let store = try SQLiteStore(path: path)
            var batch = StoreBatch()
            batch.add(patient)
            batch.add(plan)
            batch.add(task)
            try store.apply(batch)
            var bloating = StoreBatch()
            bloating.mergeKnowledge(patientID: patient.id, clocks: bloat)
            bloating.mergeKnowledge(patientID: "Patient/other", clocks: few)
            bloating.add(StoreFixtures.outcome(task, occurrence: 0))
            try store.apply(bloating)
            XCTAssertEqual(try store.revisions(patientID: patient.id, afterClock: 1, maxEntities: 10) { _ in true }.revisions.first?.stamp.deviceClocks, bloat)
        }
        // As a CareGate before the rule left it.
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "ALTER TABLE patientKnowledge DROP COLUMN served")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v19 served device processes (bounded knowledge vectors)'")
        }
        try queue.close()

        let store = try SQLiteStore(path: path)
        let device = KnowledgeVector(bloat.mapValues { _ in 5 })
        let read = try store.revisions(patientID: patient.id, afterClock: 0, maxEntities: 10, unseenBy: KnowledgeVector())
        XCTAssertEqual(read.deviceClocks, [:])
        XCTAssertEqual(read.revisions.map(\.stamp.deviceClocks), [[:], [:]])
        let known = try store.revisions(patientID: patient.id, afterClock: 0, maxEntities: 0, unseenBy: device)
        XCTAssertEqual(known.retiredClocks, bloat, "the clocks learnt, for a device that knows the processes")
        XCTAssertEqual(try store.revisions(patientID: "Patient/other", afterClock: 0, maxEntities: 0) { _ in true }.deviceClocks, few)
        XCTAssertEqual(try store.retireDeviceProcesses(patientID: nil), [])
        XCTAssertEqual(try store.retireDeviceProcesses(patientID: "Patient/other").map(\.processes), [3])
    }
}
