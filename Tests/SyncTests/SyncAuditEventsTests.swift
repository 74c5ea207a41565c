import CareModel
import FHIR
import Foundation
import Pipeline
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// Issue 48, item 5: `audit-events: true` makes the sync job queue each new entry of the app API's audit
/// trail as a BALP AuditEvent and push it through the outbox, each once (`PUT AuditEvent/<id>`).
final class SyncAuditEventsTests: XCTestCase {
    func testAuditEventsSetting() throws {
        XCTAssertFalse(try SyncConfiguration.parse("server: http://127.0.0.1:1/fhir\n", file: "s.yaml").auditEvents)
        XCTAssertTrue(try SyncConfiguration.parse("server: http://127.0.0.1:1/fhir\naudit-events: true\n", file: "s.yaml").auditEvents)
        XCTAssertThrowsError(try SyncConfiguration.parse("server: http://127.0.0.1:1/fhir\naudit-events: yes please\n", file: "s.yaml")) { error in
            XCTAssertTrue("\(error)".contains("`audit-events:` is true or false"), "\(error)")
        }
    }

    /// The trail's entries are queued once: a second queueing finds them; a write still unanswered waits.
    func testEachEntryIsQueuedOnce() throws {
        try forEachStore { tested in
            let store = tested.store
            let now = Date()
            try store.recordAudit([
                AuditEntry(date: now.addingTimeInterval(-60), subject: "subj-1", patientID: "pat-1", action: "GET /carekit/v1/revisions", status: 200, detail: "1 revisions"),
                AuditEntry(date: now.addingTimeInterval(-30), subject: "subj-1", patientID: "pat-1", action: "POST /carekit/v1/revisions", status: 200, detail: "1 outcomes"),
                AuditEntry(date: now, subject: "subj-1", patientID: "pat-1", action: "POST /carekit/v1/revisions", status: AuditEntry.unansweredStatus, detail: AuditEntry.unansweredDetail),
            ])
            let outbox = AuditEventOutbox(store: store)
            let first = try outbox.enqueueNew(now: now)
            XCTAssertEqual([first.queued, first.alreadyQueued, first.waiting], [2, 0, 1], "\(tested.kind)")
            let second = try outbox.enqueueNew(now: now)
            XCTAssertEqual([second.queued, second.alreadyQueued, second.waiting], [0, 2, 1])
            // Past the grace, the unanswered write is queued as such.
            let later = try outbox.enqueueNew(now: now.addingTimeInterval(AuditEventOutbox.unansweredGrace + 1))
            XCTAssertEqual([later.queued, later.alreadyQueued, later.waiting], [1, 2, 0])
            let queued = try store.outboxEntries(in: .pending, limit: 100).filter { PayloadOutbox.kind(of: $0) == .audit }
            XCTAssertEqual(queued.count, 3)
            XCTAssertTrue(queued.allSatisfy { $0.entityID == "AuditEvent/\($0.entityUUID.uuidString.lowercased())" })
        }
    }

    /// Against the real server: a sync run pushes the AuditEvents of an app pull and push; each reads back
    /// valid with BALP's elements; a second run sends none.
    func testSyncPushesEachAuditEventOnce() throws {
        try forEachStore(sqliteFile: true) { tested in
            let server = try FHIRServerProcess.start()
            defer { server.stop() }
            let folder = try makeScratchFolder("sync-audit-events")
            let config = folder.appendingPathComponent("sync.yaml")
            try Data("server: \(server.base.absoluteString)\naudit-events: true\n".utf8).write(to: config)
            let storePath = try XCTUnwrap(tested.location)
            let store = tested.store
            let now = Date()
            let entries = [
                AuditEntry(date: now.addingTimeInterval(-60), subject: "subj-1", patientID: "Patient/pat-1", action: "GET /carekit/v1/revisions", status: 200, detail: "1 revisions"),
                AuditEntry(date: now.addingTimeInterval(-30), subject: "subj-1", patientID: "Patient/pat-1", action: "POST /carekit/v1/revisions", status: 200, detail: "1 outcomes"),
            ]
            let ids = try store.recordAudit(entries)

            let first = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", storePath])
            XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
            XCTAssertTrue(first.stdout.contains("audit: 2 sent: 2 acknowledged, 0 refused, 0 to send again"), first.stdout)
            for (entry, id) in zip(entries, ids) {
                var stored = entry
                stored.id = id
                let event = try FHIRClient(base: server.base).read("AuditEvent", BALPAuditEvent.id(of: stored))
                let file = folder.appendingPathComponent("read-back-\(id).json")
                let data = FHIRJSON.write(event, pretty: true)
                try data.write(to: file)
                let validated = try CLIRunner.run(["validate", file.path])
                XCTAssertEqual(validated.status, 0, validated.stdout + validated.stderr)
                try BALPRequirements.check(try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any]))
            }

