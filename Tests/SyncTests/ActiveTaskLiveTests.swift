import AppClient
import CareModel
import Crypto
import FHIR
import Foundation
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// Active-task results end to end (issue 43 item 3): a care plan whose activities are a six-minute walk
/// (LOINC 64098-7), a timed walk, a tone audiometry (LOINC 89015-2) and a voice recording, synced from a real FHIR
/// server (sekmet-fhir); a device records the results through `caregate serve` as CareKit would (outcome
/// values whose `kind` names each result, the recording a `Data` value); `caregate sync --once` writes
/// them back as the mapped Observations and a DocumentReference, each valid R4 (`caregate validate` on
/// what the server holds), once.
final class ActiveTaskLiveTests: XCTestCase {
    private static let recording = Data((0..<300_000).map { UInt8(truncatingIfNeeded: ($0 &* 7) ^ ($0 >> 5)) })

    /// The provider's side: a patient and a plan of three active tasks, daily since two days ago.
    private func plan(in folder: URL) throws -> URL {
        let start = String(FHIRDateFormat.dateTime(Date().addingTimeInterval(-2 * 86_400), in: TimeZone(identifier: "America/Chicago") ?? .gmt).prefix(10))
        func activity(_ system: String, _ code: String, _ text: String) -> String {
            """
            {"detail": {"kind": "ServiceRequest", "status": "in-progress", "code": {"coding": [{"system": "\(system)", "code": "\(code)"}], "text": "\(text)"}}}
            """
        }
        let bundle = """
            {"resourceType": "Bundle", "type": "collection", "entry": [
              {"fullUrl": "https://ehr.example/fhir/Patient/at-pat", "resource": {"resourceType": "Patient", "id": "at-pat",
                "name": [{"family": "Walker", "given": ["Ada"]}], "birthDate": "1958-03-02"}},
              {"fullUrl": "https://ehr.example/fhir/CarePlan/at-plan", "resource": {"resourceType": "CarePlan", "id": "at-plan",
                "status": "active", "intent": "plan", "subject": {"reference": "Patient/at-pat"}, "period": {"start": "\(start)"},
                "activity": [
                  \(activity("http://loinc.org", "64098-7", "Six minute walk test")),
                  \(activity("http://loinc.org", "89015-2", "Hearing test")),
                  \(activity("urn:caregate:active-task", "voice-recording", "Voice recording")),
                  \(activity("urn:caregate:active-task", "timed-walk", "Timed 25-foot walk"))
                ]}}
            ]}
            """
        let file = folder.appendingPathComponent("active-tasks.json")
        try Data(bundle.utf8).write(to: file)
        return file
    }

    func testToneAudiometryTimedWalksAndARecordingReachTheFHIRServer() throws {
        try forEachStore(sqliteFile: true) { tested in
            let fhir = try FHIRServerProcess.start()
            defer { fhir.stop() }
            let folder = try makeScratchFolder("active-task-live")
            try loadKeepingIDs([try plan(in: folder).path], into: fhir.base)
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
            try blocking { try await Self.device(client) }
            app.stop()

            let written = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertEqual(written.status, 0, written.stdout + written.stderr)
            XCTAssertTrue(written.stdout.contains("4 acknowledged"), written.stdout)

            let server = FHIRClient(base: fhir.base)
            let walk = try XCTUnwrap(try search(server, "Observation", code: "http://loinc.org|64098-7").first, "the six-minute walk")
            XCTAssertEqual(walk.child(named: "valueQuantity").map(Self.quantity), ["452.5", "m", "http://unitsofmeasure.org", "m"])
            XCTAssertEqual(walk.child(named: "component")?.child(named: "valueQuantity").map(Self.quantity), ["360", "s", "http://unitsofmeasure.org", "s"])
            XCTAssertEqual(walk.child(named: "subject")?.childValue("reference"), "Patient/at-pat")
            XCTAssertEqual(walk.child(named: "basedOn")?.childValue("reference"), "CarePlan/at-plan")

            let timed = try XCTUnwrap(try search(server, "Observation", code: "urn:caregate:active-task|timed-walk").first, "the timed walk")
            XCTAssertEqual(timed.child(named: "valueQuantity").map(Self.quantity), ["7.4", "s", "http://unitsofmeasure.org", "s"])
            XCTAssertEqual(timed.children(named: "component").compactMap { $0.child(named: "valueQuantity")?.childValue("value") }, ["7.62"])

            let audiogram = try XCTUnwrap(try search(server, "Observation", code: "http://loinc.org|89015-2").first, "the audiogram")
            let thresholds = audiogram.children(named: "component").map { component in
                (component.child(named: "code")?.child(named: "coding")?.childValue("code") ?? "", component.child(named: "valueQuantity").map(Self.quantity) ?? [])
            }
            XCTAssertEqual(thresholds.map(\.0), ["hearing-threshold.left.250", "89016-0", "89018-6", "89017-8", "89019-4"])
            XCTAssertEqual(thresholds.map { $0.1.first ?? nil }, ["10", "15", "20", "20", "25"])
            XCTAssertTrue(thresholds.allSatisfy { $0.1.last == "dB" }, "\(thresholds)")

            let documents = try search(server, "DocumentReference", code: nil)
            XCTAssertEqual(documents.count, 1, "one DocumentReference for the recording")
            let document = try XCTUnwrap(documents.first)
            let attachment = try XCTUnwrap(document.child(named: "content")?.child(named: "attachment"))
            XCTAssertEqual(attachment.childValue("size"), String(Self.recording.count))
            XCTAssertEqual(attachment.childValue("hash"), Data(Insecure.SHA1.hash(data: Self.recording)).base64EncodedString())
            XCTAssertEqual(attachment.childValue("contentType"), "audio/mp4")
            XCTAssertEqual(attachment.childValue("data").flatMap { Data(base64Encoded: $0) }, Self.recording)
            XCTAssertEqual(document.childValue("status"), "current")
            XCTAssertEqual(document.child(named: "context")?.child(named: "related")?.childValue("reference"), "CarePlan/at-plan")

            // What the server holds is valid R4, by the project's validator.
            // One Provenance per outcome, naming what it became.
            let provenances = try search(server, "Provenance", code: nil)
            XCTAssertEqual(provenances.count, 4)
            let targets = Set(provenances.flatMap { $0.children(named: "target").compactMap { $0.childValue("reference") } })
            for resource in [walk, timed, audiogram, document] {
                XCTAssertTrue(targets.contains("\(resource.resourceType ?? "")/\(resource.childValue("id") ?? "")"), "\(targets)")
            }

            for (name, resource) in [("walk", walk), ("timed", timed), ("audiogram", audiogram), ("recording", document)] {
                let path = folder.appendingPathComponent("\(name).json")
                try FHIRJSON.write(resource).write(to: path)
                let validated = try CLIRunner.run(["validate", path.path])
                XCTAssertEqual(validated.status, 0, "\(name): \(validated.stdout)\(validated.stderr)")
            }

            let quiet = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertEqual(quiet.status, 0, quiet.stdout + quiet.stderr)
            XCTAssertTrue(quiet.stdout.contains("pushed: 0 outcome(s)"), quiet.stdout)
            XCTAssertEqual(try search(server, "Observation", code: "http://loinc.org|89015-2").count, 1, "sent once")
            XCTAssertEqual(try search(server, "DocumentReference", code: nil).count, 1, "sent once")
        }
    }

