import CareModel
import FHIR
import Foundation
import Pipeline
import PostgresStore
import Store
import Sync
import TestSupport
import XCTest

/// Pushes of several workers side by side on one PostgreSQL store (issue 47, item 2): each claims its
/// outcomes (whole groups, a Bundle at a time) and records the receipts with claim-checked steps, never
/// holding the writer lease; together they acknowledge every entry once, and an answer that comes after
/// the worker's claim was taken over is refused and reported.
final class PostgresSideBySidePushTests: XCTestCase {
    private let zone = TimeZone(identifier: "America/Chicago")!
    private var database: PostgresServerProcess!

    override func tearDown() {
        database?.stop()
    }

    /// A store opened on the shared database, with its own connections (as another process would have).
    private func open() throws -> PostgreSQLStore {
        guard case .postgres(let location) = try StoreLocation.parse(database.url) else { throw XCTSkip("not a PostgreSQL URL") }
        return try PostgreSQLStore.open(try PostgresDatabase(location: location, environment: [:]))
    }

    /// Fixtures/provider imported, and `count` outcomes recorded on the walk task (the first of them
    /// twice: two entries, one Observation).
    private func storeWithOutcomes(_ count: Int) throws -> PostgreSQLStore {
        database = try PostgresServerProcess.start()
        let store = try open()
        let report = try Gateway(store: store, options: Gateway.Options(timeZone: zone))
            .importFHIR(FHIRInput.sources(for: [Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path]))
        XCTAssertEqual(report.failures.count, 0)
        let task = try XCTUnwrap(try store.tasks(EntityQuery(ids: ["CarePlan/cp-1#activity-Walk-for-30-minutes"])).first)
        for (occurrence, done) in [(0, false)] + (0..<count).map({ ($0, true) }) {
            var metadata = EntityMetadata(effectiveDate: task.schedule.eventStart(occurrence: occurrence) ?? Date(), timezone: zone)
            metadata.source = "HeartApp"
            var batch = StoreBatch()
            batch.upsert(Outcome(taskUUID: task.uuid, taskOccurrenceIndex: occurrence, values: [OutcomeValue(.boolean(done))], metadata: metadata))
            try store.apply(batch)
        }
        return store
    }

    /// Stores every outcome it is sent, noting the Observations' ids; its first Bundle waits at `gate`.
    private final class Receiver: ExportReceiver, @unchecked Sendable {
        let gate: Gate?
        let onBundle: (() throws -> Void)?
        private(set) var observations: [String] = []
        private var first = true

        init(gate: Gate? = nil, onBundle: (() throws -> Void)? = nil) {
            self.gate = gate
            self.onBundle = onBundle
        }

