import CareModel
import Foundation
import Logging
import PostgresNIO
import PostgresStore
import Store
import TestSupport
import XCTest

/// The care-entity reads of ``PostgreSQLStore`` give what ``SQLiteStore``'s give, in the same order: the
/// same batches are written to both, and every read is asked of both and compared (uuids the stores make
/// themselves compared by label, ``ReadStorePair``).
final class EntityReadContractTests: XCTestCase {
    private lazy var both = BothStores(for: self)

    override func tearDown() {
        both.stop()
    }

    /// Two patients with care plans, contacts, tasks of plans and of none, outcomes, and later versions:
    /// updates, tombstones, a task whose new version owns the time from day 5.
    private struct World {
        var p1 = ReadFixtures.patient("p1")
        var p2 = ReadFixtures.patient(
            "p2", given: "Grace",
            provenance: Provenance(sourceSystem: "https://ehr.example/fhir", fhirType: "Patient", fhirID: "123", versionID: "1", contentHash: "aaa"))
        lazy var cp1 = ReadFixtures.carePlan("cp1", patient: p1)
        lazy var cp2 = ReadFixtures.carePlan("cp2", patient: p2, title: "Diabetes")
    }

    private func writeWorld(_ pair: ReadStorePair) throws -> (t1: CareTask, t1v2: CareTask, t3: CareTask, log: CareTask) {
        var world = World()
        let (p1, p2, cp1, cp2) = (world.p1, world.p2, world.cp1, world.cp2)
        let t1 = try ReadFixtures.task("t1", plan: cp1)
        let t2 = try ReadFixtures.task("t2", plan: cp1, hour: 20, endDay: 10)
        let t3 = try ReadFixtures.task("t3", plan: cp2, hour: 7)
        let log = try ReadFixtures.log(of: "p1")
        try pair.apply(ReadFixtures.batch { batch in
            batch.add(p1)
            batch.add(p2)
            batch.add(cp1)
            batch.add(cp2)
            batch.add(Contact(id: "c1", name: PersonName(givenName: "Dr", familyName: "Who"), role: "GP", carePlanUUID: cp1.uuid,
                              metadata: EntityMetadata(effectiveDate: ReadFixtures.day0, timezone: ReadFixtures.utc)))
            batch.add(Contact(id: "c2", name: PersonName(givenName: "Shared", familyName: "Nurse"),
                              metadata: EntityMetadata(effectiveDate: ReadFixtures.day0, timezone: ReadFixtures.utc)))
            batch.add(t1)
            batch.add(t2)
            batch.add(t3)
            batch.add(try ReadFixtures.order("MedicationRequest/mr1", of: "p1", hour: 21))
            batch.add(try ReadFixtures.order("MedicationRequest/mr2", of: "p2", hour: 21, endDay: 3))
            batch.add(log)
        })
        try pair.apply(ReadFixtures.batch { batch in
            for occurrence in 0..<5 { batch.add(ReadFixtures.outcome(t1, occurrence: occurrence, values: occurrence == 2 ? 2 : 0)) }
            batch.add(ReadFixtures.outcome(t3, occurrence: 1, value: 6.5))
            batch.add(Outcome(taskUUID: log.uuid, taskOccurrenceIndex: 1, values: [OutcomeValue(.double(72.5), units: "kg", kind: "29463-7")],
                              metadata: EntityMetadata(effectiveDate: ReadFixtures.day(1, hour: 7), timezone: ReadFixtures.utc)))
        })
        // A new version of t1 owns the time from day 5 (at 09:00 rather than 08:00).
        var t1v2 = try ReadFixtures.task("t1", plan: cp1, hour: 9, title: "Measure blood pressure (morning)", effective: ReadFixtures.day(5))
        t1v2.metadata.uuid = UUID()
        try pair.apply(ReadFixtures.batch { batch in
            batch.update(ReadFixtures.patient("p1", given: "Second", effective: ReadFixtures.day(10)))
            batch.update(t1v2)
            batch.delete(.contact, id: "c1", at: ReadFixtures.day(12))
            var changed = ReadFixtures.outcome(t1, occurrence: 1, value: 130)
            changed.metadata.effectiveDate = ReadFixtures.day(2)
            batch.update(changed)
            batch.delete(.outcome, id: Outcome.id(taskUUID: t1.uuid, occurrence: 3), at: ReadFixtures.day(4))
        })
        try pair.apply(ReadFixtures.batch { batch in
            for occurrence in 6..<9 { batch.add(ReadFixtures.outcome(t1v2, occurrence: occurrence)) }
            batch.update(ReadFixtures.patient("p1", given: "Third", effective: ReadFixtures.day(20)))
            batch.delete(.patient, id: "p2", at: ReadFixtures.day(25))
        })
        return (t1, t1v2, t3, log)
    }

