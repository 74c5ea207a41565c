import AppClient
import FHIR
import Foundation
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// Readings through the real server, as an app sends them: `caregate serve` (its own process) takes
/// Fixtures/readings/week.json (what `Scripts/try-readings.sh` sends) for a patient a real FHIR server
/// (sekmet-fhir) holds, by the table of its `--mappings` folder; `caregate sync` then writes them to that
/// server, each once.
final class ServeReadingsLiveTests: XCTestCase {
    func testServeTakesAWeekByItsTableAndSyncSendsItOnce() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            let fhir = try FHIRServerProcess.start()
            defer { fhir.stop() }
            try loadKeepingIDs([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: fhir.base)
            let folder = try makeScratchFolder("serve-readings")
            let config = try folder.writeFile("sync.yaml", "server: \(fhir.base.absoluteString)\ntime-zone: America/Chicago\n")
            let store = try XCTUnwrap(tested.location)
            let key = folder.appendingPathComponent("server.key").path
            func sync() throws -> String {
                let run = try CLIRunner.run(["sync", "--once", "--config", config, "--store", store])
                XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
                return run.stdout
            }
            _ = try sync()
            let providers = Set(try allResources("Observation", on: FHIRClient(base: fhir.base)).compactMap { $0.childValue("id") })
            let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "Patient/pat-1", "--expires-in", "10m"])
            XCTAssertEqual(issued.status, 0, issued.stderr)
            let token = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let week = try Data(contentsOf: Corpus.projectRoot.appendingPathComponent("Fixtures/readings/week.json"))

            // A user's table whose plausible body weight ends at 50 kg: the week's seven weights (176 lb, ~80 kg)
            // are refused by index, and nothing of the batch is stored.
            let shipped = try String(contentsOf: Corpus.projectRoot.appendingPathComponent("Mappings/healthkit.yaml"), encoding: .utf8)
            let narrowed = shipped.replacingOccurrences(of: "range: {low: 0.2, high: 700}", with: "range: {low: 0.2, high: 50}")
            XCTAssertNotEqual(narrowed, shipped, "the shipped body-weight range is where the test expects it")
            let mappings = folder.appendingPathComponent("mappings")
            try FileManager.default.createDirectory(at: mappings, withIntermediateDirectories: true)
            try Data(narrowed.utf8).write(to: mappings.appendingPathComponent("healthkit.yaml"))
            do {
                let app = try AppServerProcess.start(store: store, key: key, extra: ["--mappings", mappings.path])
                defer { app.stop() }
                do {
                    _ = try await AppClient(base: app.base, token: token).sendReadings(week)
                    XCTFail("readings outside the user's range are refused")
                } catch AppClientError.refused(let status, let code, let message) {
                    XCTAssertEqual(status, 422)
                    XCTAssertEqual(code, "refused")
                    XCTAssertTrue(message.hasPrefix("reading 0:"), message)
                }
            }

            // The shipped table: stored once; the same file again is all known.
            let app = try AppServerProcess.start(store: store, key: key)
            let client = AppClient(base: app.base, token: token)
            let first = try await client.sendReadings(week)
            XCTAssertEqual(first.stored, 43, "\(tested.kind): nothing of the refused batch was stored before")
            let again = try await client.sendReadings(week)
            XCTAssertEqual(again.known, 43)
            XCTAssertEqual(again.stored, 0)
            app.stop()

            let pushed = try sync()
            XCTAssertTrue(pushed.contains("pushed: 29 outcome(s): 29 acknowledged"), pushed)
            let observations = try allResources("Observation", on: FHIRClient(base: fhir.base)).filter { !providers.contains($0.childValue("id") ?? "") }
            XCTAssertEqual(observations.count, 29)
            let validator = StructureValidator(options: ValidationOptions(strict: true))
            for observation in observations {
                XCTAssertEqual(validator.validate(observation).errors.map(\.diagnostics), [], observation.childValue("id") ?? "")
            }
            let glucose = try XCTUnwrap(observations.first { $0.child(named: "code")?.children(named: "coding").contains { $0.childValue("code") == "41653-7" } == true })
            XCTAssertEqual(glucose.child(named: "valueQuantity")?.childValue("value"), "99.085734", "5.5 mmol/L in mg/dL, no binary noise")
            XCTAssertTrue(try sync().contains("pushed: 0 outcome(s)"))
        }
    }
}
