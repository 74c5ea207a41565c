import AppClient
import CareModel
import Foundation
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// Issue 48, item 5's acceptance: the AuditEvents of an app pull and a push made through a real
/// `caregate serve` validate with `caregate validate` and carry BALP's required elements.
final class AuditEventsServeTests: XCTestCase {
    func testPullAndPushThroughServeExportAsValidBALPAuditEvents() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            let folder = try makeScratchFolder("audit-events-serve")
            let store = try XCTUnwrap(tested.location)
            let key = folder.appendingPathComponent("server.key").path
            let fixture = try AppServerFixture(tested)
            let patient = "Patient/pat-1"
            let task = try XCTUnwrap(fixture.tasks[patient])
            let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", patient, "--expires-in", "1h"])
            XCTAssertEqual(issued.status, 0, issued.stderr)
            let token = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

            let server = try AppServerProcess.start(store: store, key: key)
            let client = AppClient(base: server.base, token: token)
            var knowledge = KnowledgeVector()
            for record in try await client.pull(knowledge: knowledge) { knowledge.merge(with: record.knowledgeVector) }
            let device = UUID()
            knowledge.processes[device] = 1
            let outcome = Outcome(
                taskUUID: task.uuid, taskOccurrenceIndex: 0, values: [OutcomeValue(.double(1))],
                metadata: EntityMetadata(effectiveDate: AppServerFixture.day0, timezone: .gmt))
            try await client.push(revisions: [CareKitRevisionRecord(entities: [CareKitEntity(.outcome(outcome))], knowledgeVector: knowledge)], knowledge: knowledge)
            _ = server.stop()

            let events = try exportedAuditEvents(store: store, folder: folder).events
            for event in events { try BALPRequirements.check(event) }
            let profiles = events.filter { $0["outcome"] as? String == "0" }.compactMap(BALPRequirements.profile)
            XCTAssertTrue(profiles.contains("https://profiles.ihe.net/ITI/BALP/StructureDefinition/IHE.BasicAudit.PatientQuery"), "\(profiles)")
            XCTAssertTrue(profiles.contains("https://profiles.ihe.net/ITI/BALP/StructureDefinition/IHE.BasicAudit.PatientCreate"), "\(profiles)")
            // The push's entry, written unanswered before the write and completed with its answer, is one event.
            XCTAssertEqual(events.filter { BALPRequirements.subtype($0) == "create" }.count, 1)
        }
    }
}