    /// Current versions, versions in effect at an interval's end, reads by id (unknown, empty, malformed
    /// outcome ids), tasks of a care plan, streaming reads, for every kind.
    func testEntityQueriesAgree() throws {
        let pair = try ReadStorePair(both, "entity-queries")
        let (t1, t1v2, t3, log) = try writeWorld(pair)
        var queries: [(String, EntityQuery)] = [("current", .current)]
        for day in [0, 1, 5, 6, 10, 11, 13, 21, 26, 40] {
            queries.append(("ending day \(day)", EntityQuery(dateInterval: ReadFixtures.interval(days: day - 1, day))))
        }
        queries.append(("a long interval", EntityQuery(dateInterval: ReadFixtures.interval(days: -3, 8))))
        queries.append(("ids", EntityQuery(ids: ["p1", "cp2", "t1", "c1", "c2", "nothing", "p2", "t3"])))
        queries.append(("no ids", EntityQuery(ids: [])))
        queries.append(("ids at day 11", EntityQuery(ids: ["p1", "t1", "c1"], dateInterval: ReadFixtures.interval(days: 10, 11))))
        XCTAssertEqual(try pair.assertSame("current patients") { try $0.patients(.current) }.map(\.name.givenName), ["Third"])
        XCTAssertEqual(try pair.assertSame("outcomes") { try $0.outcomes(.current) }.count, 9, "5 + 1 + 1 + 3, one deleted")
        for (name, query) in queries {
            try pair.assertSame("patients \(name)") { try $0.patients(query) }
            try pair.assertSame("care plans \(name)") { try $0.carePlans(query) }
            try pair.assertSame("contacts \(name)") { try $0.contacts(query) }
            try pair.assertSame("tasks \(name)") { try $0.tasks(query) }
            if query.ids == nil { try pair.assertSame("outcomes \(name)") { try $0.outcomes(query) } }
            for plan in ["cp1", "cp2", "none"] {
                try pair.assertSame("tasks of \(plan) \(name)") { try $0.tasks(carePlanID: plan, query) }
            }
            for kind in EntityKind.allCases where kind != .outcome || query.ids == nil {
                try pair.assertSame("streamed \(kind) \(name)") { try ReadStorePair.streamed($0, kind, query) }
            }
        }
        // Outcomes by id: current versions, in stored order, each once; ids of no outcome left out.
        let ids = [
            Outcome.id(taskUUID: t1.uuid, occurrence: 4), Outcome.id(taskUUID: t1.uuid, occurrence: 1), Outcome.id(taskUUID: t1.uuid, occurrence: 3),
            Outcome.id(taskUUID: t3.uuid, occurrence: 1), Outcome.id(taskUUID: t1.uuid, occurrence: 4), Outcome.id(taskUUID: t1v2.uuid, occurrence: 7),
            Outcome.id(taskUUID: log.uuid, occurrence: 1), Outcome.id(taskUUID: UUID(), occurrence: 1), "not-an-outcome-id", "\(t1.uuid)_x",
            Outcome.id(taskUUID: t1.uuid, occurrence: 99_999),
        ]
        for (name, interval) in [("current", nil), ("day 1", ReadFixtures.interval(days: 1, 2)), ("days 0 to 8", ReadFixtures.interval(days: 0, 8))] {
            let query = EntityQuery(ids: ids, dateInterval: interval)
            let found = try pair.assertSame("outcomes by id, \(name)") { try $0.outcomes(query) }
            if interval == nil { XCTAssertEqual(found.count, 5, "t1's 4 and 1, t3's 1, t1v2's 7, the log's 1") }
            try pair.assertSame("streamed outcomes by id, \(name)") { try ReadStorePair.streamed($0, .outcome, query) }
            try pair.assertSame("outcomes by no id, \(name)") { try $0.outcomes(EntityQuery(ids: [], dateInterval: interval)) }
        }
        try pair.assertEqual("statistics") { try $0.statistics() }
        try pair.assertEqual("integrity") { try $0.integrityCheck() }
    }

