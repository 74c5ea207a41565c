import FHIR
import Foundation
import TestSupport
import XCTest

/// The log lines of `caregate sync` and `caregate serve` (`--log-format`, `--log-level`): one JSON object
/// per line when asked, the run's id on every line of a run, and nothing of a patient at the default level.
final class LoggingCLITests: XCTestCase {
    private func jsonLines(_ text: String) throws -> [[String: String]] {
        try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
            return try XCTUnwrap(object, "not a JSON object of strings: \(line)")
        }
    }

    func testASyncRunLogsJSONLinesWithItsRunIDAndNoPatientData() throws {
        let bundles = Array(try Corpus.files(in: "synthea-r4", suffix: ".json").prefix(2))
        guard !bundles.isEmpty else { return }
        let folder = try makeScratchFolder("logging-sync")
        let server = folder.appendingPathComponent("ehr")
        try FileManager.default.createDirectory(at: server, withIntermediateDirectories: true)
        for bundle in bundles { try FileManager.default.copyItem(at: bundle, to: server.appendingPathComponent(bundle.lastPathComponent)) }
        let config = try folder.writeFile("sync.yaml", "server: \(server.path)\npush-to: pushed\ntime-zone: UTC\n")
        let result = try CLIRunner.run(["sync", "--once", "--config", config, "--store", folder.appendingPathComponent("s.sqlite").path, "--log-format", "json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = try jsonLines(result.stderr)
        XCTAssertFalse(lines.isEmpty)
        for line in lines {
            XCTAssertEqual(Set(["time", "level", "label", "message", "run"]).subtracting(line.keys), [], "\(line)")
        }
        XCTAssertEqual(Set(lines.compactMap { $0["run"] }).count, 1, "one run, one id")

        // What the patients are: their names and birth dates, none of which a log line may carry.
        var secrets: Set<String> = []
        for bundle in bundles {
            let resource = try FHIRDocument.read(try Data(contentsOf: bundle)).singleResource()
            for entry in resource.children(named: "entry") {
                guard let patient = entry.child(named: "resource"), patient.resourceType == "Patient" else { continue }
                for name in patient.children(named: "name") {
                    secrets.formUnion(name.children(named: "family").compactMap(\.value))
                    secrets.formUnion(name.children(named: "given").compactMap(\.value))
                }
                if let birth = patient.childValue("birthDate") { secrets.insert(birth) }
            }
        }
        XCTAssertFalse(secrets.isEmpty)
        for secret in secrets where secret.count >= 3 {
            XCTAssertFalse(result.stderr.contains(secret), "a log line names \(secret)")
        }
    }

    func testServeLogsJSONAndRefusesAnUnknownLevel() throws {
        let folder = try makeScratchFolder("logging-serve")
        let port = try FreePort.next()
        let serving = try CLIRunner.start([
            "serve", "--store", folder.appendingPathComponent("s.sqlite").path, "--key", folder.appendingPathComponent("k.pem").path,
            "--port", "\(port)", "--log-format", "json",
        ])
        let deadline = Date().addingTimeInterval(60)
        while serving.standardErrorSoFar.isEmpty, serving.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        serving.terminate()
        let ended = try serving.wait()
        let lines = try jsonLines(ended.stderr)
        XCTAssertTrue(lines.contains { $0["label"] == "caregate.serve" }, ended.stderr)

        let refused = try CLIRunner.run(["sync", "--config", "x.yaml", "--log-level", "loud"])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("unknown --log-level 'loud'"), refused.stderr)
    }
}
