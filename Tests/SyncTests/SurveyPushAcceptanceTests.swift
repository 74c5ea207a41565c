import AppClient
import CareModel
import FHIR
import Foundation
import Pipeline
import Store
import StoreTestSupport
import Sync
import Testing
import TestSupport

/// Issue 44's end-to-end acceptance: a survey task pulled from a real FHIR server (sekmet-fhir), answered
/// by a device through `caregate serve` as CareKit syncs (a misfit refused with its linkId), then pushed
/// by `caregate sync`, reaches the server as one QuestionnaireResponse, exactly once across a SIGKILL right
/// after the server stored the push (before the receipt was committed) and the reruns after it.
@Suite struct SurveyPushAcceptanceTests {
    /// On a SQLite file and on a PostgreSQL database.
    @Test(arguments: TestStoreKind.allCases)
    func aSurveyAnsweredThroughServeReachesTheServerOnceAcrossAKill(kind: TestStoreKind) async throws {
        guard LiveTestSetup.sekmetIsInstalled() else { return }
        let fhir = try FHIRServerProcess.start()
        defer { fhir.stop() }
        let folder = try LiveTestSetup.scratchFolder("survey-acceptance")
        defer { try? FileManager.default.removeItem(at: folder) }
        let yesterday = ISO8601DateFormatter.string(from: Date().addingTimeInterval(-86_400), timeZone: .gmt, formatOptions: [.withFullDate])
        try loadKeepingIDs([
            try folder.writeFile("provider.json", SurveyLiveTests.provider(startingOn: yesterday)), try folder.writeFile("q.json", SurveyLiveTests.questionnaire),
        ], into: fhir.base)
        let config = folder.appendingPathComponent("sync.yaml")
        try Data("server: \(fhir.base.absoluteString)\ntime-zone: UTC\nresources: [Patient, CarePlan]\n".utf8).write(to: config)
        guard let live = try await LiveStore.make(kind, in: folder) else { return }
        defer { live.remove() }
        let store = live.location
        let key = folder.appendingPathComponent("server.key").path
        let pulled = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
        #expect(pulled.status == 0, "\(pulled.stdout)\(pulled.stderr)")
        let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "Patient/sp1", "--expires-in", "10m"])
        #expect(issued.status == 0, "\(issued.stderr)")

        // The device: pull, answer the survey (a misfit first, refused), push.
        let app = try AppServerProcess.start(store: store, key: key)
        let client = AppClient(base: app.base, token: issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        let device = UUID()
        var knowledge = KnowledgeVector([device: 1])
        for record in try await client.pull(knowledge: knowledge) { knowledge.merge(with: record.knowledgeVector) }
        let survey = try #require(try await client.pull(knowledge: KnowledgeVector()).flatMap(\.entities).compactMap { item -> CareTask? in
            guard case .task(let task) = item.entity, task.metadata.tags?.contains("survey") ?? false else { return nil }
            return task
        }.last)
        #expect(survey.metadata.userInfo?["questionnaire"] == "http://example.org/Questionnaire/mood|3")
        knowledge.increment(clockFor: device)
        let now = Date()
        func outcome(_ values: [OutcomeValue]) -> Outcome {
            Outcome(taskUUID: survey.uuid, taskID: survey.id, taskOccurrenceIndex: 1, values: values,
                    metadata: EntityMetadata(effectiveDate: now, createdDate: now, updatedDate: now, timezone: .gmt))
        }
        let misfit = [CareKitRevisionRecord(entities: [CareKitEntity(.outcome(outcome([OutcomeValue(.text("bad"), kind: "score", createdDate: now)])))], knowledgeVector: knowledge)]
        do {
            _ = try await client.push(revisions: misfit, knowledge: knowledge)
            Issue.record("a text answer to an integer item was taken")
        } catch let AppClientError.refused(status, _, message) {
            #expect(status == 422)
            #expect(message.contains("score"), "\(message)")
        }
        let answered = [CareKitRevisionRecord(entities: [CareKitEntity(.outcome(outcome([OutcomeValue(.integer(7), kind: "score", createdDate: now)])))], knowledgeVector: knowledge)]
        #expect(try await client.push(revisions: answered, knowledge: knowledge).stored == 1)
        app.stop()

        // The push, killed right after the server stored it, before its receipt was committed.
        let base: String = fhir.base.absoluteString
        await #expect(processExitsWith: .signal(SIGKILL), "killed once the server has the response") { [store = store as String, base = base as String] in
            try await LiveStore.offThePool {
                let receiver = KilledAfterReceiving(inner: FHIRServerReceiver(client: FHIRClient(base: URL(string: base)!)))
                _ = try Gateway(store: try LiveStore.open(store)).exporter().push(to: receiver)
            }
        }
        let afterKill = try Self.responses(fhir)
        #expect(afterKill == 1, "the killed push stored it")
        let rerun = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        #expect(rerun.stdout.contains("1 acknowledged"), "\(rerun.stdout)")
        let quiet = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
        #expect(quiet.stdout.contains("pushed: 0 outcome(s)"), "\(quiet.stdout)")
        let atEnd = try Self.responses(fhir)
        #expect(atEnd == 1, "one QuestionnaireResponse for the outcome")
        let response = try #require(try Self.response(fhir))
        #expect(response.childValue("questionnaire") == "http://example.org/Questionnaire/mood|3")
        #expect(response.child(named: "item")?.child(named: "answer")?.childValue("valueInteger") == "7")
        #expect(response.child(named: "subject")?.childValue("reference") == "Patient/sp1")
        #expect(response.child(named: "basedOn")?.childValue("reference") == "CarePlan/scp1")
    }

    /// The QuestionnaireResponses CareGate wrote on the server (a fresh one: the search may ignore
    /// `identifier`, and its page may carry an OperationOutcome, which is not counted).
    static func responses(_ server: FHIRServerProcess) throws -> Int {
        var count = 0
        try FHIRClient(base: server.base).search("QuestionnaireResponse", [("identifier", "urn:caregate:outcome|")]) { page in
            let resources = page.children(named: "entry").compactMap { $0.child(named: "resource") }
            count += resources.filter { $0.resourceType == "QuestionnaireResponse" }.count
            return true
        }
        return count
    }

    static func response(_ server: FHIRServerProcess) throws -> Element? {
        var found: Element?
        try FHIRClient(base: server.base).search("QuestionnaireResponse", [("identifier", "urn:caregate:outcome|")]) { page in
            found = page.children(named: "entry").first?.child(named: "resource")
            return false
        }
        return found
    }
}

/// Hands each Bundle to `inner` (the server stores it), then dies by SIGKILL before the push can commit
/// the receipts: what a crash at the worst moment leaves.
struct KilledAfterReceiving: ExportReceiver {
    let inner: FHIRServerReceiver

    func receive(bundle: Data, entryCounts: [Int]) throws -> [ExportReceipt] {
        _ = try inner.receive(bundle: bundle, entryCounts: entryCounts)
        kill(getpid(), SIGKILL)
        return []
    }
}