    /// A patient's events: the tasks of their care plans and of no care plan, each occurrence from the
    /// task version that owned its time, with its current outcome; a log's occurrences only with a reading.
    func testEventsAgree() throws {
        let pair = try ReadStorePair(both, "events")
        _ = try writeWorld(pair)
        var intervals: [DateInterval] = (-1..<12).map { ReadFixtures.interval(days: $0, $0 + 1) }
        intervals += [
            ReadFixtures.interval(days: 0, 9),
            ReadFixtures.interval(days: 3, 7),
            DateInterval(start: ReadFixtures.day(4, hour: 8).addingTimeInterval(600), end: ReadFixtures.day(5, hour: 12)),
            DateInterval(start: ReadFixtures.day(2, hour: 8), end: ReadFixtures.day(2, hour: 8)),
            DateInterval(start: ReadFixtures.day(2, hour: 8).addingTimeInterval(60), duration: 60),
        ]
        var count = 0
        for patient in ["p1", "p2", "nobody"] {
            for interval in intervals {
                count += try pair.assertSame("events of \(patient) in \(interval)") { try $0.events(patientID: patient, in: interval) }.count
            }
        }
        XCTAssertGreaterThan(count, 60)
        let dayOne = try pair.sqlite.events(patientID: "p1", in: ReadFixtures.interval(days: 1, 2))
        XCTAssertEqual(dayOne.map(\.task.id), ["p1#log-weight", "t1", "t2", "MedicationRequest/mr1"])
        XCTAssertEqual(dayOne.map { $0.outcome?.values.first?.value }, [.double(72.5), .double(130), nil, nil])
    }

    /// Outcome versions in conflict (two devices' tips) and their resolution: the current reads list
    /// every tip; an event shows the one created last.
    func testOutcomeTipsInConflictAgree() throws {
        let pair = try ReadStorePair(both, "conflicts")
        let patient = ReadFixtures.patient()
        let plan = ReadFixtures.carePlan(patient: patient)
        let task = try ReadFixtures.task(plan: plan)
        try pair.apply(ReadFixtures.batch {
            $0.add(patient)
            $0.add(plan)
            $0.add(task)
        })
        func version(_ value: Double, after previous: [UUID], created: Int) -> Outcome {
            var outcome = ReadFixtures.outcome(task, occurrence: 0, value: value)
            outcome.metadata.uuid = UUID()
            outcome.metadata.previousVersionUUIDs = previous
            outcome.metadata.effectiveDate = ReadFixtures.day(1)
            outcome.metadata.createdDate = ReadFixtures.day(1, hour: created)
            return outcome
        }
        let root = version(1, after: [], created: 1)
        let left = version(2, after: [root.uuid], created: 3)
        let right = version(3, after: [root.uuid], created: 2)
        try pair.apply(ReadFixtures.batch {
            $0.appendVersion(keepingUUIDOf: root)
            $0.appendVersion(keepingUUIDOf: left)
            $0.appendVersion(keepingUUIDOf: right)
        })
        let day = ReadFixtures.interval(days: 0, 1)
        try pair.assertSame("two tips") { try $0.outcomes(.current) }
        try pair.assertSame("two tips by id") { try $0.outcomes(EntityQuery(ids: [root.id])) }
        try pair.assertSame("the tip created last") { try $0.events(patientID: "p1", in: day) }
        try pair.assertEqual("statistics with two tips") { try $0.statistics() }
        XCTAssertEqual(try pair.postgres.integrityCheck(), [], "two tips, filed as in conflict")
        try pair.apply(ReadFixtures.batch { $0.appendVersion(keepingUUIDOf: version(4, after: [left.uuid, right.uuid], created: 4)) })
        try pair.assertSame("resolved") { try $0.outcomes(.current) }
        try pair.assertSame("resolved event") { try $0.events(patientID: "p1", in: day) }
        try pair.assertSame("its history") { try $0.history(.outcome, id: root.id).map(ComparableEntity.init) }
    }

