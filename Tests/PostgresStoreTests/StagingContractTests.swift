import CareModel
import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// The staging records (pull cursors, the outbox and its steps, dead letters and their settlement, export
/// progress, report starts) behave the same on SQLite and on a real PostgreSQL server: the same batches on
/// both, the same summaries, reads and refusals (ports of StoreTests' StagingTests, ExportProgressTests,
/// ReportStartTests and the replays of DeadLetterReplay).
final class StagingContractTests: XCTestCase {
    private lazy var both = BothStores(for: self)
    private let server = "https://ehr.example/fhir"
    /// Dates with fractions of a microsecond: a store that rounds them (timestamptz) reads back otherwise.
    private let t0 = Date(timeIntervalSince1970: 1_790_000_000.123_456_789)

    override func tearDown() {
        both.stop()
    }

    /// SQLite, PostgreSQL through `apply`, and PostgreSQL through the staging writer's runs (enqueues and
    /// steps in bulk), for batches of staging changes only.
    private func stores() throws -> [(name: String, store: any Store)] {
        try storesWithEntities() + [("PostgreSQL, staging runs", StagingBatches.runsStore(try both.postgres()))]
    }

    /// SQLite and PostgreSQL through `apply`, for batches with entity changes.
    private func storesWithEntities() throws -> [(name: String, store: any Store)] {
        [("SQLite", try both.sqlite("staging-contract")), ("PostgreSQL", try both.postgres())]
    }

    @discardableResult
    private func apply(_ store: any Store, _ build: (inout StoreBatch) -> Void) throws -> BatchSummary {
        var batch = StoreBatch(date: t0)
        build(&batch)
        return try StagingBatches.apply(batch, to: store)
    }

    private func step(_ store: any Store, _ id: Int64, _ transition: OutboxTransition) throws {
        try apply(store) { $0.transition(outboxEntry: id, transition) }
    }

    /// Entry `number`, of version `uuid` (by default one made of the number: the same on both stores).
    private func entry(_ number: Int, uuid: UUID? = nil, payload: String? = "{}") -> OutboxEntry {
        let uuid = uuid ?? UUID(uuidString: "00000000-0000-4000-8000-" + String(format: "%012x", number))!
        return OutboxEntry(
            destination: server, entityKind: .outcome, entityID: "x_\(number)", entityUUID: uuid, payload: payload.map { Data($0.utf8) },
            createdDate: t0.addingTimeInterval(Double(number)))
    }

    func testCheckpointsMovePerServerAndTypeAlike() throws {
        let stores = try stores()
        try assertAlike(stores, "two checkpoints, one moved") { store in
            let first = try apply(store) {
                $0.setCheckpoint(SyncCheckpoint(server: server, resourceType: "Observation", cursor: "2025-01-01T00:00:00Z", updatedDate: t0))
                $0.setCheckpoint(SyncCheckpoint(server: server, resourceType: "CarePlan", cursor: "2025-02-01T00:00:00Z", updatedDate: t0))
            }
            let second = try apply(store) {
                $0.setCheckpoint(SyncCheckpoint(server: server, resourceType: "Observation", cursor: "2025-03-01T00:00:00Z", updatedDate: t0 + 1))
            }
            return [
                exact([first.checkpointsSet, second.checkpointsSet]),
                exact(try store.checkpoint(server: server, resourceType: "Observation")),
                exact(try store.checkpoint(server: server, resourceType: "CarePlan")),
                exact(try store.checkpoint(server: "https://other.example", resourceType: "CarePlan")),
            ]
        }
        XCTAssertEqual(try stores[1].store.checkpoint(server: server, resourceType: "Observation")?.updatedDate, t0 + 1, "the date to the bit")
    }

