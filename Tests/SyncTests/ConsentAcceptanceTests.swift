import AppClient
import CareModel
import FHIR
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Pipeline
import Store
import StoreTestSupport
import Sync
import Testing
import TestSupport

/// Issue 45's end-to-end acceptance against a real FHIR server (sekmet-fhir): a device behind
/// `caregate serve --consent-terms` (terms `required: true`) is refused its pull and push until it
/// agrees; it agrees, records an outcome, withdraws; `caregate sync` (and a push killed by SIGKILL once
/// the server stored it) writes back one Consent, inactive, with the signed PDF's hash and the signature
/// Provenance, valid under `caregate validate`, and holds the outcome back (listed with the reason) until
/// the patient agrees again, when it is written back once; a withdrawal made on the server's Consent
/// refuses the device again after the next run.
@Suite struct ConsentAcceptanceTests {
    static let provider = #"""
        {"resourceType": "Bundle", "type": "collection", "entry": [
          {"resource": {"resourceType": "Patient", "id": "cp1", "name": [{"family": "Consent", "given": ["Cora"]}]}},
          {"resource": {"resourceType": "CarePlan", "id": "ccp1", "status": "active", "intent": "plan", "subject": {"reference": "Patient/cp1"},
            "period": {"start": "2026-01-01"},
            "activity": [{"detail": {"status": "scheduled", "description": "Daily walk",
              "scheduledTiming": {"repeat": {"frequency": 1, "period": 1, "periodUnit": "d"}}}}]}}
        ]}
        """#

    /// On a SQLite file and on a PostgreSQL database.
    @Test(arguments: TestStoreKind.allCases)
    func agreeRecordWithdrawWritesOneConsentAndHoldsTheOutcome(kind: TestStoreKind) async throws {
        guard LiveTestSetup.sekmetIsInstalled() else { return }
        let fhir = try FHIRServerProcess.start()
        defer { fhir.stop() }
        let folder = try LiveTestSetup.scratchFolder("consent-acceptance")
        defer { try? FileManager.default.removeItem(at: folder) }
        try loadKeepingIDs([try folder.writeFile("provider.json", Self.provider)], into: fhir.base)
        let terms = try ConsentFixture.writeTerms(in: folder, required: true)
        let config = folder.appendingPathComponent("sync.yaml")
        try Data("server: \(fhir.base.absoluteString)\ntime-zone: UTC\nresources: [Patient, CarePlan]\nconsent-terms: terms.yaml\n".utf8).write(to: config)
        guard let live = try await LiveStore.make(kind, in: folder) else { return }
        defer { live.remove() }
        let store = live.location
        let key = folder.appendingPathComponent("server.key").path
        let sync = { try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store]) }
        let pulled = try sync()
        #expect(pulled.status == 0, "\(pulled.stdout)\(pulled.stderr)")
        let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "Patient/cp1", "--expires-in", "10m"])
        let token = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let app = try AppServerProcess.start(store: store, key: key, extra: ["--consent-terms", terms])
        let client = AppClient(base: app.base, token: token)
        let device = UUID()
        var knowledge = KnowledgeVector([device: 1])
        // Before consent: pull and push are 403 consent-required.
        do {
            _ = try await client.pull(knowledge: knowledge)
            Issue.record("a pull without consent was answered")
        } catch let AppClientError.refused(status, code, _) {
            #expect(status == 403)
            #expect(code == "consent-required")
        }
        #expect(try await Self.post(ConsentFixture.body(decision: "agree"), to: app.base, token: token) == 201)
        #expect(try await Self.post(ConsentFixture.body(decision: "agree"), to: app.base, token: token) == 200, "the same submission again")
        let task = try #require(try await client.pull(knowledge: KnowledgeVector()).flatMap(\.entities).compactMap { item -> CareTask? in
            guard case .task(let task) = item.entity else { return nil }
            return task
        }.last)
        for record in try await client.pull(knowledge: knowledge) { knowledge.merge(with: record.knowledgeVector) }
        knowledge.increment(clockFor: device)
        let now = Date()
        let outcome = Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 1, values: [OutcomeValue(.boolean(true), createdDate: now)],
                              metadata: EntityMetadata(effectiveDate: now, createdDate: now, updatedDate: now, timezone: .gmt))
        let pushed = try await client.push(revisions: [CareKitRevisionRecord(entities: [CareKitEntity(.outcome(outcome))], knowledgeVector: knowledge)], knowledge: knowledge)
        #expect(pushed.stored == 1)
        #expect(try await Self.post(ConsentFixture.body(decision: "withdraw", date: "2026-03-04T08:00:00Z", signature: nil, document: nil), to: app.base, token: token) == 201)
        do {
            _ = try await client.pull(knowledge: knowledge)
            Issue.record("a pull after the withdrawal was answered")
        } catch let AppClientError.refused(status, _, _) {
            #expect(status == 403)
        }
        app.stop()

        // The consent push, killed once the server stored it; then the sync job's reruns.
        let base: String = fhir.base.absoluteString
        await #expect(processExitsWith: .signal(SIGKILL), "killed once the server has the Consent") { [store = store as String, base = base as String] in
            try await LiveStore.offThePool {
                let receiver = KilledAfterReceiving(inner: FHIRServerReceiver(client: FHIRClient(base: URL(string: base)!)))
                _ = try PayloadOutbox(store: try LiveStore.open(store)).push(to: receiver, selecting: { PayloadOutbox.kind(of: $0) == .consent })
            }
        }
        for _ in 0..<2 {
            let run = try sync()
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        }
        let server = FHIRClient(base: fhir.base)
        let consents = try allResources("Consent", on: server).filter { $0.resourceType == "Consent" }
        #expect(consents.count == 1, "one Consent for the agreement and the withdrawal")
        let consent = try #require(consents.first)
        #expect(consent.childValue("status") == "inactive")
        #expect(consent.child(named: "sourceAttachment")?.childValue("hash") == ConsentSubmission.sha1(ConsentFixture.pdf))
        #expect(consent.child(named: "patient")?.childValue("reference") == "Patient/cp1")
        let provenances = try allResources("Provenance", on: server).filter { $0.resourceType == "Provenance" }
        let signed = provenances.filter { $0.child(named: "signature")?.child(named: "type")?.childValue("code") == "1.2.840.10065.1.12.1.7" }
        #expect(signed.count == 1, "the agreement's signature")
        #expect(signed.first?.child(named: "signature")?.childValue("data") == ConsentFixture.png.base64EncodedString())
        let files = [try folder.writeFile("consent.json", String(decoding: FHIRJSON.write(consent), as: UTF8.self))]
            + (try provenances.enumerated().map { try folder.writeFile("provenance-\($0.offset).json", String(decoding: FHIRJSON.write($0.element), as: UTF8.self)) })
        let validated = try CLIRunner.run(["validate"] + files)
        #expect(validated.status == 0, "\(validated.stdout)\(validated.stderr)")
        // The outcome waits, listed with the reason.
        #expect(try allResources("Observation", on: server).filter { $0.resourceType == "Observation" }.isEmpty, "nothing of the patient written back")
        let outbox = try CLIRunner.run(["outbox", "--store", store])
        #expect(outbox.stdout.contains("held: the patient has not agreed"), "\(outbox.stdout)")

        // Agreeing again lets the held outcome go, once.
        let again = try AppServerProcess.start(store: store, key: key, extra: ["--consent-terms", terms])
        #expect(try await Self.post(ConsentFixture.body(decision: "agree", date: "2026-03-06T08:00:00Z"), to: again.base, token: token) == 201)
        again.stop()
        for _ in 0..<2 {
            let run = try sync()
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        }
        #expect(try allResources("Observation", on: server).filter { $0.resourceType == "Observation" }.count == 1, "the held outcome, written back once")
        let after = try allResources("Consent", on: server).filter { $0.resourceType == "Consent" }
        #expect(after.count == 1)
        #expect(after.first?.childValue("status") == "active")
        let listed = try CLIRunner.run(["patients", "consent", "--patient", "Patient/cp1", "--store", store])
        #expect(listed.status == 0, "\(listed.stderr)")
        let lines = listed.stdout.split(separator: "\n")
        #expect(lines.count == 3, "agree, withdraw, agree: \(listed.stdout)")
        #expect(lines.last?.contains("app-sharing version 1  agree") == true && lines.last?.contains("written back") == true, "\(listed.stdout)")

        // A withdrawal on the provider's side takes effect at the next run: the device is refused again.
        var withdrawn = try #require(after.first)
        withdrawn.children = withdrawn.children.map { $0.name == "status" ? Element(name: "status", value: "inactive") : $0 }
        _ = try server.update(withdrawn)
        let imported = try sync()
        #expect(imported.stdout.contains("1 recorded as decisions"), "\(imported.stdout)")
        let third = try AppServerProcess.start(store: store, key: key, extra: ["--consent-terms", terms])
        defer { third.stop() }
        do {
            _ = try await AppClient(base: third.base, token: token).pull(knowledge: knowledge)
            Issue.record("a pull after the provider's withdrawal was answered")
        } catch let AppClientError.refused(status, code, _) {
            #expect(status == 403)
            #expect(code == "consent-required")
        }
        let relisted = try CLIRunner.run(["patients", "consent", "--patient", "Patient/cp1", "--store", store])
        #expect(relisted.stdout.split(separator: "\n").last?.contains("withdraw") == true, "\(relisted.stdout)")
        #expect(relisted.stdout.split(separator: "\n").last?.contains("source provider") == true, "\(relisted.stdout)")
    }

    /// Posts a consent body; the answer's status.
    static func post(_ body: Data, to base: URL, token: String) async throws -> Int {
        var request = URLRequest(url: base.appendingPathComponent("carekit/v1/consents"))
        request.httpMethod = "POST"
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = body
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}