    /// The latest event start among every outcome version (tombstones included) of each task version.
    func testLastOutcomeEventStartsAgree() throws {
        let pair = try ReadStorePair(both, "last-outcomes")
        let (t1, t1v2, t3, log) = try writeWorld(pair)
        try pair.apply(ReadFixtures.batch { $0.delete(.outcome, id: Outcome.id(taskUUID: t1v2.uuid, occurrence: 8), at: ReadFixtures.day(9)) })
        let uuids = [t1.uuid, t1v2.uuid, t3.uuid, log.uuid, UUID(), t1.uuid]
        try pair.assertEqual("last event starts") { try $0.lastOutcomeEventStarts(taskUUIDs: uuids) }
        try pair.assertEqual("none asked") { try $0.lastOutcomeEventStarts(taskUUIDs: []) }
    }

    /// Links from a resource (from any source system, in key order), links of many resources at once (in
    /// the order asked), the kept contents of a resource and the activities of its last content.
    func testLinksAndSourceResourcesAgree() throws {
        let pair = try ReadStorePair(both, "links")
        let systems = ["https://ehr.example/fhir", "file:import.ndjson", "https://another.example/R4"]
        try pair.apply(ReadFixtures.batch { batch in
            for (index, system) in systems.enumerated() {
                for (kind, id) in [(EntityKind.task, "t\(index)"), (.carePlan, "cp"), (.task, "a\(index)"), (.outcome, "Z_\(index)")] {
                    batch.link(ResourceLink(sourceSystem: system, resourceType: "CarePlan", resourceID: "42", entityKind: kind, entityID: id))
                }
                batch.link(ResourceLink(sourceSystem: system, resourceType: "Observation", resourceID: "o\(index)", entityKind: .outcome, entityID: "x"))
            }
            batch.upsert(ReadFixtures.patient(provenance: Provenance(
                sourceSystem: systems[0], fhirType: "Patient", fhirID: "123", versionID: "1", contentHash: "aaa")))
            batch.record(SourceResource(
                sourceSystem: systems[0], resourceType: "CarePlan", resourceID: "42", versionID: "1", body: Data("first".utf8),
                receivedDate: ReadFixtures.day(1), activitiesWithDetail: ["CarePlan.activity[0]", "CarePlan.activity[2]"]))
            batch.record(SourceResource(
                sourceSystem: systems[2], resourceType: "CarePlan", resourceID: "42", versionID: "2", lastUpdated: "2025-03-02T00:00:00Z",
                body: Data("second".utf8), receivedDate: ReadFixtures.day(2), activitiesWithDetail: []))
        })
        for (type, id) in [("CarePlan", "42"), ("Observation", "o1"), ("Patient", "123"), ("CarePlan", "43")] {
            try pair.assertEqual("links of \(type)/\(id)") { try $0.links(resourceType: type, resourceID: id) }
            try pair.assertEqual("sources of \(type)/\(id)") { try $0.sourceResources(resourceType: type, resourceID: id) }
            try pair.assertEqual("activities of \(type)/\(id)") { try $0.activitiesWithDetail(resourceType: type, resourceID: id) }
        }
        let asked: [(type: String, id: String)] = [("Observation", "o2"), ("CarePlan", "42"), ("Nothing", "1"), ("Observation", "o0"), ("Observation", "o2")]
        try pair.assertEqual("links of many") { try $0.links(ofResources: asked) }
        try pair.assertEqual("links of none") { try $0.links(ofResources: []) }
        try pair.apply(ReadFixtures.batch {
            $0.record(SourceResource(sourceSystem: systems[1], resourceType: "CarePlan", resourceID: "42", body: Data("third".utf8), receivedDate: ReadFixtures.day(3)))
        })
        try pair.assertEqual("activities not recorded") { try $0.activitiesWithDetail(resourceType: "CarePlan", resourceID: "42") }
        try pair.assertEqual("sources, three") { try $0.sourceResources(resourceType: "CarePlan", resourceID: "42") }
        try pair.assertEqual("statistics") { try $0.statistics() }
    }

