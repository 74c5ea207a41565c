import CareModel
import Foundation
import Logging
import PostgresNIO
import PostgresStore
import Store
import Synchronization
import TestSupport
import XCTest

/// What the app server reads of a store (``AppSyncStore``) gives the same on ``PostgreSQLStore`` as on
/// ``SQLiteStore``: the revision log after clocks, for knowledge vectors, in pages; the repair of device
/// processes; the day view and a patient's plans and orders. A pull never sees a clock still in flight.
final class AppSyncContractTests: XCTestCase {
    private lazy var both = BothStores(for: self)

    override func tearDown() {
        both.stop()
    }

    private func read(_ pair: ReadStorePair, _ what: String, _ read: @escaping (any AppSyncStore) throws -> RevisionLogRead,
                      file: StaticString = #filePath, line: UInt = #line) throws {
        try pair.assertSame(what, { ComparableLogRead(try read($0)) }, file: file, line: line)
    }

    /// A patient, a care plan and a task; then outcomes one batch each.
    private func patientWithOutcomes(_ pair: ReadStorePair, outcomes: Int, devices: [UUID] = []) throws -> CareTask {
        let patient = ReadFixtures.patient()
        let plan = ReadFixtures.carePlan(patient: patient)
        let task = try ReadFixtures.task(plan: plan)
        try pair.apply(ReadFixtures.batch {
            $0.add(patient)
            $0.add(plan)
            $0.add(task)
        })
        for occurrence in 0..<outcomes {
            try pair.apply(ReadFixtures.batch { batch in
                if !devices.isEmpty, occurrence % 2 == 1 { batch.mergeKnowledge(patientID: "p1", clocks: [devices[occurrence % devices.count]: occurrence]) }
                if occurrence == 4, let first = devices.first { batch.mergeKnowledge(patientID: "p1", clocks: [first: 2]) }
                batch.add(ReadFixtures.outcome(task, occurrence: occurrence))
            })
        }
        return task
    }

    /// Each batch is one revision per patient it touched, its versions in the order written; patients see
    /// only theirs; a failed batch ticks nothing; pages stop after whole revisions.
    func testRevisionsAfterClocksAndInPagesAgree() throws {
        let pair = try ReadStorePair(both, "revisions")
        let task = try patientWithOutcomes(pair, outcomes: 4)
        let other = ReadFixtures.patient("p2")
        try pair.apply(ReadFixtures.batch {
            $0.add(other)
            $0.add(try ReadFixtures.order("MedicationRequest/m2", of: "p2", hour: 9))
            $0.add(try ReadFixtures.order("MedicationRequest/m1", of: "p1", hour: 9))
            $0.delete(.outcome, id: Outcome.id(taskUUID: task.uuid, occurrence: 1), at: ReadFixtures.day(3))
            $0.update(ReadFixtures.patient("p1", given: "Later", effective: ReadFixtures.day(2)))
        })
        XCTAssertThrowsError(try pair.apply(ReadFixtures.batch {
            $0.add(ReadFixtures.outcome(task, occurrence: 9))
            $0.add(ReadFixtures.outcome(task, occurrence: 9))
        }))
        XCTAssertEqual(try pair.assertSame("the clock") { try $0.serverClock().clock }, 6, "one tick a batch that wrote, none for the refused")
        XCTAssertEqual(try pair.postgres.revisions(patientID: "p1", afterClock: 0, maxEntities: .max) { _ in true }.revisions.map(\.entities.count), [3, 1, 1, 1, 1, 3])
        XCTAssertEqual(try pair.postgres.revisions(patientID: "p2", afterClock: 0, maxEntities: .max) { _ in true }.revisions.map(\.stamp.serverClock), [6])
        for patient in ["p1", "p2", "nobody"] {
            for after in [0, 1, 3, 6, 7, 100] {
                for maxEntities in [0, 1, 3, 4, 5, .max] {
                    try read(pair, "\(patient) after \(after), \(maxEntities) entities") {
                        try $0.revisions(patientID: patient, afterClock: after, maxEntities: maxEntities) { _ in true }
                    }
                }
            }
            try read(pair, "\(patient), clocks 3 and 5 filtered out") {
                try $0.revisions(patientID: patient, afterClock: 0, maxEntities: .max) { ![3, 5].contains($0.serverClock) }
            }
        }
    }

