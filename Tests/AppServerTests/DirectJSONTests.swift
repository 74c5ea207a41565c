@testable import AppServer
import CareModel
import Foundation
import Hummingbird
import Store
import StoreTestSupport
import HummingbirdTesting
import XCTest

/// The answers the app server writes directly, without the generic encoder, for speed (issue 49, item 4):
/// each must be the same bytes the generic encoder writes for the same value.
final class DirectJSONTests: XCTestCase {
    /// An up-to-date pull's page, the final record alone: the bytes of `CareKitJSON.encode`, for vectors of
    /// no process, one, and many (in an order that is not their UUIDs' text), clocks 0 and large.
    func testFinalRecordIsTheGenericEncodersBytes() throws {
        var vectors: [KnowledgeVector] = [KnowledgeVector(), KnowledgeVector([UUID(): 0])]
        var many: [UUID: Int] = [:]
        for clock in [7, 0, 1, Int.max, 31, 1_000_000_007] { many[UUID()] = clock }
        vectors.append(KnowledgeVector(many))
        vectors.append(KnowledgeVector([UUID(uuidString: "00000000-0000-0000-0000-00000000000A")!: 3, UUID(uuidString: "FFFFFFFF-0000-0000-0000-000000000001")!: 2]))
        for vector in vectors {
            let generic = try CareKitJSON.encode([CareKitRevisionRecord(entities: [], knowledgeVector: vector)])
            XCTAssertEqual(String(decoding: SyncRoutes.finalRecordJSON(vector), as: UTF8.self), String(decoding: generic, as: UTF8.self))
        }
    }

