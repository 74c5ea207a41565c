import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// The outbox pushed to a real FHIR server (sekmet-fhir on 127.0.0.1) as transaction Bundles, from a
/// SQLite store and from a PostgreSQL one (each with a server of its own, so that counts on the server
/// are the store's).
final class PushTests: XCTestCase {
    private let zone = TimeZone(identifier: "America/Chicago")!

    /// The store under test with Fixtures/provider imported into it.
    private func importedStore(_ tested: TestStore) throws -> AnyTestStore {
        let report = try Gateway(store: tested.store, options: Gateway.Options(timeZone: zone))
            .importFHIR(FHIRInput.sources(for: [Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path]))
        XCTAssertEqual(report.failures.count, 0, "\(tested.kind)")
        return tested.store
    }

    @discardableResult
    private func record(_ values: [OutcomeValue], task id: String, occurrence: Int, in store: any Store) throws -> String {
        let task = try XCTUnwrap(try store.tasks(EntityQuery(ids: [id])).first)
        var metadata = EntityMetadata(effectiveDate: task.schedule.eventStart(occurrence: occurrence) ?? Date(), timezone: zone)
        metadata.source = "HeartApp"
        var batch = StoreBatch()
        batch.upsert(Outcome(taskUUID: task.uuid, taskOccurrenceIndex: occurrence, values: values, metadata: metadata))
        try store.apply(batch)
        return OutcomeExporter.observationID(of: Outcome.id(taskUUID: task.uuid, occurrence: occurrence))
    }

    private func observationsOnServer(_ client: FHIRClient) throws -> [Element] {
        var found: [Element] = []
        try client.search("Observation", [("identifier", "urn:caregate:outcome|"), ("_count", "50")]) { page in
            found += page.children(named: "entry").compactMap { $0.child(named: "resource") }
            return true
        }
        return found
    }

    func testPushStoresEachOutcomeOnceAndAcknowledgesIt() throws {
        try forEachStore(sqliteFile: true) { tested in
            let server = try FHIRServerProcess.start()
            defer { server.stop() }
            let client = FHIRClient(base: server.base)
            let store = try importedStore(tested)
            let bp = "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic"
            let first = try record([
                OutcomeValue(.integer(128), units: "mm[Hg]", kind: "http://loinc.org|8480-6", index: 0),
                OutcomeValue(.integer(82), units: "mm[Hg]", kind: "http://loinc.org|8462-4", index: 1),
            ], task: bp, occurrence: 4, in: store)
            try record([OutcomeValue(.boolean(true))], task: "CarePlan/cp-1#activity-Walk-for-30-minutes", occurrence: 1, in: store)
            try record([OutcomeValue(.double(10), units: "mg")], task: "MedicationRequest/medreq-1", occurrence: 3, in: store)
            try record([OutcomeValue(.binary(Data([1, 2])))], task: bp, occurrence: 5, in: store)

            let exporter = try Gateway(store: store).exporter()
            let report = try exporter.push(to: FHIRServerReceiver(client: client), batchSize: 2)
            XCTAssertEqual(report.requests, 2, "3 outcomes in Bundles of 2")
            XCTAssertEqual(report.acknowledged, 3, "\(report.notTaken)")
            XCTAssertEqual(report.refused.count, 1, "the binary value is a dead letter, never sent")
            XCTAssertEqual(try store.outboxEntries(in: .acknowledged, limit: .max).count, 3)
            XCTAssertEqual(try store.outboxEntries(in: .failed, limit: .max).count, 1)

            let stored = try observationsOnServer(client)
            XCTAssertEqual(stored.count, 3)
            let observation = try client.read("Observation", first)
            XCTAssertEqual(observation.children(named: "component").count, 2)
            XCTAssertEqual(observation.child(named: "subject")?.childValue("reference"), "Patient/pat-1")
            var provenances = 0
            try client.search("Provenance", [("target", "Observation/\(first)")]) { page in
                provenances += page.children(named: "entry").count
                return true
            }
            XCTAssertEqual(provenances, 1, "the Provenance went with it")

            // Nothing new: nothing sent. A changed outcome: the same Observation, a new version.
            XCTAssertEqual(try exporter.push(to: FHIRServerReceiver(client: client)).requests, 0)
            try record([
                OutcomeValue(.integer(131), units: "mm[Hg]", kind: "http://loinc.org|8480-6", index: 0),
                OutcomeValue(.integer(85), units: "mm[Hg]", kind: "http://loinc.org|8462-4", index: 1),
            ], task: bp, occurrence: 4, in: store)
            let again = try exporter.push(to: FHIRServerReceiver(client: client))
            XCTAssertEqual(again.acknowledged, 1)
            XCTAssertEqual(try observationsOnServer(client).count, 3, "no duplicate on the server")
            let amended = try client.read("Observation", first)
            XCTAssertEqual(amended.childValue("status"), "amended")
            XCTAssertEqual(amended.child(named: "meta")?.childValue("versionId"), "2")
            // Each acknowledged entry keeps where the server put it: the Observation's id and version there.
            let acknowledged = try store.outboxEntries(in: .acknowledged, limit: .max).filter { $0.entityID.hasSuffix("_4") }
            XCTAssertEqual(acknowledged.map(\.server), [ServerVersion(id: first, version: "1"), ServerVersion(id: first, version: "2")])
        }
    }