    /// More outcomes than one page of a streaming read: every one, in stored order.
    func testStreamingReadsPageThroughManyOutcomes() throws {
        let pair = try ReadStorePair(both, "streaming")
        let patient = ReadFixtures.patient()
        let plan = ReadFixtures.carePlan(patient: patient)
        let tasks = try (0..<3).map { try ReadFixtures.task("t\($0)", plan: plan, hour: 6 + $0) }
        try pair.apply(ReadFixtures.batch { batch in
            batch.add(patient)
            batch.add(plan)
            for task in tasks { batch.add(task) }
        })
        try pair.apply(ReadFixtures.batch { batch in
            for occurrence in 0..<900 {
                for task in tasks { batch.add(ReadFixtures.outcome(task, occurrence: occurrence, value: Double(occurrence), values: occurrence % 7 == 0 ? 1 : 0)) }
            }
        })
        var count = 0
        try pair.postgres.forEachEntity(.outcome, .current) { _ in count += 1 }
        XCTAssertEqual(count, 2_700)
        // A body that stops the read part-way: its error comes back, and the store reads on.
        struct Enough: Error {}
        var seen = 0
        for _ in 0..<3 {
            seen = 0
            XCTAssertThrowsError(try pair.postgres.forEachEntity(.outcome, .current) { _ in
                seen += 1
                if seen == 1_500 { throw Enough() }
            }) { XCTAssertTrue($0 is Enough, "\($0)") }
        }
        XCTAssertEqual(seen, 1_500)
        try pair.assertSame("every outcome, streamed") { try ReadStorePair.streamed($0, .outcome, .current) }
        try pair.assertSame("outcomes of a month") { try $0.outcomes(EntityQuery(dateInterval: ReadFixtures.interval(days: 100, 130))) }
        try pair.assertEqual("statistics") { try $0.statistics() }
    }