        func receive(bundle: Data, entryCounts: [Int]) throws -> [ExportReceipt] {
            if first {
                first = false
                gate?.arriveAndWait()
            }
            try onBundle?()
            let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: bundle) as? [String: Any])
            let resources = ((json["entry"] as? [[String: Any]]) ?? []).compactMap { $0["resource"] as? [String: Any] }
            let ids = resources.filter { $0["resourceType"] as? String == "Observation" }.compactMap { $0["id"] as? String }
            observations += ids
            return entryCounts.map { _ in .stored(location: nil) }
        }
    }

    /// Holds each party that arrives until `parties` have: proof that they were inside at once. A party
    /// still alone after a minute goes on (the test then fails on its counts, rather than hanging).
    final class Gate: @unchecked Sendable {
        private let condition = NSCondition()
        private var arrived = 0
        private let parties: Int
        private(set) var allMet = false

        init(parties: Int) {
            self.parties = parties
        }

        func arriveAndWait() {
            condition.lock()
            defer { condition.unlock() }
            arrived += 1
            if arrived >= parties {
                allMet = true
                condition.broadcast()
                return
            }
            let deadline = Date().addingTimeInterval(60)
            while arrived < parties, condition.wait(until: deadline) {}
        }
    }

    func testTwoPushesSideBySideEachAcknowledgeAPartAndTogetherEveryEntryOnce() throws {
        let setUp = try storeWithOutcomes(8)
        defer { setUp.close() }
        XCTAssertEqual(try setUp.dueOutboxEntries(at: Date(), limit: 100).count, 9, "8 outcomes, the first in two versions")
        let gate = Gate(parties: 2)
        let receivers = [Receiver(gate: gate), Receiver(gate: gate)]
        let lock = NSLock()
        nonisolated(unsafe) var reports: [Int: ExportReport] = [:]
        nonisolated(unsafe) var failures: [String] = []
        let url = database.url
        DispatchQueue.concurrentPerform(iterations: 2) { number in
            do {
                guard case .postgres(let location) = try StoreLocation.parse(url) else { throw XCTSkip("not a PostgreSQL URL") }
                let store = try PostgreSQLStore.open(try PostgresDatabase(location: location, environment: [:]))
                defer { store.close() }
                // Bundles of 2 outcomes: the first worker's first Bundle waits until the other has
                // claimed outcomes of its own and sent them.
                let report = try Gateway(store: store).exporter().push(
                    to: receivers[number], batchSize: 2, claims: OutboxClaimSettings(worker: "worker-\(number)"))
                lock.withLock { reports[number] = report }
            } catch {
                lock.withLock { failures.append("worker \(number): \(error)") }
            }
        }
        XCTAssertEqual(failures, [])
        XCTAssertTrue(gate.allMet, "both pushes were sending at once, neither waiting for a lease")
        let (a, b) = (try XCTUnwrap(reports[0]), try XCTUnwrap(reports[1]))
        XCTAssertGreaterThan(a.acknowledged, 0)
        XCTAssertGreaterThan(b.acknowledged, 0)
        XCTAssertEqual(a.acknowledged + b.acknowledged, 8, "every outcome, once")
        XCTAssertEqual(a.sent + b.sent, 9, "every entry, once")
        XCTAssertEqual(a.unanswered + b.unanswered, [])
        let sent = receivers[0].observations + receivers[1].observations
        XCTAssertEqual(sent.count, 8, "no Observation sent twice: \(sent)")
        XCTAssertEqual(Set(sent).count, 8)
        let acknowledged = try setUp.outboxEntries(in: .acknowledged, limit: 100)
        XCTAssertEqual(acknowledged.count, 9)
        XCTAssertEqual(Set(acknowledged.map(\.attempts)), [1], "each entry sent once")
        XCTAssertEqual(try setUp.dueOutboxEntries(at: Date(), limit: 100), [])
        XCTAssertEqual(try setUp.outbox.claim(worker: "late", limit: 100, leaseFor: .seconds(60)).count, 0, "no claim left behind")
    }

    func testAnAnswerAfterTheClaimWasTakenOverIsRefusedAndReportedNotAcknowledged() throws {
        let store = try storeWithOutcomes(2)
        defer { store.close() }
        let other = try open()
        defer { other.close() }
        // While the Bundle is out, another worker comes an hour later by its clock: the push's claims
        // have lapsed, and it takes them over.
        let receiver = Receiver(onBundle: {
            let taken = try other.outbox.claim(worker: "other", limit: 100, leaseFor: .seconds(600), now: Date().addingTimeInterval(3_600))
            XCTAssertEqual(taken.count, 3)
        })
        let report = try Gateway(store: store).exporter().push(
            to: receiver, batchSize: 10, claims: OutboxClaimSettings(worker: "pusher", lease: .seconds(60)))
        XCTAssertEqual(report.requests, 1)
        XCTAssertEqual(report.acknowledged, 0, "the late answer is not recorded")
        XCTAssertEqual(report.sent, 0)
        XCTAssertEqual(report.unanswered.count, 3, "\(report.unanswered)")
        XCTAssertTrue(report.unanswered.allSatisfy { $0.contains("claimed by other, not by pusher") }, "\(report.unanswered)")
        XCTAssertEqual(try store.outboxEntries(in: .acknowledged, limit: 100), [])
        let entries = try store.dueOutboxEntries(at: Date(), limit: 100)
        XCTAssertEqual(entries.count, 3)
        for entry in entries { XCTAssertEqual(try store.outbox.claimHolder(id: entry.id ?? 0)?.worker, "other") }

        // The new holder answers: each entry acknowledged once.
        let ids = entries.compactMap(\.id)
        XCTAssertEqual(try other.outbox.transition(ids, .sent(at: Date()), worker: "other").moved, ids)
        XCTAssertEqual(try other.outbox.acknowledge(ids.map { ($0, nil) }, worker: "other").moved, ids)
        XCTAssertEqual(try store.outboxEntries(in: .acknowledged, limit: 100).count, 3)
        XCTAssertEqual(Set(try store.outboxEntries(in: .acknowledged, limit: 100).map(\.attempts)), [1])
    }

    func testOutcomesHeldForConsentAreLeftDueOnceEachRun() throws {
        let store = try storeWithOutcomes(3)
        defer { store.close() }
        let exporter = try Gateway(store: store).exporter()
        exporter.consentHold = { _ in "consent required: waiting for the patient's agreement" }
        let receiver = Receiver()
        let held = try exporter.push(to: receiver, batchSize: 1, claims: OutboxClaimSettings(worker: "pusher"))
        XCTAssertEqual(held.requests, 0, "nothing sent")
        XCTAssertEqual(held.notTaken.count, 3, "each outcome held once, though due again at once: \(held.notTaken)")
        XCTAssertTrue(held.notTaken.allSatisfy(\.retry))
        XCTAssertEqual(try store.outboxEntries(in: .acknowledged, limit: 100), [])
        XCTAssertEqual(try store.dueOutboxEntries(at: Date(), limit: 100).count, 4, "left due, not acknowledged, no dead letter")
        XCTAssertEqual(try store.waitingDeadLetterCount(), 0)

        exporter.consentHold = nil
        let sent = try exporter.push(to: receiver, batchSize: 10, claims: OutboxClaimSettings(worker: "pusher"))
        XCTAssertEqual(sent.acknowledged, 3)
        XCTAssertEqual(sent.sent, 4)
    }
}