    /// Stamps a device's vector certainly knows are left unread: what comes back is what a whole read with
    /// CareKit's rule gives, and the same on both stores, for many device vectors.
    func testRevisionsForKnowledgeVectorsAgree() throws {
        let pair = try ReadStorePair(both, "known-by")
        let devices = [UUID(), UUID()]
        pair.label(devices)
        _ = try patientWithOutcomes(pair, outcomes: 6, devices: devices)
        let servers = try pair.stores.map { try $0.store.serverClock() }
        var generator = SystemRandomNumberGenerator()
        var vectors: [(Int?, [UUID: Int])] = [(nil, [:]), (nil, [devices[0]: 1])]
        for clock in 0...servers[0].clock + 1 {
            vectors.append((clock, [:]))
            vectors.append((clock, [devices[0]: 2, devices[1]: 5]))
            vectors.append((clock, [devices[0]: Int.random(in: 0...3, using: &generator), devices[1]: Int.random(in: 0...6, using: &generator)]))
            vectors.append((clock, [devices[1]: 5, UUID(): 1]))
        }
        for (serverClock, devicePart) in vectors {
            pair.label(Array(devicePart.keys))
            let vector = { (store: any AppSyncStore) throws -> [UUID: Int] in
                var vector = devicePart
                if let serverClock { vector[try store.serverClock().processUUID] = serverClock }
                return vector
            }
            for after in [0, 2] {
                for maxEntities in [2, .max] {
                    try read(pair, "unseen by \(serverClock ?? -1), \(devicePart.values.sorted()) after \(after), \(maxEntities)") {
                        try $0.revisions(patientID: "p1", afterClock: after, maxEntities: maxEntities, unseenBy: KnowledgeVector(try vector($0)))
                    }
                    try read(pair, "known by, the rule given") { store in
                        let device = try vector(store)
                        let server = try store.serverClock().processUUID
                        return try store.revisions(patientID: "p1", afterClock: after, maxEntities: maxEntities, knownBy: device) {
                            !(KnowledgeVector($0.vector(server: server)) < KnowledgeVector(device))
                        }
                    }
                }
            }
            try pair.assertSame("existing patient") { store in
                try store.revisionsOfExistingPatient(patientID: "p1", afterClock: 0, maxEntities: .max, unseenBy: KnowledgeVector(try vector(store)))
                    .map(ComparableLogRead.init)
            }
        }
        try pair.assertSame("no such patient") {
            try $0.revisionsOfExistingPatient(patientID: "p2", afterClock: 0, maxEntities: .max, unseenBy: KnowledgeVector()).map(ComparableLogRead.init)
        }
        try pair.apply(ReadFixtures.batch { $0.delete(.patient, id: "p1", at: ReadFixtures.day(9)) })
        try pair.assertSame("a deleted patient") {
            try $0.revisionsOfExistingPatient(patientID: "p1", afterClock: 0, maxEntities: .max, unseenBy: KnowledgeVector()).map(ComparableLogRead.init)
        }
    }

    /// A push teaches device clocks within the bounds; a vector bloated past them (as before the rule) is
    /// repaired: its processes retired, its stamps cleared, the clocks kept for devices that know them.
    func testDeviceProcessesAreTaughtAndRetiredAlike() throws {
        let pair = try ReadStorePair(both, "device-processes")
        let task = try patientWithOutcomes(pair, outcomes: 1)
        let phone = UUID(), watch = UUID()
        let bloat = Dictionary(uniqueKeysWithValues: (0...DeviceKnowledgeLimits.processesPerPatient).map { _ in (UUID(), 2) })
        let few = [UUID(): 1, UUID(): 3, UUID(): 1]
        pair.label([phone, watch] + bloat.keys.sorted { $0.uuidString < $1.uuidString } + few.keys.sorted { $0.uuidString < $1.uuidString })
        try pair.apply(ReadFixtures.batch {
            $0.admitKnowledge(DeviceKnowledgePush(patientID: "p1", clocks: [phone: 4, watch: 2], carried: [phone: 3, watch: 1]))
            $0.add(ReadFixtures.outcome(task, occurrence: 1))
        })
        try pair.apply(ReadFixtures.batch {
            $0.mergeKnowledge(patientID: "p1", clocks: bloat)
            $0.mergeKnowledge(patientID: "Patient/other", clocks: few)
            $0.add(ReadFixtures.outcome(task, occurrence: 2))
        })
        let device = KnowledgeVector(bloat.mapValues { _ in 5 }.merging([phone: 1]) { $1 })
        try read(pair, "the bloated log") { try $0.revisions(patientID: "p1", afterClock: 0, maxEntities: .max, unseenBy: device) }
        XCTAssertEqual(
            try pair.assertEqual("the repair of bloated vectors") { try $0.retireDeviceProcesses(patientID: nil) },
            [RetiredKnowledge(patientID: "p1", processes: DeviceKnowledgeLimits.processesPerPatient + 3, stamps: 2)])
        try read(pair, "after the repair, to a device that knows them") { try $0.revisions(patientID: "p1", afterClock: 0, maxEntities: 0, unseenBy: device) }
        try read(pair, "after the repair") { try $0.revisions(patientID: "p1", afterClock: 0, maxEntities: .max, unseenBy: KnowledgeVector()) }
        try read(pair, "the other patient") { try $0.revisions(patientID: "Patient/other", afterClock: 0, maxEntities: 0) { _ in true } }
        try pair.assertEqual("nothing more to repair") { try $0.retireDeviceProcesses(patientID: nil) }
        try pair.assertEqual("one patient's repair") { try $0.retireDeviceProcesses(patientID: "Patient/other") }
        try pair.assertEqual("a patient with none") { try $0.retireDeviceProcesses(patientID: "nobody") }
        // A push that carries a retired process serves it again.
        try pair.apply(ReadFixtures.batch {
            $0.admitKnowledge(DeviceKnowledgePush(patientID: "p1", clocks: [phone: 9], carried: [phone: 9]))
            $0.add(ReadFixtures.outcome(task, occurrence: 3))
        })
        try read(pair, "served again") { try $0.revisions(patientID: "p1", afterClock: 2, maxEntities: .max, unseenBy: device) }
    }