    /// Every kind of value, tags and notes read back alike; a deleted task stops making events; an
    /// outcome upserted after its deletion follows its tombstone; outcome ids of no occurrence are left
    /// out; a second store on the same database (another instance) reads what the first wrote.
    func testValuesDeletionsAndASecondInstanceAgree() throws {
        let pair = try ReadStorePair(both, "values")
        let patient = ReadFixtures.patient()
        let plan = ReadFixtures.carePlan(patient: patient)
        let task = try ReadFixtures.task(plan: plan)
        var outcome = ReadFixtures.outcome(task, occurrence: 0)
        outcome.values = [
            OutcomeValue(.integer(7)), OutcomeValue(.double(1.5), units: "mg"), OutcomeValue(.boolean(true), kind: "taken"),
            OutcomeValue(.text("fine"), index: 3, createdDate: ReadFixtures.day(0, hour: 10), timezone: TimeZone(identifier: "Europe/Paris")!),
            OutcomeValue(.binary(Data([0, 1, 2]))),
            OutcomeValue(.date(ReadFixtures.day(0, hour: 9))),
        ]
        outcome.metadata.tags = ["home"]
        outcome.metadata.notes = [Note(author: "nurse", title: nil, content: "checked")]
        try pair.apply(ReadFixtures.batch {
            $0.add(patient)
            $0.add(plan)
            $0.add(task)
            $0.add(outcome)
            $0.add(ReadFixtures.outcome(task, occurrence: 1))
        })
        var deletion = StoreBatch(date: ReadFixtures.day(5))
        deletion.delete(.outcome, id: Outcome.id(taskUUID: task.uuid, occurrence: 1))
        try pair.apply(deletion)
        var again = StoreBatch(date: ReadFixtures.day(6))
        again.upsert(ReadFixtures.outcome(task, occurrence: 1, value: 125))
        try pair.apply(again)
        var taskDeletion = StoreBatch(date: ReadFixtures.writtenAt)
        taskDeletion.delete(.task, id: "t1", at: ReadFixtures.day(5))
        try pair.apply(taskDeletion)
        let stored = try pair.assertSame("every value type") { try $0.outcomes(.current) }
        XCTAssertEqual(stored.first?.values, outcome.values)
        XCTAssertEqual(stored.first?.metadata.notes, outcome.metadata.notes)
        try pair.assertSame("the upserted outcome's history") { try $0.history(.outcome, id: Outcome.id(taskUUID: task.uuid, occurrence: 1)).map(ComparableEntity.init) }
        let ids = [1, -1, 0, 4, 1_000_000].map { Outcome.id(taskUUID: task.uuid, occurrence: $0) }
        try pair.assertSame("outcomes by id") { try $0.outcomes(EntityQuery(ids: ids)) }
        let events = try pair.assertSame("events of a deleted task") { try $0.events(patientID: "p1", in: ReadFixtures.interval(days: 0, 8)) }
        XCTAssertEqual(events.map(\.scheduleEvent.occurrence), [0, 1, 2, 3, 4])
        try pair.assertSame("tasks in effect before the deletion") { try $0.tasks(EntityQuery(dateInterval: ReadFixtures.interval(days: 3, 4))) }
        try pair.assertSame("no task now") { try $0.tasks(.current) }

        let second = try pair.anotherPostgres()
        defer { second.close() }
        for kind in EntityKind.allCases {
            var first: [CareEntity] = [], other: [CareEntity] = []
            try pair.postgres.forEachEntity(kind, .current) { first.append($0) }
            try second.forEachEntity(kind, .current) { other.append($0) }
            XCTAssertEqual(first, other, "\(kind): another instance reads the same")
        }
        XCTAssertEqual(try second.events(patientID: "p1", in: ReadFixtures.interval(days: 0, 8)), try pair.postgres.events(patientID: "p1", in: ReadFixtures.interval(days: 0, 8)))
        XCTAssertEqual(try second.integrityCheck(), [])
    }

    /// The integrity check is empty on a sound store and names what is broken: a version naming a next
    /// version that is not stored, an entity with two current versions, a revision of no stored version.
    func testTheIntegrityCheckFindsBrokenChains() throws {
        let pair = try ReadStorePair(both, "integrity")
        _ = try writeWorld(pair)
        XCTAssertEqual(try pair.postgres.integrityCheck(), [])
        try pair.postgres.database.run { client in
            try await client.withConnection { connection in
                let logger = Logger(label: "test")
                try await connection.query("UPDATE patient SET next_version_uuid = gen_random_uuid() WHERE id = 'p1' AND next_version_uuid IS NOT NULL", logger: logger)
                try await connection.query("UPDATE care_plan SET next_version_uuid = NULL, next_effective_date = NULL WHERE id = 'cp1'", logger: logger)
                try await connection.query("INSERT INTO care_plan (uuid, effective_date, body, id) SELECT gen_random_uuid(), effective_date, body, id FROM care_plan WHERE id = 'cp1'", logger: logger)
                try await connection.query("DELETE FROM contact WHERE id = 'c1'", logger: logger)
            }
        }
        let problems = try pair.postgres.integrityCheck()
        XCTAssertEqual(problems, [
            "2 patient versions name a next version that is not a version of their entity",
            "2 patient versions whose next effective date is not their next version's effective date",
            "1 care_plan entities without exactly one current version",
            "2 revisions of contact versions that are not stored",
        ])
    }
}