    func testServerVersionIsReadFromAResponseLocation() {
        XCTAssertEqual(ServerVersion(location: "Observation/abc/_history/3"), ServerVersion(id: "abc", version: "3"))
        XCTAssertEqual(ServerVersion(location: "http://h/fhir/Observation/abc/_history/3"), ServerVersion(id: "abc", version: "3"))
        XCTAssertEqual(ServerVersion(location: "Observation/abc"), ServerVersion(id: "abc", version: nil))
        XCTAssertNil(ServerVersion(location: "abc"))
        XCTAssertNil(ServerVersion(location: ""))
    }

    /// Through a proxy that drops connections (after the server stored the Bundle), refuses them,
    /// answers 429 and 500, and truncates answers: retries end in the same state, with no duplicate.
    func testPushThroughFaultsEndsInTheSameStateWithNoDuplicate() throws {
        try forEachStore(sqliteFile: true) { tested in
            let server = try FHIRServerProcess.start()
            defer { server.stop() }
            let proxy = try FaultProxyProcess.start(upstream: server.base, schedule: ["ok", "drop", "429", "500", "truncate", "refuse", "ok"])
            defer { proxy.stop() }
            let store = try importedStore(tested)
            for occurrence in 10..<40 {
                try record([OutcomeValue(.integer(100 + occurrence), units: "mm[Hg]")], task: "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic", occurrence: occurrence, in: store)
            }
            let client = FHIRClient(base: proxy.base, timeout: 20, retry: RetryPolicy(maxAttempts: 8, baseDelay: 0.01, maxDelay: 0.05))
            let exporter = try Gateway(store: store).exporter()
            let report = try exporter.push(to: FHIRServerReceiver(client: client), batchSize: 5)
            XCTAssertEqual(report.acknowledged, 30, "\(report.notTaken)")
            XCTAssertGreaterThan(client.retries, 0)
            let faults = try proxy.stats()
            for fault in ["drop", "429", "500", "truncate", "refuse"] { XCTAssertGreaterThan(faults[fault] ?? 0, 0, "\(fault) happened: \(faults)") }
            XCTAssertEqual(try store.outboxEntries(in: .acknowledged, limit: .max).count, 30)
            XCTAssertEqual(try observationsOnServer(FHIRClient(base: server.base)).count, 30, "each outcome stored once, whatever was resent")
        }
    }