    /// A patient's day (the patient, their events, their current plans, from one snapshot), their current
    /// care plans and their tasks of no care plan.
    func testDayViewsPlansAndOrdersAgree() throws {
        let pair = try ReadStorePair(both, "day-view")
        let patient = ReadFixtures.patient()
        let plan = ReadFixtures.carePlan(patient: patient)
        let task = try ReadFixtures.task(plan: plan)
        let log = try ReadFixtures.log(of: "p1")
        let oldPlan = ReadFixtures.carePlan("cp-old", patient: patient, title: "Old")
        try pair.apply(ReadFixtures.batch {
            $0.add(patient)
            $0.add(ReadFixtures.patient("p2", given: "Grace"))
            $0.add(plan)
            $0.add(oldPlan)
            $0.add(task)
            $0.add(try ReadFixtures.task("t-old", plan: oldPlan, hour: 12))
            $0.add(try ReadFixtures.order("MedicationRequest/mr1", of: "p1", hour: 20))
            $0.add(try ReadFixtures.order("MedicationRequest/mr2", of: "p2", hour: 20))
            $0.add(log)
        })
        try pair.apply(ReadFixtures.batch {
            $0.add(ReadFixtures.outcome(task, occurrence: 1, values: 1))
            $0.add(Outcome(taskUUID: log.uuid, taskOccurrenceIndex: 1, values: [OutcomeValue(.double(72.5), units: "kg", kind: "29463-7")],
                           metadata: EntityMetadata(effectiveDate: ReadFixtures.day(1, hour: 7), timezone: ReadFixtures.utc)))
            $0.delete(.carePlan, id: "cp-old", at: ReadFixtures.day(1, hour: 10))
            $0.delete(.task, id: "MedicationRequest/mr1", at: ReadFixtures.day(2))
        })
        for patientID in ["p1", "p2", "nobody"] {
            for day in [0, 1, 2, 3] {
                try pair.assertSame("day \(day) of \(patientID)") { store in
                    try store.dayView(patientID: patientID) { patient in
                        XCTAssertEqual(patient.id, patientID)
                        return ReadFixtures.interval(days: day, day + 1)
                    }.map { [ComparableDay(patient: $0.patient, events: $0.events, carePlans: $0.carePlans)] } ?? []
                }
            }
            try pair.assertEqual("\(patientID) exists") { try $0.patientExists(patientID) }
            try pair.assertSame("plans of \(patientID)") { try $0.currentCarePlans(patientID: patientID) }
            try pair.assertSame("orders of \(patientID)") { try $0.currentTasksOfNoCarePlan(patientID: patientID) }
        }
        XCTAssertNil(pair.postgres.storeFilePath, "a database has no file")
        let dayOne = try XCTUnwrap(try pair.postgres.dayView(patientID: "p1") { _ in ReadFixtures.interval(days: 1, 2) })
        XCTAssertEqual(dayOne.events.map(\.task.id), ["p1#log-weight", "t1", "t-old", "MedicationRequest/mr1"], "a deleted plan leaves its tasks (as SQLite)")
        XCTAssertEqual(dayOne.carePlans.map(\.id), ["cp1"])
        try pair.assertEqual("a deleted care plan's patient still exists") { try $0.patientExists("p1") }
    }

