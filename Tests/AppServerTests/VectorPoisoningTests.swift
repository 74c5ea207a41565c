import AppServer
import CareModel
import DeviceSimulation
import Foundation
import Hummingbird
import HummingbirdTesting
import Store
import StoreTestSupport
import XCTest

/// A patient's knowledge vector cannot be poisoned (issue 41, item 3): a push adds only the processes its
/// records carry, within bounds; what the server serves stays bounded; a vector bloated before the rule
/// is repaired; a phone with its Watch (CareKit's `OCKWatchConnectivityPeer`) still syncs.
final class VectorPoisoningTests: XCTestCase {
    private static let patient = "Patient/pat-1"

    /// Pulls with `vector` and merges every record into it, as CareKit does before it pushes.
    private static func caughtUp(_ transport: SyncTransport, _ vector: KnowledgeVector) async throws -> KnowledgeVector {
        var merged = vector
        for record in try await transport.pull(vector) { merged.merge(with: record.knowledgeVector) }
        return merged
    }

    /// The vector of the final record of a pull with no knowledge: what any new device is served.
    private static func served(_ transport: SyncTransport) async throws -> KnowledgeVector {
        let records = try await transport.pull(KnowledgeVector())
        return try XCTUnwrap(records.last?.knowledgeVector)
    }