    /// A device that pulls, finds each active task by its codes, and pushes one outcome per task.
    private static func device(_ client: AppClient) async throws {
        let device = UUID()
        var knowledge = KnowledgeVector([device: 1])
        let records = try await client.pull(knowledge: knowledge)
        for record in records { knowledge.merge(with: record.knowledgeVector) }
        let tasks = records.flatMap(\.entities).compactMap { item -> CareTask? in
            guard case .task(let task) = item.entity else { return nil }
            return task
        }
        func task(_ code: String) throws -> CareTask {
            try XCTUnwrap(tasks.last { $0.metadata.linkage.codes.contains(code) }, "a task coded \(code)")
        }
        knowledge.increment(clockFor: device)
        let now = Date()
        func outcome(_ task: CareTask, _ values: [OutcomeValue]) -> CareKitEntity {
            CareKitEntity(.outcome(Outcome(
                taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 1, values: values,
                metadata: EntityMetadata(effectiveDate: now, createdDate: now, updatedDate: now, timezone: .gmt))))
        }
        // As ResearchKit's results give them: ORKTimedWalkResult-like distance and duration, the dBHL
        // audiogram's calculated thresholds per ear and frequency, an ORKFileResult's data.
        let walk = outcome(try task("http://loinc.org|64098-7"), [
            OutcomeValue(.double(452.5), units: "m", kind: "distance"), OutcomeValue(.double(360), units: "s", kind: "duration"),
        ])
        let audiogram = outcome(try task("http://loinc.org|89015-2"), [
            OutcomeValue(.double(15), units: "dB", kind: "threshold.left.1000"), OutcomeValue(.double(20), units: "dB", kind: "threshold.right.1000"),
            OutcomeValue(.double(20), units: "dB", kind: "threshold.left.2000"), OutcomeValue(.double(25), units: "dB", kind: "threshold.right.2000"),
            OutcomeValue(.double(10), units: "dB", kind: "threshold.left.250"),
        ])
        let recording = outcome(try task("urn:caregate:active-task|voice-recording"), [
            OutcomeValue(.binary(recording), units: "audio/mp4", kind: "recording"),
        ])
        let timed = outcome(try task("urn:caregate:active-task|timed-walk"), [
            OutcomeValue(.double(7.4), units: "s", kind: "duration"), OutcomeValue(.double(7.62), units: "m", kind: "distance"),
        ])
        // A recording past the push limit (8 MiB a push, base64 in JSON) is refused whole, nothing stored.
        let tooLong = outcome(try task("urn:caregate:active-task|voice-recording"), [
            OutcomeValue(.binary(Data(count: 6_400_000)), units: "audio/mp4", kind: "recording"),
        ])
        do {
            try await client.push(revisions: [CareKitRevisionRecord(entities: [tooLong], knowledgeVector: knowledge)], knowledge: knowledge)
            XCTFail("a recording past the push limit was taken")
        } catch let AppClientError.refused(status, code, _) {
            XCTAssertEqual([String(status), code], ["413", "too-large"])
        }
        let pushed = try await client.push(
            revisions: [CareKitRevisionRecord(entities: [walk, audiogram, recording, timed], knowledgeVector: knowledge)], knowledge: knowledge)
        XCTAssertEqual(pushed.stored, 4)
    }

    /// Every `type` on the server, those coded `code` (`system|code`) when given (filtered here: a token
    /// search is not what this test checks).
    private func search(_ server: FHIRClient, _ type: String, code: String?) throws -> [Element] {
        var found: [Element] = []
        try server.search(type, []) { page in
            found += page.children(named: "entry").compactMap { $0.child(named: "resource") }
            return true
        }
        guard let code else { return found }
        return found.filter { resource in
            resource.child(named: "code")?.children(named: "coding").contains { "\($0.childValue("system") ?? "")|\($0.childValue("code") ?? "")" == code } == true
        }
    }

    private static func quantity(_ element: Element) -> [String?] {
        ["value", "unit", "system", "code"].map { element.childValue($0) }
    }
}