    /// A pull never sees a clock still in flight: while a writer holds clock N uncommitted, the store's
    /// clock and its reads stay at N - 1 (and do not wait); once it commits, both move on.
    func testReadsSeeOnlyCommittedClocks() throws {
        let pair = try ReadStorePair(both, "in-flight")
        _ = try patientWithOutcomes(pair, outcomes: 2)
        let store = pair.postgres
        let committed = try store.serverClock().clock
        let ticked = Mutex<Int64?>(nil)
        let finish = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let database = store.database
        Thread.detachNewThread {
            _ = try? database.run { client in
                try await client.withConnection { connection in
                    let logger = Logger(label: "test")
                    try await connection.query("BEGIN", logger: logger)
                    let clock = try await PostgresServerClock.tick(on: connection)
                    try await connection.query(
                        "INSERT INTO revision_stamp (patient_id, server_clock, processes) VALUES ('p1', \(clock), '[]')", logger: logger)
                    ticked.withLock { $0 = clock }
                    await withCheckedContinuation { continuation in
                        DispatchQueue.global().async {
                            finish.wait()
                            continuation.resume()
                        }
                    }
                    try await connection.query("COMMIT", logger: logger)
                    return clock
                }
            }
            done.signal()
        }
        let end = Date().addingTimeInterval(60)
        while ticked.withLock({ $0 }) == nil && Date() < end { usleep(10_000) }
        XCTAssertEqual(ticked.withLock { $0 }, Int64(committed + 1))
        XCTAssertEqual(try store.serverClock().clock, committed, "the clock in flight is not seen")
        let during = try store.revisions(patientID: "p1", afterClock: 0, maxEntities: .max) { _ in true }
        XCTAssertEqual(during.server.clock, committed)
        XCTAssertEqual(during.revisions.map(\.stamp.serverClock), Array(1...committed), "nothing of the transaction in flight")
        finish.signal()
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        let after = try store.revisions(patientID: "p1", afterClock: 0, maxEntities: .max) { _ in true }
        XCTAssertEqual(after.server.clock, committed + 1)
        XCTAssertEqual(after.revisions.map(\.stamp.serverClock), Array(1...committed + 1))
    }

    /// Four instances on one database write a patient's outcomes at once while a fifth pulls: every pull
    /// sees the patient's revisions without a gap up to the clock it is told (each batch is one revision
    /// of the patient), so a device that learns clock N has been sent every revision up to N.
    func testPullsBesideConcurrentWritersSeeEveryClockUpToTheirs() throws {
        let pair = try ReadStorePair(both, "concurrent-pulls")
        let task = try patientWithOutcomes(pair, outcomes: 0)
        let writers = try (0..<4).map { _ in try pair.anotherPostgres() }
        let reader = try pair.anotherPostgres()
        defer { (writers + [reader]).forEach { $0.close() } }
        let failures = Mutex<[String]>([])
        let writing = Atomic<Int>(writers.count)
        let group = DispatchGroup()
        for (index, writer) in writers.enumerated() {
            DispatchQueue.global().async(group: group) {
                defer { writing.subtract(1, ordering: .sequentiallyConsistent) }
                for round in 0..<8 {
                    do {
                        try writer.apply(ReadFixtures.batch { $0.add(ReadFixtures.outcome(task, occurrence: round * writers.count + index)) })
                    } catch {
                        failures.withLock { $0.append("writer \(index): \(error)") }
                    }
                }
            }
        }
        var pulls = 0
        repeat {
            let read = try reader.revisions(patientID: "p1", afterClock: 0, maxEntities: .max) { _ in true }
            let clocks = read.revisions.map(\.stamp.serverClock)
            if clocks != Array(1...read.server.clock) { failures.withLock { $0.append("a pull at clock \(read.server.clock) saw \(clocks)") } }
            pulls += 1
        } while writing.load(ordering: .sequentiallyConsistent) > 0
        group.wait()
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertGreaterThan(pulls, 0)
        XCTAssertEqual(try reader.serverClock().clock, 1 + 4 * 8)
        XCTAssertEqual(try reader.outcomes(.current).count, 32)
    }
}

/// A day view as the contracts compare it.
private struct ComparableDay: Encodable {
    let patient: Patient
    let events: [Event]
    let carePlans: [CarePlan]
}