    func testAServerThatIsDownLeavesEverythingToSendAgain() throws {
        try forEachStore(sqliteFile: true) { tested in
            let store = try importedStore(tested)
            try record([OutcomeValue(.boolean(true))], task: "CarePlan/cp-1#activity-Walk-for-30-minutes", occurrence: 1, in: store)
            let exporter = try Gateway(store: store).exporter()
            let nowhere = FHIRClient(base: URL(string: "http://127.0.0.1:9/fhir")!, timeout: 5, retry: RetryPolicy(maxAttempts: 2, baseDelay: 0.01))
            try record([OutcomeValue(.boolean(true))], task: "CarePlan/cp-1#activity-Walk-for-30-minutes", occurrence: 2, in: store)
            try record([OutcomeValue(.boolean(true))], task: "CarePlan/cp-1#activity-Walk-for-30-minutes", occurrence: 3, in: store)
            try record([OutcomeValue(.boolean(true))], task: "CarePlan/cp-1#activity-Walk-for-30-minutes", occurrence: 4, in: store)
            // Bundles of one: the first three get no answer, and the fourth is not tried (the server is down).
            let report = try exporter.push(to: FHIRServerReceiver(client: nowhere), batchSize: 1)
            XCTAssertEqual(report.requests, Exporter.unansweredLimit)
            XCTAssertEqual(report.unanswered.count, Exporter.unansweredLimit, "each reported: \(report.unanswered)")
            XCTAssertTrue(report.unanswered.allSatisfy { $0.contains("no answer from the server") }, "\(report.unanswered)")
            let failed = try store.outboxEntries(in: .failed, limit: .max)
            XCTAssertEqual(failed.count, 3)
            XCTAssertEqual(try store.outboxEntries(in: .pending, limit: .max).count, 1, "the one not tried waits as it was")
            XCTAssertNotNil(failed.first?.nextAttemptDate, "it will be sent again")
            XCTAssertEqual(try store.outboxEntries(in: .acknowledged, limit: .max).count, 0)
        }
    }
}

/// `caregate export --to <FHIR base URL>` as a user runs it.
final class PushCLITests: XCTestCase {
    func testExportToAServerURL() throws {
        try forEachStore(sqliteFile: true) { tested in
            let server = try FHIRServerProcess.start()
            defer { server.stop() }
            let folder = try makeScratchFolder("push-cli")
            let store = try XCTUnwrap(tested.location)
            XCTAssertEqual(try CLIRunner.run(["import", "Fixtures/provider", "--time-zone", "America/Chicago", "--store", store]).status, 0)
            let added = try CLIRunner.run([
                "outcomes", "add", "--store", store, "--task", "CarePlan/cp-1#activity-Walk-for-30-minutes", "--occurrence", "1", "--value", "true",
            ])
            XCTAssertEqual(added.status, 0, added.stderr)
            let pushed = try CLIRunner.run(["export", "--store", store, "--to", server.base.absoluteString])
            XCTAssertEqual(pushed.status, 0, pushed.stderr)
            XCTAssertTrue(pushed.stderr.contains("1 stored"), pushed.stderr)
            let again = try CLIRunner.run(["export", "--store", store, "--to", server.base.absoluteString])
            XCTAssertTrue(again.stderr.contains("sent 0 Observation(s) in 0 request(s)"), again.stderr)
            let acknowledged = try CLIRunner.run(["outbox", "--store", store, "--state", "acknowledged"])
            XCTAssertEqual(acknowledged.stdout.split(separator: "\n").count, 1, acknowledged.stdout)
            // The push is in the audit trail: one entry of the patient, for the one Bundle sent.
            let audited = try tested.reopen().auditEntries(patientID: nil, limit: 10).filter { $0.action == "caregate export" }
            XCTAssertEqual(audited.map(\.patientID), ["Patient/pat-1"])
            XCTAssertEqual(audited.first?.detail, "1 outcome(s) to \(server.base.absoluteString): 1 stored, 0 refused, 0 to send again")
        }
    }

    func testBadServerConfigurationIsAUsageErrorAndTouchesNoStore() throws {
        let folder = try makeScratchFolder("push-config")
        let store = folder.appendingPathComponent("never.sqlite").path
        for arguments in [
            ["--to", "http://127.0.0.1:9/fhir", "--token-env", "CAREGATE_TEST_NO_SUCH_TOKEN"],
            ["--to", "http://127.0.0.1:9/fhir", "--token-file", folder.appendingPathComponent("missing").path],
            ["--to", "http://127.0.0.1:9/fhir", "--smart-client-id", "c1"],
            ["--to", "http://127.0.0.1:9/fhir", "--smart-client-id", "c1", "--smart-key", folder.appendingPathComponent("missing.pem").path],
            ["--to", "out.json", "--token-env", "X"],
        ] {
            let run = try CLIRunner.run(["export", "--store", store] + arguments)
            XCTAssertEqual(run.status, 2, "\(arguments): \(run.stderr)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: store), "no store was created")
    }
}
