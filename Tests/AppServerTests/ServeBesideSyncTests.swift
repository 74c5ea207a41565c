import AppClient
import CareModel
import Foundation
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// `caregate serve` and `caregate sync` on one store at the same time (issue 29, item 5): while the sync
/// imports Synthea records, clients pulling and reading day views get no failure (no 5xx, no connection
/// error), every answer is in the audit trail, and once the sync is done the device's next pull holds
/// what it imported.
final class ServeBesideSyncTests: XCTestCase {
    func testNoRequestFailsWhileTheSyncWritesAndTheNextPullHasWhatItImported() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            let records = try Corpus.files(in: "synthea-r4", suffix: ".json")
            let folder = try makeScratchFolder("serve-beside-sync")
            let store = try XCTUnwrap(tested.location)
            let key = folder.appendingPathComponent("server.key").path

            // The device's patient is in the store before the sync: their Patient resource alone.
            let record = try XCTUnwrap(records.first { $0.lastPathComponent.hasPrefix("Alfreda_Wyman") } ?? records.first)
            let bundle = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: record)) as? [String: Any])
            let entries = try XCTUnwrap(bundle["entry"] as? [[String: Any]])
            var patientOnly = bundle
            patientOnly["entry"] = entries.filter { ($0["resource"] as? [String: Any])?["resourceType"] as? String == "Patient" }
            let patientFile = folder.appendingPathComponent("patient.json")
            try JSONSerialization.data(withJSONObject: patientOnly).write(to: patientFile)
            let imported = try CLIRunner.run(["import", patientFile.path, "--store", store, "--time-zone", "UTC"])
            XCTAssertEqual(imported.status, 0, imported.stdout + imported.stderr)
            // Read as another process would (the test's own store object was opened before the import).
            let reader = try tested.reopen()
            let patientID = try XCTUnwrap(try reader.patients(.current).first?.id)
            XCTAssertEqual(try reader.carePlans(.current), [])

            // The provider: a folder of six whole records, the device's patient's among them.
            let provider = folder.appendingPathComponent("provider")
            try FileManager.default.createDirectory(at: provider, withIntermediateDirectories: true)
            for file in [record] + records.filter({ $0 != record }).prefix(5) {
                try FileManager.default.createSymbolicLink(at: provider.appendingPathComponent(file.lastPathComponent), withDestinationURL: file)
            }
            let config = try folder.writeFile(
                "sync.yaml", "server: \(provider.path)\npush-to: \(folder.appendingPathComponent("exports").path)\ntime-zone: UTC\n")

            let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", patientID, "--expires-in", "30m"])
            XCTAssertEqual(issued.status, 0, issued.stderr)
            let server = try AppServerProcess.start(store: store, key: key)
            defer { server.stop() }
            let client = AppClient(base: server.base, token: issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines))

            // A device that has pulled everything there was: its patient, nothing else.
            let device = UUID()
            var knowledge = KnowledgeVector([device: 1])
            for record in try await client.pull(knowledge: knowledge) { knowledge.merge(with: record.knowledgeVector) }
            let before = knowledge

            // Four clients, pulling (as the up-to-date device) and reading a day, for as long as the sync runs.
            let sync = try CLIRunner.start(["sync", "--once", "--config", config, "--store", store])
            let tally = try await withThrowingTaskGroup(of: Tally.self) { group in
                for lane in 0..<4 {
                    group.addTask {
                        var tally = Tally()
                        while sync.isRunning {
                            do {
                                if lane % 2 == 0 {
                                    _ = try await client.pull(knowledge: before)
                                } else {
                                    _ = try await client.events(date: "2020-03-0\(1 + lane)")
                                }
                                tally.answered += 1
                            } catch {
                                tally.failures.append("\(error)")
                            }
                        }
                        return tally
                    }
                }
                return try await group.reduce(into: Tally()) { $0.answered += $1.answered; $0.failures += $1.failures }
            }
            let synced = try sync.wait()
            XCTAssertEqual(synced.status, 0, synced.stdout + synced.stderr)
            XCTAssertEqual(tally.failures, [], "\(tested.kind): requests failed while the sync wrote")
            XCTAssertGreaterThan(tally.answered, 0, "no request was made while the sync ran")
            print("serve beside sync on \(tested.kind): \(tally.answered) requests answered while the sync ran, \(tally.failures.count) failed")

            // What the sync imported for this patient reaches the device at its next pull.
            let plans = try reader.carePlans(.current).filter { $0.patientID == patientID }
            XCTAssertFalse(plans.isEmpty, "the sync imported no care plan of the device's patient")
            let next = try await client.pull(knowledge: knowledge)
            let pulled = next.flatMap(\.entities).map(\.entity)
            XCTAssertEqual(
                Set(pulled.compactMap { if case .carePlan(let plan) = $0 { plan.uuid } else { nil } }), Set(plans.map(\.uuid)))
            XCTAssertTrue(pulled.contains { $0.kind == .task }, "the care plans' tasks")
            XCTAssertEqual(next.last?.entities, [])

            // Every answer was audited before it was given (group commit): the trail has each request.
            server.stop()
            let trail = try reader.auditEntries(patientID: patientID, limit: 1_000_000)
            XCTAssertGreaterThanOrEqual(trail.count, tally.answered + 2, "the pulls before and after, and every answered request")
            XCTAssertTrue(trail.allSatisfy { $0.status == 200 })
        }
    }
}

/// What the clients of one test saw.
private struct Tally: Sendable {
    var answered = 0
    var failures: [String] = []
}