    func testAnEntryGoesPendingSentFailedSentAcknowledgedAlike() throws {
        let uuid = UUID()
        try assertAlike(try stores(), "every step of one entry") { store in
            var seen: [String] = []
            let queued = try apply(store) { $0.enqueue(entry(1, uuid: uuid)) }
            let id = try XCTUnwrap(queued.outboxEntryIDs.first)
            let again = try apply(store) { $0.enqueue(entry(1, uuid: uuid)) }
            seen.append(exact([queued.outboxEntryIDs, again.outboxEntryIDs]))
            try step(store, id, .sent(at: t0))
            try step(store, id, .failed(error: "HTTP 503", retryAt: t0.addingTimeInterval(60.5), at: t0 + 0.25))
            seen.append(exact(try XCTUnwrap(store.outboxEntry(id: id))))
            seen.append(exact(try store.dueOutboxEntries(at: t0.addingTimeInterval(30), limit: 10).map(\.id)))
            seen.append(exact(try store.dueOutboxEntries(at: t0.addingTimeInterval(60.5), limit: 10).map(\.id)))
            try step(store, id, .sent(at: t0.addingTimeInterval(61)))
            try step(store, id, .acknowledged(at: t0.addingTimeInterval(62), server: ServerVersion(id: "obs-9", version: "3")))
            seen.append(exact(try XCTUnwrap(store.outboxEntry(id: id))))
            seen.append(exact(try XCTUnwrap(store.outboxEntry(destination: server, entityUUID: uuid))))
            seen.append(exact(try store.outboxEntries(in: .acknowledged, limit: 10)))
            seen.append(exact(try store.outboxSummary()))
            return seen
        }
    }

    func testIllegalStepsAreRefusedAlike() throws {
        try assertAlike(try stores(), "the refusals") { store in
            let id = try XCTUnwrap(apply(store) { $0.enqueue(entry(1)) }.outboxEntryIDs.first)
            var errors: [StoreError?] = []
            errors.append(storeError { try step(store, id, .acknowledged(at: t0)) })
            try step(store, id, .sent(at: t0))
            errors.append(storeError { try step(store, id, .sent(at: t0)) })
            try step(store, id, .acknowledged(at: t0))
            errors.append(storeError { try step(store, id, .failed(error: "late", retryAt: nil, at: t0)) })
            errors.append(storeError { try step(store, 999, .sent(at: t0)) })
            XCTAssertEqual(errors.compactMap { $0 }.count, 4)
            return errors
        }
    }

    /// More than one statement's worth of versions read at once, one destination only; which may have
    /// reached it (sent, sent then failed, acknowledged; not refused unsent, nor pending).
    func testEntriesOfManyVersionsAreReadAlike() throws {
        let uuids = (0..<5_203).map { _ in UUID() }
        let asked = Array(uuids[1...]) + [UUID()]
        try assertAlike(try stores(), "entries of many versions") { store in
            let ids = try apply(store) { batch in
                for (number, uuid) in uuids.enumerated() { batch.enqueue(entry(number, uuid: uuid, payload: number.isMultiple(of: 2) ? nil : "{}")) }
                batch.enqueue(OutboxEntry(destination: "https://other.example", entityKind: .outcome, entityID: "x_0", entityUUID: uuids[0], createdDate: t0))
            }.outboxEntryIDs
            XCTAssertEqual(ids, Array(1...Int64(uuids.count + 1)), "ids in batch order")
            let found = try store.outboxEntries(destination: server, entityUUIDs: asked + asked.prefix(3))
            XCTAssertEqual(found.count, uuids.count - 1, "each queued version once")
            try step(store, ids[1], .sent(at: t0))
            try step(store, ids[2], .sent(at: t0))
            try step(store, ids[2], .failed(error: "no answer", retryAt: t0.addingTimeInterval(60), at: t0))
            try step(store, ids[3], .failed(error: "refused", retryAt: nil, at: t0))
            try step(store, ids[4], .sent(at: t0))
            try step(store, ids[4], .acknowledged(at: t0))
            let reached = try store.outboxEntries(destination: server, entityUUIDs: Array(uuids[1...5])).filter(\.mayHaveReachedDestination)
            return [exact(found.sorted { ($0.id ?? 0) < ($1.id ?? 0) }), exact(Set(reached.map(\.entityUUID)))]
        }
    }

