import CareModel
import Foundation
@testable import Store
import StoreTestSupport
import TestSupport
import XCTest

/// `revisions(knownBy:)`: the stamps a device's vector certainly knows are left unread, and what comes
/// back is what a read of the whole log with CareKit's rule gives, for every device vector.
final class RevisionLogKnownByTests: XCTestCase {
    func testSkippingWhatTheDeviceKnowsChangesNoAnswer() throws {
        try forEachStore { tested in
            let (store, patient, _, task) = try StoreFixtures.storeWithTask(tested)
            let devices = [UUID(), UUID()]
            // Six transactions, devices teaching the store their clocks along the way.
            for occurrence in 0..<6 {
                var batch = StoreBatch()
                if occurrence % 2 == 1 { batch.mergeKnowledge(patientID: patient.id, clocks: [devices[occurrence % 2]: occurrence]) }
                if occurrence == 4 { batch.mergeKnowledge(patientID: patient.id, clocks: [devices[0]: 2]) }
                batch.add(StoreFixtures.outcome(task, occurrence: occurrence))
                try store.apply(batch)
            }
            let server = try store.serverClock()
            var generator = SystemRandomNumberGenerator()
            var vectors: [[UUID: Int]] = [[:], [devices[0]: 1]]
            for clock in 0...server.clock + 1 {
                vectors.append([server.processUUID: clock])
                vectors.append([server.processUUID: clock, devices[0]: 2, devices[1]: 5])
                vectors.append([server.processUUID: clock, devices[0]: Int.random(in: 0...3, using: &generator), devices[1]: Int.random(in: 0...6, using: &generator)])
                vectors.append([server.processUUID: clock, devices[1]: 5, UUID(): 1])
            }
            for device in vectors {
                let vector = KnowledgeVector(device)
                let rule: (RevisionStamp) -> Bool = { !(KnowledgeVector($0.vector(server: server.processUUID)) < vector) }
                for after in [0, 2] {
                    let whole = try store.revisions(patientID: patient.id, afterClock: after, maxEntities: .max, knownBy: nil, including: rule)
                    let skipping = try store.revisions(patientID: patient.id, afterClock: after, maxEntities: .max, knownBy: device, including: rule)
                    XCTAssertEqual(skipping.revisions.map(\.stamp), whole.revisions.map(\.stamp), "device \(device), after \(after)")
                    XCTAssertEqual(skipping.revisions.map { $0.entities.map(\.metadata.uuid) }, whole.revisions.map { $0.entities.map(\.metadata.uuid) })
                    XCTAssertEqual(skipping.deviceClocks, whole.deviceClocks)
                }
            }
            // An up-to-date device (the server's clock, every device clock, its own on) starts after all.
            let known = try store.revisions(patientID: patient.id, afterClock: 0, maxEntities: 0) { _ in false }.deviceClocks
            var upToDate = known
            upToDate[server.processUUID] = server.clock
            upToDate[UUID()] = 2
            XCTAssertEqual(
                SQLiteStore.firstUnknownClock(afterClock: 0, device: upToDate, server: server, deviceClocks: known), server.clock - 1)
            // A device that has not learnt another device's clock reads the whole log.
            upToDate[devices[1]] = 0
            XCTAssertEqual(SQLiteStore.firstUnknownClock(afterClock: 0, device: upToDate, server: server, deviceClocks: known), 0)
        }
    }
}
