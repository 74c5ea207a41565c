import AppClient
import CareModel
import FHIR
import Foundation
import Insights
import Pipeline
import Store
import StoreTestSupport
import Sync
import Testing
import TestSupport

/// Issue 46's sharing acceptance: a patient's app shares their care-team report with the practitioner
/// of their care plan through `caregate serve`; `caregate sync` writes it to a real FHIR server
/// (sekmet-fhir) as one valid Communication carrying the report, exactly once across a resubmission, a
/// SIGKILL right after the server stored the push (before the receipt was committed) and the reruns after.
@Suite struct ShareLiveTests {
    /// On a SQLite file and on a PostgreSQL database.
    @Test(arguments: TestStoreKind.allCases)
    func aShareFromTheAppReachesTheServerAsOneCommunicationAcrossAKill(kind: TestStoreKind) async throws {
        guard LiveTestSetup.sekmetIsInstalled() else { return }
        let fhir = try FHIRServerProcess.start()
        defer { fhir.stop() }
        try loadKeepingIDs([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: fhir.base)
        let folder = try LiveTestSetup.scratchFolder("share-live")
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = folder.appendingPathComponent("sync.yaml")
        try Data("server: \(fhir.base.absoluteString)\ntime-zone: America/Chicago\n".utf8).write(to: config)
        guard let live = try await LiveStore.make(kind, in: folder) else { return }
        defer { live.remove() }
        let store = live.location
        let key = folder.appendingPathComponent("server.key").path
        let pulled = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
        #expect(pulled.status == 0, "\(pulled.stdout)\(pulled.stderr)")
        let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "Patient/pat-1", "--expires-in", "10m"])
        #expect(issued.status == 0, "\(issued.stderr)")

        // The app: its care team from the contacts view, a week's report shared with the doctor, twice.
        let app = try AppServerProcess.start(store: store, key: key)
        let client = AppClient(base: app.base, token: issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        // The care plan's author: a contact of the plan (Practitioner.yaml) or of the patient's care team
        // (Patient.yaml's `members:`, which names the practitioner in userInfo).
        let doctor = try #require(try await client.contacts().first {
            $0.category == .careProvider && ($0.id == "Practitioner/prac-1" || $0.metadata.userInfo?["careTeam.member"] == "Practitioner/prac-1")
        })
        #expect(doctor.category == .careProvider)
        let share = AppClient.ShareContent.report(from: "2026-11-01", to: "2026-11-07")
        let first = try await client.share(contact: doctor.uuid, share, message: "My first week of the plan.")
        #expect(first.created)
        #expect(first.recipient == "Practitioner/prac-1")
        let again = try await client.share(contact: doctor.uuid, share, message: "My first week of the plan.")
        #expect(!again.created)
        #expect(again.id == first.id)
        // The example app's share button: the same share, found.
        let example = try Self.exampleApp([
            "--server", app.base.absoluteString, "--token", issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines),
            "--share", doctor.id, "--from", "2026-11-01", "--to", "2026-11-07", "--message", "My first week of the plan.",
        ])
        #expect(example.contains("shared with Practitioner/prac-1 (share \(first.id)): already queued"), "\(example)")
        _ = app.stop()

        // The push, killed right after the server stored it, before its receipt was committed.
        let base: String = fhir.base.absoluteString
        await #expect(processExitsWith: .signal(SIGKILL), "killed once the server has the share") { [store = store as String, base = base as String] in
            try await LiveStore.offThePool {
                let receiver = KilledAfterReceiving(inner: FHIRServerReceiver(client: FHIRClient(base: URL(string: base)!)))
                _ = try PayloadOutbox(store: try LiveStore.open(store)).push(to: receiver, selecting: { PayloadOutbox.kind(of: $0) == .share })
            }
        }
        #expect(try Self.communications(fhir).count == 1, "the killed push stored it")
        // The rerun sends it again (its receipt was lost) and the server finds it; the next sends nothing.
        let rerun = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        #expect(rerun.stdout.contains("share: 1 sent: 1 acknowledged"), "\(rerun.stdout)")
        let quiet = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
        #expect(quiet.status == 0, "\(quiet.stdout)\(quiet.stderr)")
        #expect(!quiet.stdout.contains("share:"), "\(quiet.stdout)")
        let communications = try Self.communications(fhir)
        #expect(communications.count == 1, "one Communication for the share")
        let communication = try #require(communications.first)
        #expect(communication.childValue("status") == "completed")
        #expect(communication.child(named: "recipient")?.childValue("reference") == "Practitioner/prac-1")
        #expect(communication.child(named: "subject")?.childValue("reference") == "Patient/pat-1")
        #expect(communication.child(named: "sender")?.childValue("reference") == "Patient/pat-1")
        #expect(communication.child(named: "category")?.child(named: "coding")?.childValue("code") == "notification")
        let payload = communication.children(named: "payload")
        #expect(payload.first?.childValue("contentString") == "My first week of the plan.")
        let attachment = try #require(payload.last?.child(named: "contentAttachment"))
        let data = try #require(Data(base64Encoded: attachment.childValue("data") ?? ""))
        #expect(attachment.childValue("size") == String(data.count))
        if ChromiumPrinter.find() != nil {
            #expect(attachment.childValue("contentType") == "application/pdf")
            #expect(data.starts(with: Array("%PDF-".utf8)), "the report printed")
        } else {
            #expect(attachment.childValue("contentType") == "text/html; charset=utf-8")
        }
        // Its Provenance names it, and the outbox knows it was written back.
        let id = try #require(communication.childValue("id"))
        #expect(try Self.count(fhir, "Provenance", [("target", "Communication/\(id)")]) == 1)
        let shareUUID = try #require(UUID(uuidString: first.id))
        let entry = try #require(try await LiveStore.reading(store) { try $0.outboxEntry(destination: OutboxEntry.provider, entityUUID: shareUUID) })
        #expect(entry.state == .acknowledged)
    }

    /// What `caregate-example-app arguments` prints.
    static func exampleApp(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = CLIRunner.executable.deletingLastPathComponent().appendingPathComponent("caregate-example-app")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }

    /// The Communications CareGate wrote (by their `urn:caregate:share` identifier).
    static func communications(_ server: FHIRServerProcess) throws -> [Element] {
        var found: [Element] = []
        try FHIRClient(base: server.base).search("Communication", [("identifier", "\(ShareCommunication.identifierSystem)|")]) { page in
            found += page.children(named: "entry").compactMap { $0.child(named: "resource") }.filter { $0.resourceType == "Communication" }
            return true
        }
        return found
    }

    static func count(_ server: FHIRServerProcess, _ type: String, _ parameters: [(String, String)]) throws -> Int {
        var count = 0
        try FHIRClient(base: server.base).search(type, parameters) { page in
            count += page.children(named: "entry").compactMap { $0.child(named: "resource") }.filter { $0.resourceType == type }.count
            return true
        }
        return count
    }
}