    /// A run of steps on many entries (what an export commits) is applied in bulk with one-by-one
    /// semantics: all moved, or nothing and the first offender's error.
    func testManyEntriesTakingOneStepBehaveAsOneByOneAlike() throws {
        try assertAlike(try stores(), "a run of steps") { store in
            let ids = try apply(store) { batch in for number in 0..<5_203 { batch.enqueue(entry(number)) } }.outboxEntryIDs
            try step(store, ids[700], .sent(at: t0))
            var seen: [String] = []
            let all = storeError { try apply(store) { batch in for id in ids { batch.transition(outboxEntry: id, .sent(at: t0)) } } }
            seen.append(exact(all))
            seen.append(exact(try store.outboxSummary()))
            let twice = storeError { try apply(store) { batch in for id in ids[0..<3] + [ids[1]] { batch.transition(outboxEntry: id, .sent(at: t0)) } } }
            seen.append(exact(twice))
            let failTwice = try apply(store) { batch in
                for id in [ids[10], ids[10], ids[11]] { batch.transition(outboxEntry: id, .failed(error: "x", retryAt: nil, at: t0)) }
            }
            seen.append("failed twice: \(failTwice.outboxTransitions)")
            let rest = try apply(store) { batch in
                for id in ids where ![ids[700], ids[10], ids[11]].contains(id) { batch.transition(outboxEntry: id, .sent(at: t0 + 1)) }
            }
            seen.append(exact(rest.outboxTransitions))
            seen.append(exact(try store.outboxSummary()))
            seen.append(exact(try XCTUnwrap(store.outboxEntry(id: ids[5_202]))))
            seen.append(exact(try store.dueOutboxEntries(at: t0 + 1e9, limit: 10)))
            seen.append(exact(try store.outboxEntries(in: .failed, limit: -1).map(\.id)))
            return seen
        }
    }

    func testAFailedEntryWithoutRetryIsDeadLetteredAndRequeuedAlike() throws {
        try assertAlike(try stores(), "give up, then requeue") { store in
            var seen: [String] = []
            let id = try XCTUnwrap(apply(store) { $0.enqueue(entry(1)) }.outboxEntryIDs.first)
            try step(store, id, .sent(at: t0))
            let gaveUp = try apply(store) { batch in
                batch.transition(outboxEntry: id, .failed(error: "HTTP 422: invalid code", retryAt: nil, at: t0))
                batch.deadLetter(DeadLetter(
                    system: server, resourceType: "Observation", outboxEntryID: id, reason: "rejected by server", detail: "HTTP 422: invalid code",
                    payload: Data([0, 1, 2]), createdDate: t0))
                batch.deadLetter(DeadLetter(system: server, outboxEntryID: id, reason: "rejected by server", createdDate: t0 + 1))
            }
            seen.append(exact(gaveUp))
            seen.append(exact(try store.dueOutboxEntries(at: t0.addingTimeInterval(1e9), limit: 10)))
            seen.append(exact(try store.deadLetters(limit: 10, includingResolved: false, since: nil)))
            seen.append(exact(try store.outboxSummary()) + exact(try store.waitingDeadLetterCount()))
            let failed = try XCTUnwrap(store.outboxEntry(id: id))
            let requeued = try apply(store) { $0.requeue(failed, at: t0 + 10) }
            seen.append(exact(requeued))
            seen.append(exact(try XCTUnwrap(store.outboxEntry(id: id))))
            seen.append(exact(try store.dueOutboxEntries(at: t0 + 10, limit: 10).map(\.id)))
            seen.append(exact(try store.deadLetters(limit: 10, includingResolved: true, since: nil)))
            seen.append(exact(try store.deadLetters(limit: 10, includingResolved: false, since: nil)) + exact(try store.waitingDeadLetterCount()))
            seen.append(exact(try store.outboxSummary()))
            seen.append(exact(try apply(store) { $0.requeue(failed, at: t0 + 20) }))
            return seen
        }
    }

