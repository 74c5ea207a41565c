import AppClient
import CareModel
import Foundation
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// An app's outcome end to end: the provider's resources synced from a real FHIR server, `caregate serve`
/// as its own process, a device pulling and pushing through AppClient as CareKit would, then
/// `caregate sync --once` writing the outcome back to the FHIR server once, and a second sync sending
/// nothing.
final class AppSyncLiveTests: XCTestCase {
    func testAnOutcomePushedThroughServeReachesTheFHIRServerOnce() throws {
        try forEachStore(sqliteFile: true) { tested in
            let fhir = try FHIRServerProcess.start()
            defer { fhir.stop() }
            try loadKeepingIDs([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: fhir.base)
            let folder = try makeScratchFolder("app-sync-live")
            let config = folder.appendingPathComponent("sync.yaml")
            try Data("server: \(fhir.base.absoluteString)\ntime-zone: America/Chicago\n".utf8).write(to: config)
            let store = try XCTUnwrap(tested.location)
            let key = folder.appendingPathComponent("server.key").path
            let pulled = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertEqual(pulled.status, 0, pulled.stdout + pulled.stderr)
            let patientID = try XCTUnwrap(try tested.reopen().patients(.current).first?.id)
            let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", patientID, "--expires-in", "10m"])
            XCTAssertEqual(issued.status, 0, issued.stderr)

            let app = try AppServerProcess.start(store: store, key: key)
            defer { app.stop() }
            let client = AppClient(base: app.base, token: issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            try blocking {
                try await Self.device(client)
            }
            app.stop()

            let written = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertEqual(written.status, 0, written.stdout + written.stderr)
            XCTAssertTrue(written.stdout.contains("1 acknowledged"), written.stdout)
            XCTAssertEqual(try observations(fhir), 1, "\(tested.kind): one Observation for the outcome")
            let quiet = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertEqual(quiet.status, 0, quiet.stdout + quiet.stderr)
            XCTAssertTrue(quiet.stdout.contains("pushed: 0 outcome(s)"), quiet.stdout)
            XCTAssertEqual(try observations(fhir), 1)
        }
    }

    /// A device as OCKStore.synchronize() runs: pull and merge, clock on, push what is ahead, clock on;
    /// then the same push again, refused (pull first) and, after a pull, storing nothing twice.
    private static func device(_ client: AppClient) async throws {
        // A device as OCKStore.synchronize() runs: pull and merge, clock on, push what is ahead, clock on.
        let device = UUID()
        var knowledge = KnowledgeVector([device: 1])
        let records = try await client.pull(knowledge: knowledge)
        for record in records { knowledge.merge(with: record.knowledgeVector) }
        XCTAssertEqual(records.last?.entities, [])
        let task = try XCTUnwrap(records.flatMap(\.entities).compactMap { item -> CareTask? in
            guard case .task(let task) = item.entity, task.id == "CarePlan/cp-1#activity-Walk-for-30-minutes" else { return nil }
            return task
        }.last)
        knowledge.increment(clockFor: device)
        let now = Date()
        let outcome = Outcome(
            taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 1, values: [OutcomeValue(.boolean(true), createdDate: now)],
            metadata: EntityMetadata(effectiveDate: now, createdDate: now, updatedDate: now, timezone: .gmt))
        let revisions = [CareKitRevisionRecord(entities: [CareKitEntity(.outcome(outcome))], knowledgeVector: knowledge)]
        let first = try await client.push(revisions: revisions, knowledge: knowledge)
        XCTAssertEqual(first.stored, 1)
        knowledge.increment(clockFor: device)
        // The same push before a pull: pull first. After a pull: nothing stored twice.
        do {
            try await client.push(revisions: revisions, knowledge: knowledge)
            XCTFail("a push behind the server was taken")
        } catch let AppClientError.refused(status, code, _) {
            XCTAssertEqual(status, 409)
            XCTAssertEqual(code, "pull first")
        }
        let again = try await client.pull(knowledge: knowledge)
        XCTAssertEqual(again.flatMap(\.entities).map(\.entity.metadata.uuid), [outcome.uuid], "its own outcome comes back, under its uuid")
        for record in again { knowledge.merge(with: record.knowledgeVector) }
        let second = try await client.push(revisions: revisions, knowledge: knowledge)
        XCTAssertEqual([second.stored, second.unchanged], [0, 1])
    }

    private func observations(_ server: FHIRServerProcess) throws -> Int {
        var count = 0
        try FHIRClient(base: server.base).search("Observation", [("identifier", "urn:caregate:outcome|")]) { page in
            count += page.children(named: "entry").count
            return true
        }
        return count
    }
}