    /// A day view's body, written as an array of each event's JSON from the per-server caches: the bytes of
    /// `CareKitJSON.encode` of its ``EventView``s, cold and warm, with and without outcomes, with text to
    /// escape, and again after an event's outcome or task changed (the cache must not serve the old bytes).
    func testDayViewBodyIsTheGenericEncodersBytes() throws {
        try forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let routes = ViewRoutes(store: PooledAppStore(fixture.store, writeThreads: 1))
            let links = try PatientData(store: fixture.store, patientID: "Patient/pat-1").links()
            let day = try XCTUnwrap(DayText.interval("2025-03-02", in: AppServerFixture.utc))
            let week = DateInterval(start: day.start, duration: 7 * 86_400)
            let stored = try fixture.store.events(patientID: "Patient/pat-1", in: week)
            XCTAssertEqual(stored.count, 7)
            func generic(_ events: [Event]) throws -> String {
                let views = try events.map { event in
                    EventView(event, task: try PreEncodedJSON(CareKitWireObject(.task(EventView.served(event.task, links: links)))))
                }
                return String(decoding: try CareKitJSON.encode(views), as: UTF8.self)
            }
            func direct(_ events: [Event]) throws -> String {
                String(decoding: try routes.eventsJSON(events, links: links), as: UTF8.self)
            }
            func outcome(_ event: Event, _ values: [OutcomeValue]) -> Outcome {
                Outcome(taskUUID: event.task.uuid, taskOccurrenceIndex: event.scheduleEvent.occurrence, values: values,
                        metadata: EntityMetadata(effectiveDate: event.scheduleEvent.start, timezone: AppServerFixture.utc))
            }
            var recorded = stored
            recorded[1].outcome = outcome(recorded[1], [OutcomeValue(.double(7.25)), OutcomeValue(.text("a \"quoted\" / \\ é \u{1F600}\n"))])
            recorded[3].outcome = outcome(recorded[3], [OutcomeValue(.integer(-3))])
            var changed = recorded
            changed[1].outcome = outcome(changed[1], [OutcomeValue(.double(8))])
            changed[3].outcome = nil
            // A task version is one value in one read: renamed on every event of it.
            for index in changed.indices { changed[index].task.title = "Renamed \"task\" </script>" }
            for events in [[], stored, stored, recorded, recorded, changed, changed, stored] {
                XCTAssertEqual(try direct(events), try generic(events))
            }
            XCTAssertEqual(routes.encodedEvents.count, 7)
        }
    }

    /// A pull checks its patient in its own read of the revision log, not in the middleware: a token of a
    /// patient not in the store is still refused first, with the 403 of every other route (same body, same
    /// audit entry), whatever the query (valid, not a vector, missing, a bad cursor or limit).
    func testAPullOfAPatientNotInTheStoreIsTheSame403AsAnyRoute() async throws {
        try await assertTheSame403AsAnyRoute([
            #"/carekit/v1/revisions?knowledgeVector={"processes":[]}"#, "/carekit/v1/revisions?knowledgeVector=nonsense",
            "/carekit/v1/revisions", #"/carekit/v1/revisions?knowledgeVector={"processes":[]}&page=-1"#,
            #"/carekit/v1/revisions?knowledgeVector={"processes":[]}&limit=0"#,
        ])
    }

    /// A day view checks its patient in its own read too: a token of a patient not in the store is
    /// refused first, with the 403 of every other route, whatever the date and zone (valid, missing, not a
    /// date, an unknown zone), and audited alike.
    func testADayViewOfAPatientNotInTheStoreIsTheSame403AsAnyRoute() async throws {
        try await assertTheSame403AsAnyRoute([
            "/carekit/v1/events?date=2025-03-02", "/carekit/v1/events", "/carekit/v1/events?date=2025-02-30",
            "/carekit/v1/events?date=2025-03-02&timeZone=Nowhere/Else",
        ])
    }

    /// `GET uris` with a token of a patient not in the store, on each store: each is refused with the 403
    /// of `GET /carekit/v1/tasks` (same body), and audited alike (same status and detail).
    private func assertTheSame403AsAnyRoute(_ uris: [String], file: StaticString = #filePath, line: UInt = #line) async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token("Patient/nobody"))
            try await fixture.test { client in
                let reference = try await client.execute(uri: "/carekit/v1/tasks", method: .get, headers: headers)
                XCTAssertEqual(reference.status, .forbidden, file: file, line: line)
                for uri in uris {
                    let response = try await client.execute(uri: uri, method: .get, headers: headers)
                    XCTAssertEqual(response.status, .forbidden, uri, file: file, line: line)
                    XCTAssertEqual(response.text, reference.text, uri, file: file, line: line)
                }
            }
            let entries = try fixture.store.auditEntries(patientID: "Patient/nobody", limit: 100)
            XCTAssertEqual(entries.count, uris.count + 1, file: file, line: line)
            XCTAssertEqual(Set(entries.map(\.status)), [403], file: file, line: line)
            XCTAssertEqual(Set(entries.map(\.detail)).count, 1, "\(entries.map(\.detail))", file: file, line: line)
        }
    }

    /// A pull of a patient in the store, the check made in its read: answered as before.
    func testAPullOfAPatientInTheStoreIsAnswered() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token("Patient/pat-1"))
            try await fixture.test { client in
                let response = try await client.execute(uri: #"/carekit/v1/revisions?knowledgeVector={"processes":[]}"#, method: .get, headers: headers)
                XCTAssertEqual(response.status, .ok, response.text)
                let records = try XCTUnwrap(response.json as? [[String: Any]])
                XCTAssertFalse(records.isEmpty)
            }
        }
    }

    /// The day view's task cache gives the bytes of the task it is asked for: the same as encoding it now,
    /// for a version seen before, for the same version changed (another link, another title), and past
    /// its capacity, which it never exceeds.
    func testTheTaskCacheGivesTheBytesOfTheTaskServed() throws {
        let fixture = try AppServerFixture()
        let cache = EncodedTaskCache(capacity: 2)
        let original = try XCTUnwrap(fixture.tasks["Patient/pat-1"])
        var relinked = original
        relinked.carePlanUUID = UUID()
        var retitled = original
        retitled.title = "Another title"
        let other = try XCTUnwrap(fixture.tasks["Patient/pat-2"])
        var third = other
        third.uuid = UUID()
        for task in [original, original, relinked, retitled, original, other, third, original, other] {
            let cached = try CareKitJSON.encode(cache.json(of: task))
            XCTAssertEqual(cached, try CareKitJSON.encode(CareKitWireObject(.task(task))), task.title ?? "")
            XCTAssertLessThanOrEqual(cache.count, 2)
        }
    }
}