    private static func push(
        _ client: some TestClientProtocol, _ headers: HTTPFields, _ records: [CareKitRevisionRecord], _ knowledge: KnowledgeVector
    ) async throws -> TestResponse {
        let body = try SyncTransport.pushBody(records, knowledge)
        return try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: headers, body: ByteBuffer(bytes: body))
    }

    private static func outcome(_ task: CareTask, _ occurrence: Int) -> Outcome {
        Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: occurrence, values: [OutcomeValue(.double(1))],
                metadata: EntityMetadata(effectiveDate: AppServerFixture.day0, timezone: .gmt))
    }

    private static func madeUp(_ count: Int, into vector: KnowledgeVector) -> KnowledgeVector {
        var grown = vector
        for _ in 0..<count { grown.processes[UUID()] = 1 }
        return grown
    }

    /// A phone that synced, recorded an outcome of occurrence 0 of `task`, and synced again.
    private static func phoneThatRecorded(_ task: CareTask, over transport: SyncTransport) async throws -> SimulatedDevice {
        let phone = SimulatedDevice(name: "phone", start: AppServerFixture.day0)
        try await phone.synchronize(transport)
        phone.record(task, occurrence: 0, value: 1)
        try await phone.synchronize(transport)
        return phone
    }

    private static func outcomeCount(_ store: AnyTestStore) throws -> Int {
        var count = 0
        try store.forEachVersion(.outcome) { _ in count += 1 }
        return count
    }

    /// The tester's attack: two pushes with no revisions (and records with no entities) and 998 made-up
    /// processes each are answered 200 but teach the server nothing; the vector it serves keeps the
    /// server's and the honest phone's processes; an honest device's next pull and push succeed.
    func testMadeUpProcessesThatCarryNothingAreNeverServed() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            let task = try XCTUnwrap(fixture.tasks[Self.patient])
            let store = fixture.store
            try await fixture.test { client in
                let transport = SyncTransport(client: client, headers: headers)
                let phone = try await Self.phoneThatRecorded(task, over: transport)

                for round in 0..<2 {
                    let forged = Self.madeUp(998, into: try await Self.caughtUp(transport, KnowledgeVector()))
                    let records = round == 0 ? [] : [CareKitRevisionRecord(entities: [], knowledgeVector: forged)]
                    let answer = try await Self.push(client, headers, records, forged)
                    XCTAssertEqual(answer.status, .ok, answer.text)
                    let vector = (answer.json as? [String: Any])?["knowledgeVector"] as? [String: Any]
                    XCTAssertEqual((vector?["processes"] as? [Any])?.count, 2, "the server's process and the phone's")
                }
                let served = try await Self.served(transport)
                XCTAssertEqual(Set(served.processes.keys), [try store.serverClock().processUUID, phone.process])

                // An honest device merges what it is served, and its pulls and pushes go on.
                let tablet = SimulatedDevice(name: "tablet", start: AppServerFixture.day0.addingTimeInterval(60))
                try await tablet.synchronize(transport)
                tablet.record(task, occurrence: 1, value: 2)
                try await tablet.synchronize(transport)
                try await phone.synchronize(transport)
                XCTAssertLessThanOrEqual(tablet.knowledge.processes.count, 3, "the server's, the phone's and its own")
                XCTAssertEqual(tablet.refusedPushes + phone.refusedPushes, 0)
                XCTAssertEqual(phone.outcomeTips.count, 2)
                XCTAssertEqual(try Self.outcomeCount(store), 2)
            }
        }
    }

    /// A phone and its Watch (two processes, records made by both): the phone pushes the Watch's records
    /// with its own; the server serves both processes; nothing is pushed twice; another device gets all.
    func testAPhoneAndItsWatchStillSync() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            let task = try XCTUnwrap(fixture.tasks[Self.patient])
            let store = fixture.store
            try await fixture.test { client in
                let transport = SyncTransport(client: client, headers: headers)
                let phone = SimulatedDevice(name: "phone", start: AppServerFixture.day0)
                let watch = SimulatedDevice(name: "watch", start: AppServerFixture.day0.addingTimeInterval(30))
                try await phone.synchronize(transport)
                watch.synchronize(withPhone: phone)
                let watchTask = try XCTUnwrap(watch.tasks().first { $0.uuid == task.uuid }, "the Watch has the phone's tasks")
                watch.record(watchTask, occurrence: 0, value: 1)
                phone.record(task, occurrence: 1, value: 2)
                watch.synchronize(withPhone: phone)
                try await phone.synchronize(transport)
                XCTAssertEqual(try Self.outcomeCount(store), 2)
                XCTAssertEqual(phone.refusedPushes, 0)
                let served = try await Self.served(transport)
                XCTAssertEqual(Set(served.processes.keys), [try store.serverClock().processUUID, phone.process, watch.process])

                // The next sync pushes nothing: what the server learnt covers both processes' records.
                try await phone.pullAndPrepare(transport)
                XCTAssertEqual(phone.pending?.revisions.flatMap(\.entities).count, 0)
                try await phone.push(transport)

                // The Watch records again; its record reaches the server through the phone.
                watch.record(watchTask, occurrence: 2, value: 3)
                watch.synchronize(withPhone: phone)
                try await phone.synchronize(transport)
                XCTAssertEqual(try Self.outcomeCount(store), 3)
                let tablet = SimulatedDevice(name: "tablet", start: AppServerFixture.day0.addingTimeInterval(90))
                try await tablet.synchronize(transport)
                XCTAssertEqual(tablet.outcomeTips.count, 3)
                XCTAssertEqual(tablet.refusedPushes, 0)
            }
        }
    }

    /// A push whose records carry more new processes than a push may add, and pushes past the patient's
    /// bound, are refused with a 422 and the path of the record; nothing of them is stored. A repair of
    /// the patient's vector lets a new device in again.
    func testCapsPerPushAndPerPatientRefuseWithAPath() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            let task = try XCTUnwrap(fixture.tasks[Self.patient])
            let store = fixture.store
            try await fixture.test { client in
                let transport = SyncTransport(client: client, headers: headers)
                var knowledge = try await Self.caughtUp(transport, KnowledgeVector())
                let perPush = DeviceKnowledgeLimits.newProcessesPerPush
                var vector = Self.madeUp(perPush + 1, into: knowledge)
                var answer = try await Self.push(
                    client, headers,
                    [CareKitRevisionRecord(entities: [], knowledgeVector: knowledge), CareKitRevisionRecord(entities: [.init(.outcome(Self.outcome(task, 0)))], knowledgeVector: vector)],
                    vector)
                XCTAssertEqual(answer.status, .unprocessableContent, answer.text)
                XCTAssertEqual((answer.json as? [String: String])?["error"], "too-many-processes")
                XCTAssertTrue(answer.text.contains("deviceRevisions[1].knowledgeVector.processes"), answer.text)
                XCTAssertEqual(try Self.outcomeCount(store), 0)

                // Pushes of the most a push may add, until the patient's bound.
                let pushes = DeviceKnowledgeLimits.processesPerPatient / perPush
                for occurrence in 0..<pushes {
                    vector = Self.madeUp(perPush, into: knowledge)
                    answer = try await Self.push(client, headers, [CareKitRevisionRecord(entities: [.init(.outcome(Self.outcome(task, occurrence)))], knowledgeVector: vector)], vector)
                    XCTAssertEqual(answer.status, .ok, answer.text)
                    knowledge = try await Self.caughtUp(transport, knowledge)
                }
                let bounded = try await Self.served(transport)
                XCTAssertEqual(bounded.processes.count, DeviceKnowledgeLimits.processesPerPatient + 1)
                vector = Self.madeUp(1, into: knowledge)
                answer = try await Self.push(client, headers, [CareKitRevisionRecord(entities: [.init(.outcome(Self.outcome(task, pushes)))], knowledgeVector: vector)], vector)
                XCTAssertEqual(answer.status, .unprocessableContent, answer.text)
                XCTAssertEqual((answer.json as? [String: String])?["error"], "too-many-processes")
                XCTAssertTrue(answer.text.contains("deviceRevisions[0].knowledgeVector.processes"), answer.text)
                XCTAssertTrue(answer.text.contains("at most \(DeviceKnowledgeLimits.processesPerPatient)"), answer.text)
                XCTAssertEqual(try Self.outcomeCount(store), pushes)

                // A new device cannot add its process until the patient's processes are retired.
                let phone = SimulatedDevice(name: "phone", start: AppServerFixture.day0.addingTimeInterval(60))
                try await phone.synchronize(transport)
                phone.record(task, occurrence: pushes + 1, value: 1)
                try await phone.pullAndPrepare(transport)
                let pending = try XCTUnwrap(phone.pending)
                let status = try await transport.push(pending.revisions, pending.knowledge)
                XCTAssertEqual(status, 422)
                let retired = try store.retireDeviceProcesses(patientID: Self.patient)
                XCTAssertEqual(retired.map(\.processes), [DeviceKnowledgeLimits.processesPerPatient])
                let afterRepair = try await Self.served(transport)
                XCTAssertEqual(afterRepair.processes.count, 1)
                try await phone.synchronize(transport)
                try await phone.synchronize(transport)
                XCTAssertEqual(try Self.outcomeCount(store), pushes + 1)
                let withPhone = try await Self.served(transport)
                XCTAssertEqual(withPhone.processes.count, 2)
            }
        }
    }

    /// A vector bloated before the rule (written straight into the store, stamped into a revision) is
    /// served until it is repaired; the repair leaves the server's vector bounded, a device that merged
    /// the bloat syncs on and pushes nothing twice, and new devices sync.
    func testABloatedStoreIsRepairedAndHonestDevicesSyncAgain() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            let task = try XCTUnwrap(fixture.tasks[Self.patient])
            let store = fixture.store
            try await fixture.test { client in
                let transport = SyncTransport(client: client, headers: headers)
                let phone = try await Self.phoneThatRecorded(task, over: transport)

                // As an older CareGate let it in: 600 made-up processes, stamped into the next revision.
                var batch = StoreBatch()
                batch.mergeKnowledge(patientID: Self.patient, clocks: Self.madeUp(600, into: KnowledgeVector()).processes)
                batch.appendVersion(keepingUUIDOf: Self.outcome(task, 5))
                try store.apply(batch)
                let bloated = try await Self.served(transport)
                XCTAssertGreaterThan(bloated.processes.count, 600)

                // A tablet merges the bloat (under the 1000 a request may name); past the patient's bound, the
                // push of its first record is refused.
                let tablet = SimulatedDevice(name: "tablet", start: AppServerFixture.day0.addingTimeInterval(60))
                try await tablet.synchronize(transport)
                XCTAssertGreaterThan(tablet.knowledge.processes.count, 600)
                tablet.record(task, occurrence: 1, value: 2)
                try await tablet.pullAndPrepare(transport)
                let pending = try XCTUnwrap(tablet.pending)
                let status = try await transport.push(pending.revisions, pending.knowledge)
                XCTAssertEqual(status, 422)

                let repaired = try store.retireDeviceProcesses(patientID: nil)
                XCTAssertEqual(repaired.map(\.patientID), [Self.patient])
                XCTAssertEqual(repaired.first?.processes, 601, "600 and the phone's")
                XCTAssertEqual(try store.retireDeviceProcesses(patientID: nil), [], "nothing left over the bound")
                let repairedVector = try await Self.served(transport)
                XCTAssertEqual(repairedVector.processes.count, 1, "the server's own")

                // The tablet pushes only what it recorded, and nothing it pulled under the bloated vectors.
                try await tablet.pullAndPrepare(transport)
                XCTAssertEqual(tablet.pending?.revisions.flatMap(\.entities).map(\.type), [.outcome])
                try await tablet.push(transport)
                try await tablet.pullAndPrepare(transport)
                XCTAssertEqual(tablet.pending?.revisions.flatMap(\.entities).count, 0)
                try await tablet.push(transport)
                // The phone and a new device sync, with bounded vectors.
                try await phone.synchronize(transport)
                let watchless = SimulatedDevice(name: "new", start: AppServerFixture.day0.addingTimeInterval(120))
                try await watchless.synchronize(transport)
                watchless.record(task, occurrence: 3, value: 4)
                try await watchless.synchronize(transport)
                XCTAssertLessThanOrEqual(phone.knowledge.processes.count, 4)
                XCTAssertLessThanOrEqual(watchless.knowledge.processes.count, 4)
                XCTAssertEqual(tablet.refusedPushes + phone.refusedPushes + watchless.refusedPushes, 0)
                XCTAssertEqual(try Self.outcomeCount(store), 4)
                let final = try await Self.served(transport)
                XCTAssertLessThanOrEqual(final.processes.count, 4)
            }
        }
    }
}