    /// A replay settles a letter: resolved once (a second resolution changes nothing), or failed again
    /// with a new reason (the same reason again changes nothing; a nil detail keeps the one it has).
    func testDeadLettersAreSettledByReplaysAlike() throws {
        try assertAlike(try stores(), "settlements") { store in
            var seen: [String] = []
            let ids = try apply(store) { batch in
                for number in 0..<4 {
                    batch.deadLetter(DeadLetter(
                        system: "https://source.example", resourceType: "Observation", resourceID: "o\(number)", reason: "mapping failed",
                        detail: "detail \(number)", payload: Data("{\"id\":\"o\(number)\"}".utf8), createdDate: t0 + Double(number) * 100))
                }
            }.deadLetterIDs
            seen.append(exact(ids))
            var batch = StoreBatch(date: t0 + 1_000.5)
            batch.settleDeadLetter(ids[0], .resolved(resolution: "imported"))
            batch.settleDeadLetter(ids[0], .resolved(resolution: "imported twice"))
            batch.settleDeadLetter(ids[1], .failedAgain(reason: "mapping failed", detail: "same reason"))
            batch.settleDeadLetter(ids[2], .failedAgain(reason: "no patient", detail: nil))
            batch.settleDeadLetter(ids[3], .failedAgain(reason: "no patient", detail: "new detail"))
            batch.settleDeadLetter(ids[3], .failedAgain(reason: "no patient", detail: "newer detail"))
            batch.settleDeadLetter(999, .resolved(resolution: "nothing"))
            seen.append(exact(try StagingBatches.apply(batch, to: store)))
            seen.append(exact(try store.deadLetters(limit: 10, includingResolved: true, since: nil)))
            seen.append(exact(try store.deadLetters(limit: 10, includingResolved: false, since: nil).map(\.id)))
            seen.append(exact(try store.deadLetters(limit: 10, includingResolved: true, since: t0 + 200).map(\.id)))
            seen.append(exact(try store.deadLetters(limit: 2, includingResolved: true, since: nil).map(\.id)))
            seen.append(exact(try store.deadLetters(limit: -1, includingResolved: true, since: nil).map(\.id)))
            seen.append(exact(try store.deadLetter(id: ids[0])) + exact(try store.deadLetter(id: 999)))
            seen.append(exact(try store.waitingDeadLetterCount()))
            return seen
        }
    }

    func testExportProgressIsKeptAndReplacedPerTargetAlike() throws {
        try assertAlike(try stores(), "export progress") { store in
            let first = ExportProgress(target: "/out", exportID: "a1", file: "/out/export-1.json", committedDate: t0)
            try apply(store) { batch in
                batch.recordExportProgress(first)
                batch.recordExportProgress(ExportProgress(target: "/other.json", exportID: "b1", file: "/other.json", committedDate: t0))
            }
            let kept = try store.exportProgress(target: "/out")
            XCTAssertEqual(kept, first)
            try apply(store) { $0.recordExportProgress(ExportProgress(target: "/out", exportID: "a2", file: "/out/export-2.json", committedDate: t0 + 0.5)) }
            return [kept, try store.exportProgress(target: "/out"), try store.exportProgress(target: "/other.json"), try store.exportProgress(target: "/none")]
        }
    }

    func testTheFirstReportStartOfAFrequencyStaysAlike() throws {
        try assertAlike(try stores(), "report starts") { store in
            let first = ReportStart(frequency: "weekly", firstDay: "2026-11-16", recordedDate: t0)
            try apply(store) { batch in
                batch.recordReportStart(first)
                batch.recordReportStart(ReportStart(frequency: "monthly", firstDay: "2026-10-01", recordedDate: t0))
            }
            try apply(store) { $0.recordReportStart(ReportStart(frequency: "weekly", firstDay: "2026-11-23", recordedDate: t0 + 1)) }
            XCTAssertEqual(try store.reportStart(frequency: "weekly"), first)
            return [try store.reportStart(frequency: "weekly"), try store.reportStart(frequency: "monthly"), try store.reportStart(frequency: "daily")]
        }
    }

