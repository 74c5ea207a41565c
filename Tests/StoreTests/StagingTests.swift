import CareModel
import Foundation
import Store
import StoreTestSupport
import XCTest

/// Raw resources, links, checkpoints, the export outbox and dead letters.
final class StagingTests: XCTestCase {
    private let server = "https://ehr.example/fhir"

    func testSameRawContentIsKeptOnce() throws {
        try forEachStore { tested in
            let store = tested.store
            let body = Data(#"{"resourceType":"CarePlan","id":"42"}"#.utf8)
            var batch = StoreBatch()
            batch.record(SourceResource(sourceSystem: server, resourceType: "CarePlan", resourceID: "42", versionID: "1", body: body))
            XCTAssertEqual(try store.apply(batch).sourcesRecorded, 1)
            XCTAssertEqual(try store.apply(batch).sourcesUnchanged, 1)
            var changed = StoreBatch()
            changed.record(SourceResource(sourceSystem: server, resourceType: "CarePlan", resourceID: "42", versionID: "2", body: body + Data(" ".utf8)))
            XCTAssertEqual(try store.apply(changed).sourcesRecorded, 1)
            let kept = try store.sourceResources(resourceType: "CarePlan", resourceID: "42")
            XCTAssertEqual(kept.map(\.versionID), ["1", "2"])
            XCTAssertEqual(kept.first?.body, body)
            XCTAssertEqual(kept.first?.contentHash, ContentHash.of(body))
        }
    }

    /// Which activities of a CarePlan have a `detail` is kept with each content of it; the last content
    /// kept answers, "none" (a CarePlan with no such activity) told from "not recorded".
    func testActivitiesWithADetailAreKeptWithTheirCarePlan() throws {
        try forEachStore { tested in
            let store = tested.store
            func keep(_ body: String, _ activities: [String]?) throws {
                var batch = StoreBatch()
                batch.record(SourceResource(sourceSystem: server, resourceType: "CarePlan", resourceID: "42", body: Data(body.utf8), activitiesWithDetail: activities))
                try store.apply(batch)
            }
            XCTAssertNil(try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: "42"), "nothing kept")
            try keep("first", ["CarePlan.activity[0]", "CarePlan.activity[2]"])
            XCTAssertEqual(try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: "42"), ["CarePlan.activity[0]", "CarePlan.activity[2]"])
            try keep("second", [])
            XCTAssertEqual(try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: "42"), [])
            try keep("third", nil)
            XCTAssertNil(try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: "42"))
            XCTAssertEqual(
                try store.sourceResources(resourceType: "CarePlan", resourceID: "42").map(\.activitiesWithDetail),
                [["CarePlan.activity[0]", "CarePlan.activity[2]"], [], nil])
            XCTAssertNil(try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: "43"))
        }
    }

    func testContentHashIsSHA256() {
        XCTAssertEqual(ContentHash.of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(ContentHash.of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(
            ContentHash.of(String(repeating: "a", count: 1000)),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
        // FIPS 180-2's two-block example, then lengths around the block and padding boundaries.
        XCTAssertEqual(
            ContentHash.of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        let expected = [
            55: "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318",
            56: "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a",
            63: "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34",
            64: "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
            65: "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0",
            119: "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb",
            128: "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e",
        ]
        for (length, hash) in expected {
            XCTAssertEqual(ContentHash.of(String(repeating: "a", count: length)), hash, "\(length) bytes")
        }
    }

    func testLinksFindEntitiesFromAResourceAndBack() throws {
        try forEachStore { tested in
            let store = tested.store
            var batch = StoreBatch()
            batch.link(ResourceLink(sourceSystem: server, resourceType: "CarePlan", resourceID: "42", entityKind: .carePlan, entityID: "cp1"))
            batch.link(ResourceLink(sourceSystem: server, resourceType: "CarePlan", resourceID: "42", entityKind: .task, entityID: "t1"))
            batch.link(ResourceLink(sourceSystem: server, resourceType: "CarePlan", resourceID: "42", entityKind: .task, entityID: "t1"))
            try store.apply(batch)
            XCTAssertEqual(Set(try store.links(resourceType: "CarePlan", resourceID: "42").map(\.entityID)), ["cp1", "t1"])
            // From an entity back to its resources: a read only SQLite's store offers (not in the Store protocol).
            if let sqlite = tested.sqlite {
                XCTAssertEqual(try sqlite.links(entityKind: .task, entityID: "t1").map(\.resourceID), ["42"])
            }
            batch = StoreBatch()
            batch.link(ResourceLink(sourceSystem: server, resourceType: "Patient", resourceID: "42", entityKind: .patient, entityID: "p1"))
            try store.apply(batch)
            let many = try store.links(ofResources: [("CarePlan", "42"), ("Patient", "42"), ("Patient", "unknown")])
            XCTAssertEqual(Set(many.map { "\($0.resourceType)/\($0.resourceID) \($0.entityID)" }), ["CarePlan/42 cp1", "CarePlan/42 t1", "Patient/42 p1"])
            XCTAssertEqual(try store.links(ofResources: []), [])
        }
    }

    func testCheckpointMovesPerServerAndType() throws {
        try forEachStore { tested in
            let store = tested.store
            var batch = StoreBatch()
            batch.setCheckpoint(SyncCheckpoint(server: server, resourceType: "Observation", cursor: "2025-01-01T00:00:00Z"))
            batch.setCheckpoint(SyncCheckpoint(server: server, resourceType: "CarePlan", cursor: "2025-02-01T00:00:00Z"))
            try store.apply(batch)
            var next = StoreBatch()
            next.setCheckpoint(SyncCheckpoint(server: server, resourceType: "Observation", cursor: "2025-03-01T00:00:00Z"))
            try store.apply(next)
            XCTAssertEqual(try store.checkpoint(server: server, resourceType: "Observation")?.cursor, "2025-03-01T00:00:00Z")
            XCTAssertEqual(try store.checkpoint(server: server, resourceType: "CarePlan")?.cursor, "2025-02-01T00:00:00Z")
            XCTAssertNil(try store.checkpoint(server: "https://other.example", resourceType: "CarePlan"))
            XCTAssertEqual(try store.statistics().checkpoints, 2, "\(tested.kind)")
        }
    }

    func testOutboxEntryGoesPendingSentFailedSentAcknowledged() throws {
        try forEachStore { tested in
            let store = tested.store
            let uuid = UUID()
            let entry = OutboxEntry(destination: server, entityKind: .outcome, entityID: "x_1", entityUUID: uuid, payload: Data("{}".utf8))
            var enqueue = StoreBatch()
            enqueue.enqueue(entry)
            let id = try XCTUnwrap(store.apply(enqueue).outboxEntryIDs.first)
            XCTAssertEqual(try store.apply(enqueue).outboxEntryIDs, [id], "the same version for the same destination is queued once")
            XCTAssertEqual(try store.outboxEntry(id: id)?.state, .pending)

            let t0 = StoreFixtures.day(0)
            try step(store, id, .sent(at: t0))
            try step(store, id, .failed(error: "HTTP 503", retryAt: t0.addingTimeInterval(60), at: t0))
            var failed = try XCTUnwrap(store.outboxEntry(id: id))
            XCTAssertEqual(failed.state, .failed)
            XCTAssertEqual(failed.attempts, 1)
            XCTAssertEqual(failed.lastError, "HTTP 503")
            XCTAssertEqual(failed.nextAttemptDate, t0.addingTimeInterval(60))
            XCTAssertEqual(try store.dueOutboxEntries(at: t0.addingTimeInterval(30), limit: 10), [], "not due before its retry time")
            XCTAssertEqual(try store.dueOutboxEntries(at: t0.addingTimeInterval(60), limit: 10).map(\.id), [id])

            try step(store, id, .sent(at: t0.addingTimeInterval(61)))
            try step(store, id, .acknowledged(at: t0.addingTimeInterval(62)))
            failed = try XCTUnwrap(store.outboxEntry(id: id))
            XCTAssertEqual(failed.state, .acknowledged)
            XCTAssertEqual(failed.attempts, 2)
            XCTAssertNil(failed.lastError)
            XCTAssertEqual(try store.statistics().outbox[.acknowledged], 1)
        }
    }

    func testOutboxRefusesIllegalTransitions() throws {
        try forEachStore { tested in
            let store = tested.store
            var enqueue = StoreBatch()
            enqueue.enqueue(OutboxEntry(destination: server, entityKind: .outcome, entityID: "x_1", entityUUID: UUID()))
            let id = try XCTUnwrap(store.apply(enqueue).outboxEntryIDs.first)
            let now = StoreFixtures.day(0)
            XCTAssertThrowsStoreError(try step(store, id, .acknowledged(at: now)), .invalidOutboxTransition(id: id, from: .pending, to: .acknowledged))
            try step(store, id, .sent(at: now))
            XCTAssertThrowsStoreError(try step(store, id, .sent(at: now)), .invalidOutboxTransition(id: id, from: .sent, to: .sent))
            try step(store, id, .acknowledged(at: now))
            XCTAssertThrowsStoreError(try step(store, id, .failed(error: "late", retryAt: nil, at: now)), .invalidOutboxTransition(id: id, from: .acknowledged, to: .failed))
            XCTAssertThrowsStoreError(try step(store, 999, .sent(at: now)), .outboxEntryNotFound(id: 999))
        }
    }


    /// The entries of many versions read at once (more than one statement's worth), for one destination
    /// only; an entry may have reached it once sent, even when the send then failed, not before.
    func testOutboxEntriesOfManyVersionsAndWhichMayHaveReachedTheirDestination() throws {
        try forEachStore { tested in
            let store = tested.store
            let uuids = (0..<1_203).map { _ in UUID() }
            var enqueue = StoreBatch()
            for (number, uuid) in uuids.enumerated() {
                enqueue.enqueue(OutboxEntry(destination: server, entityKind: .outcome, entityID: "x_\(number)", entityUUID: uuid))
            }
            enqueue.enqueue(OutboxEntry(destination: "https://other.example", entityKind: .outcome, entityID: "x_0", entityUUID: uuids[0]))
            let ids = try store.apply(enqueue).outboxEntryIDs
            let asked = Array(uuids[1...]) + [UUID()]
            let found = try store.outboxEntries(destination: server, entityUUIDs: asked + asked.prefix(3))
            XCTAssertEqual(Set(found.map(\.entityUUID)), Set(uuids[1...]), "each queued version once, none of another destination")
            XCTAssertTrue(found.allSatisfy { $0.destination == server })

            let now = StoreFixtures.day(0)
            try step(store, ids[1], .sent(at: now))
            try step(store, ids[2], .sent(at: now))
            try step(store, ids[2], .failed(error: "no answer", retryAt: now.addingTimeInterval(60), at: now))
            try step(store, ids[3], .failed(error: "refused", retryAt: nil, at: now))
            try step(store, ids[4], .sent(at: now))
            try step(store, ids[4], .acknowledged(at: now))
            let reached = try store.outboxEntries(destination: server, entityUUIDs: Array(uuids[1...5])).filter(\.mayHaveReachedDestination)
            XCTAssertEqual(Set(reached.map(\.entityUUID)), [uuids[1], uuids[2], uuids[4]], "sent, sent then failed, acknowledged; not refused unsent, nor pending")
        }
    }


    /// A batch moving many entries by the same step (what an export commits) is applied as a few bulk
    /// UPDATEs; it must keep the one-by-one semantics: all moved, or nothing and the first offender's error.
    func testManyEntriesTakingTheSameStepBehaveAsOneByOne() throws {
        try forEachStore { tested in
            let store = tested.store
            var enqueue = StoreBatch()
            for number in 0..<1_203 {  // more than two UPDATEs' worth
                enqueue.enqueue(OutboxEntry(destination: server, entityKind: .outcome, entityID: "x_\(number)", entityUUID: UUID()))
            }
            let ids = try store.apply(enqueue).outboxEntryIDs
            let now = StoreFixtures.day(0)
            try step(store, ids[700], .sent(at: now))

            // One entry already sent, far into the run: nothing moves, and its error is the one reported.
            var all = StoreBatch()
            for id in ids { all.transition(outboxEntry: id, .sent(at: now)) }
            XCTAssertThrowsStoreError(try store.apply(all), .invalidOutboxTransition(id: ids[700], from: .sent, to: .sent))
            XCTAssertEqual(try store.statistics().outbox[.pending], ids.count - 1, "the refused batch moved nothing")

            // An id twice in a run: the second step meets the state the first one left.
            var twice = StoreBatch()
            for id in ids[0..<3] + [ids[1]] { twice.transition(outboxEntry: id, .sent(at: now)) }
            XCTAssertThrowsStoreError(try store.apply(twice), .invalidOutboxTransition(id: ids[1], from: .sent, to: .sent))
            XCTAssertEqual(try store.statistics().outbox[.pending], ids.count - 1)

            // The others move together, with the step's effects on each.
            var rest = StoreBatch()
            for id in ids where id != ids[700] { rest.transition(outboxEntry: id, .sent(at: now)) }
            XCTAssertEqual(try store.apply(rest).outboxTransitions, ids.count - 1)
            XCTAssertEqual(try store.statistics().outbox[.sent], ids.count)
            let moved = try XCTUnwrap(store.outboxEntry(id: ids[1_202]))
            XCTAssertEqual(moved.state, .sent)
            XCTAssertEqual(moved.attempts, 1)
            XCTAssertEqual(try store.dueOutboxEntries(at: now, limit: 10), [])
        }
    }
    func testFailedWithoutRetryIsNeverDueAndCanBeDeadLettered() throws {
        try forEachStore { tested in
            let store = tested.store
            var enqueue = StoreBatch()
            enqueue.enqueue(OutboxEntry(destination: server, entityKind: .outcome, entityID: "x_1", entityUUID: UUID()))
            let id = try XCTUnwrap(store.apply(enqueue).outboxEntryIDs.first)
            let now = StoreFixtures.day(0)
            try step(store, id, .sent(at: now))
            var giveUp = StoreBatch()
            giveUp.transition(outboxEntry: id, .failed(error: "HTTP 422: invalid code", retryAt: nil, at: now))
            giveUp.deadLetter(DeadLetter(system: server, resourceType: "Observation", outboxEntryID: id, reason: "rejected by server", detail: "HTTP 422: invalid code"))
            let summary = try store.apply(giveUp)
            XCTAssertEqual(summary.deadLetterIDs.count, 1)
            XCTAssertEqual(try store.dueOutboxEntries(at: now.addingTimeInterval(1e9), limit: 10), [])
            let letters = try store.deadLetters(limit: 10)
            XCTAssertEqual(letters.map(\.reason), ["rejected by server"])
            XCTAssertEqual(letters.first?.outboxEntryID, id)
        }
    }

    private func step(_ store: any Store, _ id: Int64, _ transition: OutboxTransition) throws {
        var batch = StoreBatch()
        batch.transition(outboxEntry: id, transition)
        try store.apply(batch)
    }
}
