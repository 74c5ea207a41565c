import AppClient
import AppServer
import Benchmarks
import CareModel
import DeviceSimulation
import Foundation
import Hummingbird
import HummingbirdTesting
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// CareKit's remote sync over the routes in memory: the pull and push rules, the refusals, and two devices
/// of one patient synchronizing in many random orders.
final class SyncRouteTests: XCTestCase {
    private static func outcomeCount(_ store: AnyTestStore) throws -> Int {
        var count = 0
        try store.forEachVersion(.outcome) { _ in count += 1 }
        return count
    }

    func testAPullIsOrderedOwnDataWithAFinalRecordAndPages() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            let server = try fixture.store.serverClock()
            try await fixture.test { client in
                let response = try await client.execute(uri: try SyncTransport.pullURI(KnowledgeVector()), method: .get, headers: headers, body: nil)
                XCTAssertEqual(response.status, .ok)
                XCTAssertFalse(response.text.contains("pat-2"))
                let records = try CareKitJSON.makeDecoder().decode([CareKitRevisionRecord].self, from: Data(response.text.utf8))
                let final = try XCTUnwrap(records.last)
                XCTAssertEqual(final.entities, [])
                XCTAssertEqual(final.knowledgeVector.clock(for: server.processUUID), server.clock)
                let kinds = records.flatMap { $0.entities.map(\.type) }
                XCTAssertEqual(kinds, [.patient, .carePlan, .contact, .task])
                // Paged one entity at a time: the same entities, the next page in a Link header.
                let transport = SyncTransport(client: client, headers: headers)
                let paged = try await transport.pull(KnowledgeVector(), limit: 1)
                XCTAssertEqual(paged.flatMap { $0.entities.map(\.entity.metadata.uuid) }, records.flatMap { $0.entities.map(\.entity.metadata.uuid) })
                let first = try await client.execute(uri: try SyncTransport.pullURI(KnowledgeVector()) + "&limit=1", method: .get, headers: headers, body: nil)
                XCTAssertEqual(first.status, .ok)
                let link = first.headers[HTTPFields.Element.Name("Link")!]
                XCTAssertNil(link, "one transaction wrote all four: one page")
                // Bad vectors are 400s with the path.
                for bad in ["", "{", #"{"processes":[{"id":"x","clock":1}]}"#, #"{"processes":[{"id":"\#(server.processUUID)","clock":\#(server.clock + 1)}]}"#] {
                    var components = URLComponents()
                    components.queryItems = [URLQueryItem(name: "knowledgeVector", value: bad)]
                    let refused = try await client.execute(uri: "/carekit/v1/revisions?" + (components.percentEncodedQuery ?? ""), method: .get, headers: headers, body: nil)
                    XCTAssertEqual(refused.status, .badRequest, bad)
                    XCTAssertTrue(refused.text.contains("knowledgeVector"), refused.text)
                }
            }
        }
    }

    /// Pages of one entity, followed by their Link headers, give every revision; an outcome is never in
    /// one pull with a later version of itself (CareKit #700), and its newest version names the earlier ones.
    func testPagedPullsAndOneVersionOfAnOutcomePerPull() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            let task = try XCTUnwrap(fixture.tasks["Patient/pat-1"])
            try await fixture.test { client in
                let transport = SyncTransport(client: client, headers: headers)
                let a = SimulatedDevice(name: "A", start: AppServerFixture.day0)
                try await a.synchronize(transport)
                let v1 = a.record(task, occurrence: 1, value: 1)
                try await a.synchronize(transport)
                let v2 = a.record(task, occurrence: 1, value: 2)
                try await a.synchronize(transport)
                let other = a.record(task, occurrence: 2, value: 3)
                try await a.synchronize(transport)

                let whole = try await client.execute(uri: try SyncTransport.pullURI(KnowledgeVector()), method: .get, headers: headers, body: nil)
                let records = try CareKitJSON.makeDecoder().decode([CareKitRevisionRecord].self, from: Data(whole.text.utf8))
                let outcomes = records.flatMap(\.entities).filter { $0.type == .outcome }.map(\.entity)
                XCTAssertEqual(outcomes.map(\.metadata.uuid), [v2, other])
                XCTAssertEqual(outcomes.first?.metadata.previousVersionUUIDs, [v1])

                let first = try await client.execute(uri: try SyncTransport.pullURI(KnowledgeVector()) + "&limit=1", method: .get, headers: headers, body: nil)
                let link = try XCTUnwrap(first.headers[HTTPFields.Element.Name("Link")!])
                XCTAssertTrue(link.hasSuffix("; rel=\"next\""), link)
                let firstPage = try CareKitJSON.makeDecoder().decode([CareKitRevisionRecord].self, from: Data(first.text.utf8))
                XCTAssertNotEqual(firstPage.last?.entities, [], "no final record before the last page")
                let paged = try await transport.pull(KnowledgeVector(), limit: 1)
                XCTAssertEqual(paged.flatMap(\.entities).filter { $0.type == .outcome }.map(\.entity.metadata.uuid), [v2, other])
                XCTAssertEqual(paged.last?.knowledgeVector, records.last?.knowledgeVector)

                // A device's process the server has not learnt is in the final record at 0.
                let stranger = UUID()
                let unknown = try await transport.pull(KnowledgeVector([stranger: 5]))
                XCTAssertEqual(unknown.last?.knowledgeVector.processes[stranger], 0)
                XCTAssertEqual(unknown.last?.knowledgeVector.processes[a.process].map { $0 > 0 }, true)
            }
        }
    }

    func testHostileSizesAreRefused() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            let store = fixture.store
            try await fixture.test { client in
                let many = KnowledgeVector(Dictionary(uniqueKeysWithValues: (0...AppServerLimits.maximumVectorProcesses).map { _ in (UUID(), 1) }))
                let pulled = try await client.execute(uri: try SyncTransport.pullURI(many), method: .get, headers: headers, body: nil)
                XCTAssertEqual(pulled.status, .badRequest)
                XCTAssertTrue(pulled.text.contains("knowledgeVector.processes"), pulled.text)
                let pushed = try await client.execute(
                    uri: "/carekit/v1/revisions", method: .post, headers: headers, body: ByteBuffer(bytes: try SyncTransport.pushBody([], many)))
                XCTAssertEqual(pushed.status, .badRequest)
                var big = ByteBuffer(string: #"{"deviceKnowledge":{"processes":[]},"deviceRevisions":[{"knowledgeVector":{"processes":[]},"entities":[],"pad":""#)
                big.writeString(String(repeating: "x", count: AppServerLimits.maximumPushBytes))
                big.writeString(#""}]}"#)
                let huge = try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: headers, body: big)
                XCTAssertEqual(huge.status, .contentTooLarge)
                let records = try SyncTransport.pushBody(
                    Array(repeating: CareKitRevisionRecord(entities: [], knowledgeVector: KnowledgeVector()), count: AppServerLimits.maximumPushRecords + 1),
                    KnowledgeVector())
                let tooMany = try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: headers, body: ByteBuffer(bytes: records))
                XCTAssertEqual(tooMany.status, .badRequest)
            }
            XCTAssertEqual(try Self.outcomeCount(store), 0)
        }
    }

    func testPushRulesAndRefusalsStoreNothing() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            let own = try XCTUnwrap(fixture.tasks["Patient/pat-1"])
            let other = try XCTUnwrap(fixture.tasks["Patient/pat-2"])
            let store = fixture.store
            try await fixture.test { client in
                let transport = SyncTransport(client: client, headers: headers)
                let device = SimulatedDevice(name: "A", start: AppServerFixture.day0)
                try await device.synchronize(transport)
                let knowledge = device.knowledge
                func push(_ entities: [CareEntity], _ vector: KnowledgeVector? = nil) async throws -> TestResponse {
                    let body = try SyncTransport.pushBody(
                        [CareKitRevisionRecord(entities: entities.map(CareKitEntity.init), knowledgeVector: vector ?? knowledge)], vector ?? knowledge)
                    return try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: headers, body: ByteBuffer(bytes: body))
                }
                func outcome(_ task: CareTask, _ occurrence: Int) -> Outcome {
                    Outcome(taskUUID: task.uuid, taskOccurrenceIndex: occurrence, values: [OutcomeValue(.double(1))],
                            metadata: EntityMetadata(effectiveDate: AppServerFixture.day0, timezone: .gmt))
                }
                // Another patient's task: 403, nothing of theirs in the body.
                var response = try await push([.outcome(outcome(other, 1))])
                XCTAssertEqual(response.status, .forbidden, response.text)
                XCTAssertFalse(response.text.contains("pat-2"))
                // A task (or any kind but outcomes): 422, with the reason.
                response = try await push([.outcome(outcome(own, 1)), .task(own)])
                XCTAssertEqual(response.status, .unprocessableContent)
                XCTAssertEqual((response.json as? [String: String])?["error"], "outcomes-only")
                XCTAssertTrue(response.text.contains("deviceRevisions[0].entities[1].type"))
                // An occurrence the schedule does not have.
                for occurrence in [-3, Int.max, Int.min] {
                    response = try await push([.outcome(outcome(own, occurrence))])
                    XCTAssertEqual(response.status, .unprocessableContent, "occurrence \(occurrence)")
                }
                // The server's clock from the future.
                var future = knowledge
                future.processes[try store.serverClock().processUUID] = try store.serverClock().clock + 1
                response = try await push([.outcome(outcome(own, 1))], future)
                XCTAssertEqual(response.status, .badRequest)
                // Malformed: 400 with a path.
                let malformed = #"{"deviceKnowledge":{"processes":[]},"deviceRevisions":[{"knowledgeVector":{"processes":[]},"entities":[{"type":"outcome","object":{"taskUUID":"nope"}}]}]}"#
                response = try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: headers, body: ByteBuffer(string: malformed))
                XCTAssertEqual(response.status, .badRequest)
                XCTAssertTrue(response.text.contains("deviceRevisions[0].entities[0].object.taskUUID"), response.text)
                response = try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: headers, body: ByteBuffer(string: "[1,"))
                XCTAssertEqual(response.status, .badRequest)
                XCTAssertEqual(try Self.outcomeCount(store), 0)

                // Accepted: stored under the device's uuid, queued once.
                let good = outcome(own, 1)
                response = try await push([.outcome(good)])
                XCTAssertEqual(response.status, .ok, response.text)
                XCTAssertEqual((response.json as? [String: Any])?["stored"] as? Int, 1)
                XCTAssertEqual(try store.outcomes(.current).map(\.uuid), [good.uuid])
                // The same push again: the server moved on, so pull first; after a pull, nothing stored twice.
                response = try await push([.outcome(good)])
                XCTAssertEqual(response.status, .conflict)
                XCTAssertEqual((response.json as? [String: String])?["error"], "pull first")
                let records = try await transport.pull(knowledge)
                var caughtUp = knowledge
                for record in records { caughtUp.merge(with: record.knowledgeVector) }
                response = try await push([.outcome(good)], caughtUp)
                XCTAssertEqual(response.status, .ok, response.text)
                XCTAssertEqual((response.json as? [String: Any])?["stored"] as? Int, 0)
                XCTAssertEqual((response.json as? [String: Any])?["unchanged"] as? Int, 1)
                XCTAssertEqual(try Self.outcomeCount(store), 1)
                XCTAssertEqual(try store.outboxEntries(in: .pending, limit: 100).map(\.entityUUID), [good.uuid])
            }
        }
    }

    /// A push that makes two tips of one outcome (two edits of one version, as two offline devices make
    /// them) is kept as CareKit keeps it: both tips stored, each naming the version it replaced; a pull
    /// serves both, each with its own previous versions; the export waits; the device's resolution (one
    /// version naming both tips) makes one tip again, and the export goes out with it.
    func testConflictingTipsAreKeptServedAndResolvedByTheDevice() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            let task = try XCTUnwrap(fixture.tasks["Patient/pat-1"])
            let store = fixture.store
            try await fixture.test { client in
                let transport = SyncTransport(client: client, headers: headers)
                let device = SimulatedDevice(name: "A", start: AppServerFixture.day0)
                try await device.synchronize(transport)
                let first = device.record(task, occurrence: 1, value: 1)
                try await device.synchronize(transport)
                func version(_ value: Double, after previous: [UUID], at seconds: TimeInterval) -> Outcome {
                    let date = AppServerFixture.day0.addingTimeInterval(seconds)
                    var outcome = Outcome(
                        taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 1, values: [OutcomeValue(.double(value), createdDate: date)],
                        metadata: EntityMetadata(effectiveDate: date, previousVersionUUIDs: previous, createdDate: date, updatedDate: date, timezone: .gmt))
                    outcome.metadata.uuid = UUID()
                    return outcome
                }
                func caughtUp() async throws -> KnowledgeVector {
                    var knowledge = device.knowledge
                    for record in try await transport.pull(knowledge) { knowledge.merge(with: record.knowledgeVector) }
                    return knowledge
                }
                // Two edits of `first`, pushed in one push in the order CareKit may group them: tips 2.
                let left = version(2, after: [first], at: 100)
                let right = version(3, after: [first], at: 200)
                var knowledge = try await caughtUp()
                var status = try await transport.push(
                    [CareKitRevisionRecord(entities: [.init(.outcome(right)), .init(.outcome(left))], knowledgeVector: knowledge)], knowledge)
                XCTAssertEqual(status, 200)
                let id = Outcome.id(taskUUID: task.uuid, occurrence: 1)
                XCTAssertEqual(Set(try store.outcomes(.current).filter { $0.id == id }.map(\.uuid)), [left.uuid, right.uuid])
                let history = try store.history(.outcome, id: id)
                XCTAssertEqual(history.first { $0.metadata.uuid == left.uuid }?.metadata.previousVersionUUIDs, [first])
                XCTAssertEqual(history.first { $0.metadata.uuid == right.uuid }?.metadata.previousVersionUUIDs, [first])
                XCTAssertTrue(try store.dueOutboxEntries(at: Date(), limit: 100).allSatisfy { $0.entityID != id }, "an export of a conflict")
                // A pull from nothing serves both tips (not `first`, which both descend from), each naming `first`.
                let served = try await transport.pull(KnowledgeVector()).flatMap(\.entities).filter { $0.type == .outcome }.map(\.entity)
                XCTAssertEqual(Set(served.map(\.metadata.uuid)), [left.uuid, right.uuid])
                XCTAssertTrue(served.allSatisfy { $0.metadata.previousVersionUUIDs == [first] })

                // The device meets the conflict at its next sync and resolves it as OCKStore does.
                try await device.synchronize(transport)
                let tips = try XCTUnwrap(device.outcomeTips[id])
                XCTAssertEqual(tips.count, 1)
                XCTAssertEqual(device.resolvedConflicts, 1)
                XCTAssertEqual(Set(try store.outcomes(.current).filter { $0.id == id }.map(\.uuid)), tips)
                let resolution = try XCTUnwrap(try store.history(.outcome, id: id).last)
                XCTAssertEqual(Set(resolution.metadata.previousVersionUUIDs), [left.uuid, right.uuid])
                XCTAssertEqual(try store.dueOutboxEntries(at: Date(), limit: 100).filter { $0.entityID == id }.count, 4)

                // A version that names another outcome's version is refused, and stores nothing.
                let other = device.record(task, occurrence: 2, value: 5)
                try await device.synchronize(transport)
                knowledge = try await caughtUp()
                let stray = version(6, after: [other], at: 300)
                status = try await transport.push([CareKitRevisionRecord(entities: [.init(.outcome(stray))], knowledgeVector: knowledge)], knowledge)
                XCTAssertEqual(status, 422)
            }
        }
    }

    func testACarePlanChangedOnTheServerReachesTheDeviceAsNewTaskVersions() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            let task = try XCTUnwrap(fixture.tasks["Patient/pat-1"])
            let store = fixture.store
            try await fixture.test { client in
                let transport = SyncTransport(client: client, headers: headers)
                let device = SimulatedDevice(name: "A", start: AppServerFixture.day0)
                try await device.synchronize(transport)
                XCTAssertEqual(device.tasks().map(\.uuid), [task.uuid])
                // What an import of a changed CarePlan writes: a new version of its task.
                var changed = task
                changed.title = "Changed on the server"
                changed.metadata.effectiveDate = AppServerFixture.day0.addingTimeInterval(86_400 * 3)
                var batch = StoreBatch()
                batch.update(changed)
                try store.apply(batch)
                try await device.synchronize(transport)
                let tasks = device.tasks()
                XCTAssertEqual(tasks.map(\.title), ["Changed on the server"])
                XCTAssertNotEqual(tasks.first?.uuid, task.uuid)
                XCTAssertEqual(tasks.first?.previousVersionUUIDs, [task.uuid])
            }
        }
    }

    /// Two devices of one patient, each recording outcomes offline and editing the same ones, synchronizing
    /// (pull, then push, with other steps between) in 200 seeded random orders over one SQLite store file
    /// each, and in the first 20 of those orders over a PostgreSQL database each (a database per order is
    /// about a second: 200 would add minutes): devices and store end with the same single tip of every
    /// outcome, every version either device wrote stored once naming the versions its author named (the
    /// store keeps the devices' version graph, their conflict resolutions included), and each stored
    /// version queued for export once.
    func testTwoDevicesConvergeInTwoHundredRandomInterleavings() async throws {
        for kind in TestStoreKind.allCases {
            let seeds = kind == .sqlite ? 200 : 20
            var figures = (syncs: 0, refused: 0, conflicts: 0, versions: 0, merges: 0)
            for seed in 0..<seeds {
                guard let tested = try makeStore(kind, sqliteFile: true) else { break }
                let fixture = try AppServerFixture(tested)
                let headers = fixture.bearer(try fixture.token())
                let store = fixture.store
                let box = ResultBox()
                try await fixture.test { client in
                    box.value = try await Self.interleave(seed: UInt64(seed), transport: SyncTransport(client: client, headers: headers), store: store, kind: kind)
                }
                // Its connections go now (its database when the test ends), not 20 pools at once.
                tested.postgres?.close()
                let result = box.value
                figures.syncs += result.0
                figures.refused += result.1
                figures.conflicts += result.2
                figures.versions += result.3
                figures.merges += result.4
            }
            guard figures.syncs > 0 else { continue }
            print("two devices, \(seeds) interleavings on \(kind): \(figures.syncs) syncs, \(figures.refused) pushes refused (pull first), \(figures.conflicts) conflicts resolved, \(figures.versions) outcome versions stored, \(figures.merges) of them naming several tips")
            XCTAssertGreaterThan(figures.refused, 0, "\(kind): no interleaving met the pull-first rule")
            XCTAssertGreaterThan(figures.conflicts, 0, "\(kind): no interleaving made a conflict")
            XCTAssertGreaterThan(figures.merges, 0, "\(kind): no resolution reached the store as a version naming several tips")
        }
    }

    /// One interleaving: (syncs, refused pushes, conflicts resolved, versions stored, versions naming several).
    private static func interleave(seed: UInt64, transport: SyncTransport, store: AnyTestStore, kind: TestStoreKind) async throws -> (Int, Int, Int, Int, Int) {
        var random = SeededRandom(seed: seed)
        let a = SimulatedDevice(name: "A", start: AppServerFixture.day0)
        let b = SimulatedDevice(name: "B", start: AppServerFixture.day0.addingTimeInterval(0.5))
        try await a.synchronize(transport)
        try await b.synchronize(transport)
        guard let task = a.tasks().first, b.tasks().first?.uuid == task.uuid else {
            XCTFail("\(kind) seed \(seed): the devices did not get the task")
            return (0, 0, 0, 0, 0)
        }
        var syncs = 2
        syncs += try await DeviceInterleaving.randomSteps(14, a, b, over: transport, using: &random) { device, random in
            device.record(task, occurrence: Int.random(in: 0..<3, using: &random), value: Double(Int.random(in: 0..<100, using: &random)))
        }
        // Then each syncs in turn until nothing moves.
        func storeTips() throws -> [String: Set<UUID>] {
            Dictionary(grouping: try store.outcomes(.current), by: \.id).mapValues { Set($0.map(\.uuid)) }
        }
        syncs += try await DeviceInterleaving.settle(a, b, over: transport, storeTips: storeTips)
        let storeTips = try storeTips()
        XCTAssertEqual(a.outcomeTips, b.outcomeTips, "\(kind) seed \(seed)")
        XCTAssertEqual(a.outcomeTips, storeTips, "\(kind) seed \(seed)")
        XCTAssertTrue(storeTips.values.allSatisfy { $0.count == 1 }, "\(kind) seed \(seed)")
        var storedUUIDs: [UUID] = []
        var merges = 0
        try store.forEachVersion(.outcome) { storedUUIDs.append($0.metadata.uuid) }
        XCTAssertEqual(Set(storedUUIDs).count, storedUUIDs.count, "\(kind) seed \(seed): a version stored twice")
        let written = Set(a.versions.values.filter { $0.entity.kind == .outcome }.map(\.entity.metadata.uuid))
            .union(b.versions.values.filter { $0.entity.kind == .outcome }.map(\.entity.metadata.uuid))
        XCTAssertEqual(Set(storedUUIDs), written, "\(kind) seed \(seed): lost or invented versions")
        // The store keeps the graph the devices made: each version names what its author named.
        try store.forEachVersion(.outcome) { stored in
            let copies = [a, b].compactMap { $0.versions[stored.metadata.uuid]?.entity.metadata.previousVersionUUIDs }
            XCTAssertTrue(copies.contains { Set($0) == Set(stored.metadata.previousVersionUUIDs) }, "\(kind) seed \(seed): a version's previous versions changed")
            if stored.metadata.previousVersionUUIDs.count > 1 { merges += 1 }
        }
        let queued = try store.outboxEntries(in: .pending, limit: 10_000).map(\.entityUUID)
        XCTAssertEqual(queued.count, storedUUIDs.count, "\(kind) seed \(seed)")
        XCTAssertEqual(Set(queued), Set(storedUUIDs), "\(kind) seed \(seed)")
        let conflicts = a.resolvedConflicts + b.resolvedConflicts
        return (syncs, a.refusedPushes + b.refusedPushes, conflicts, storedUUIDs.count, merges)
    }
}

private final class ResultBox: @unchecked Sendable {
    var value = (0, 0, 0, 0, 0)
}