    /// A batch refused part-way leaves nothing of itself: not its checkpoint, progress, entries or letters.
    func testARefusedBatchLeavesNothingAlike() throws {
        try assertAlike(try stores(), "a refused batch") { store in
            let id = try XCTUnwrap(apply(store) { $0.enqueue(entry(1)) }.outboxEntryIDs.first)
            let error = storeError {
                try apply(store) { batch in
                    batch.setCheckpoint(SyncCheckpoint(server: server, resourceType: "Observation", cursor: "c1", updatedDate: t0))
                    batch.recordExportProgress(ExportProgress(target: "/out", exportID: "a1", file: "/out/1.json", committedDate: t0))
                    batch.recordReportStart(ReportStart(frequency: "weekly", firstDay: "2026-11-16", recordedDate: t0))
                    batch.enqueue(entry(2))
                    batch.deadLetter(DeadLetter(system: server, reason: "r", createdDate: t0))
                    batch.transition(outboxEntry: id, .sent(at: t0))
                    batch.transition(outboxEntry: id, .acknowledged(at: t0))
                    batch.transition(outboxEntry: id, .acknowledged(at: t0))
                }
            }
            return [
                exact(error),
                exact(try store.checkpoint(server: server, resourceType: "Observation")),
                exact(try store.exportProgress(target: "/out")),
                exact(try store.reportStart(frequency: "weekly")),
                exact(try store.outboxSummary()),
                exact(try store.outboxEntry(id: id)),
                exact(try store.deadLetters(limit: 10, includingResolved: true, since: nil)),
            ]
        }
    }

    /// No entry of an outcome with several tips (two devices' edits of one version: a conflict) is due; once
    /// a version names both, its entries are due again, oldest first.
    func testNoEntryOfAnOutcomeWithSeveralTipsIsDueAlike() throws {
        let (_, _, task, basics) = try WriteFixtures.basics()
        func version(_ value: Double, after previous: [UUID], day: Int = 1) -> Outcome {
            var outcome = WriteFixtures.outcome(task, occurrence: 0)
            outcome.metadata.uuid = UUID()
            outcome.metadata.previousVersionUUIDs = previous
            outcome.metadata.effectiveDate = WriteFixtures.day(day)
            outcome.values = [OutcomeValue(.double(value))]
            return outcome
        }
        let root = version(1, after: [])
        let (left, right) = (version(2, after: [root.uuid]), version(3, after: [root.uuid]))
        let resolving = version(4, after: [left.uuid, right.uuid], day: 2)
        var other = WriteFixtures.outcome(task, occurrence: 1)
        other.metadata.uuid = UUID()
        try assertAlike(try storesWithEntities(), "due entries beside a conflict") { store in
            do {
                try store.apply(basics)
            } catch PostgresStoreError.unavailable {
                throw XCTSkip("the PostgreSQL entity writer has not landed in this branch: outcome versions cannot be written yet")
            }
            var seen: [String] = []
            var batch = StoreBatch(date: WriteFixtures.day(1))
            for outcome in [root, left, right, other] { batch.appendVersion(keepingUUIDOf: outcome) }
            let queued = try store.apply(batch)
            seen.append(exact(queued.outboxEntryIDs))
            seen.append(exact(try store.dueOutboxEntries(at: WriteFixtures.day(9), limit: 10)))
            seen.append(exact(try store.outboxEntries(in: .pending, limit: 10).map(\.id)))
            batch = StoreBatch(date: WriteFixtures.day(2))
            batch.appendVersion(keepingUUIDOf: resolving)
            seen.append(exact(try store.apply(batch).outboxEntryIDs))
            seen.append(exact(try store.dueOutboxEntries(at: WriteFixtures.day(9), limit: 10)))
            seen.append(exact(try store.dueOutboxEntries(at: WriteFixtures.day(9), limit: 2).map(\.id)))
            return seen
        }
    }
}