            let second = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", storePath])
            XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
            XCTAssertFalse(second.stdout.contains("audit: "), second.stdout)
        }
    }

    /// Against the real server: a sync run's push of outcomes writes one entry per patient per Bundle
    /// (`caregate sync push`, an Export), with the run's id; the same run then pushes those entries as
    /// AuditEvents without auditing that push, and a second run writes and sends nothing more.
    func testSyncPushesAreAuditedOnceAndTheirAuditEventsAreNotAuditedAgain() throws {
        try forEachStore(sqliteFile: true) { tested in
            let server = try FHIRServerProcess.start()
            defer { server.stop() }
            let folder = try makeScratchFolder("sync-push-audit")
            let config = folder.appendingPathComponent("sync.yaml")
            try Data("server: \(server.base.absoluteString)\naudit-events: true\nbatch-size: 2\n".utf8).write(to: config)
            let storePath = try XCTUnwrap(tested.location)
            let zone = TimeZone(identifier: "America/Chicago")!
            let store = tested.store
            XCTAssertEqual(try Gateway(store: store, options: Gateway.Options(timeZone: zone))
                .importFHIR(FHIRInput.sources(for: [Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path])).failures.count, 0)
            var batch = StoreBatch()
            let task = try XCTUnwrap(try store.tasks(EntityQuery(ids: ["CarePlan/cp-1#activity-Walk-for-30-minutes"])).first)
            for occurrence in 1...3 {
                var metadata = EntityMetadata(effectiveDate: task.schedule.eventStart(occurrence: occurrence) ?? Date(), timezone: zone)
                metadata.source = "HeartApp"
                batch.upsert(Outcome(taskUUID: task.uuid, taskOccurrenceIndex: occurrence, values: [OutcomeValue(.boolean(true))], metadata: metadata))
            }
            try store.apply(batch)
            func pushEntries() throws -> [AuditEntry] {
                try tested.reopen().auditEntries(patientID: nil, limit: 1_000).filter { $0.action == "caregate sync push" }
            }

            let first = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", storePath])
            XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
            XCTAssertTrue(first.stdout.contains("pushed: 3 outcome(s): 3 acknowledged"), first.stdout)
            let entries = try pushEntries()
            XCTAssertEqual(entries.count, 2, "\(tested.kind): two Bundles of one patient: \(entries)")
            XCTAssertEqual(Set(entries.map(\.patientID)), ["Patient/pat-1"])
            XCTAssertEqual(Set(entries.map(\.status)), [0])
            XCTAssertTrue(entries.allSatisfy { $0.subject?.hasPrefix("cli:") == true })
            let run = try XCTUnwrap(try tested.reopen().syncRuns(limit: 1).first?.runID)
            for entry in entries {
                let detail = entry.detail ?? ""
                XCTAssertTrue(detail.contains("to \(server.base.absoluteString) (run \(run)): "), detail)
                XCTAssertTrue(detail.hasSuffix(" stored, 0 refused, 0 to send again"), detail)
            }

            // The run queues the trail's new entries after its outcomes went out: these two go out in it.
            XCTAssertTrue(first.stdout.contains("audit: 2 sent: 2 acknowledged"), first.stdout)
            XCTAssertEqual(try pushEntries().count, 2, "pushing the AuditEvents is not audited again")
            for entry in entries {
                let event = try FHIRClient(base: server.base).read("AuditEvent", BALPAuditEvent.id(of: entry))
                XCTAssertEqual(event.child(named: "type")?.childValue("code"), "110106", "an Export")
                let file = folder.appendingPathComponent("push-event-\(entry.id ?? 0).json")
                try FHIRJSON.write(event, pretty: true).write(to: file)
                let validated = try CLIRunner.run(["validate", file.path])
                XCTAssertEqual(validated.status, 0, validated.stdout + validated.stderr)
            }

            let second = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", storePath])
            XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
            XCTAssertFalse(second.stdout.contains("audit: "), second.stdout)
            XCTAssertEqual(try pushEntries().count, 2)
        }
    }
}
