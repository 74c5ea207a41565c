import Foundation
import Pipeline
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// Required consent with a folder as the server (`push-to:`): a patient's outcome is held (listed with
/// the reason, the run not failed) until the patient agrees, then written once (issue 45).
final class ConsentHoldFolderTests: XCTestCase {
    func testAnOutcomeWaitsForConsentThenIsWrittenOnce() throws {
        try forEachStore(sqliteFile: true) { tested in
            let folder = try makeScratchFolder("consent-hold")
            let provider = folder.appendingPathComponent("provider")
            let out = folder.appendingPathComponent("out")
            for made in [provider, out] { try FileManager.default.createDirectory(at: made, withIntermediateDirectories: true) }
            try provider.writeFile("provider.json", ConsentAcceptanceTests.provider)
            let terms = try ConsentTermsFile.load(path: ConsentFixture.writeTerms(in: folder, required: true))
            let config = try folder.writeFile("sync.yaml", "server: provider\npush-to: out\ntime-zone: UTC\nconsent-terms: terms.yaml\n")
            let store = try XCTUnwrap(tested.location)
            let sync = { try CLIRunner.run(["sync", "--once", "--config", config, "--store", store]) }
            XCTAssertEqual(try sync().status, 0)
            let task = try XCTUnwrap(try tested.reopen().tasks(.current).first)
            let added = try CLIRunner.run(["outcomes", "add", "--store", store, "--task", task.id, "--occurrence", "0", "--value", "1"])
            XCTAssertEqual(added.status, 0, added.stderr)
            let held = try sync()
            XCTAssertEqual(held.status, 0, "held outcomes are no failure: \(held.stdout)\(held.stderr)")
            XCTAssertTrue(held.stdout.contains("held: 1 outcome(s)"), held.stdout)
            XCTAssertEqual(try Self.observations(in: out), 0)
            let outbox = try CLIRunner.run(["outbox", "--store", store])
            XCTAssertTrue(outbox.stdout.contains("held: the patient has not agreed"), outbox.stdout)

            let agreement = try ConsentSubmission.read(ConsentFixture.body(decision: "agree"), patientID: "Patient/cp1")
            XCTAssertTrue(try ConsentRecorder(store: tested.reopen(), terms: terms).record(agreement, patientID: "Patient/cp1").created)
            XCTAssertEqual(try sync().status, 0)
            XCTAssertEqual(try sync().status, 0)
            XCTAssertEqual(try Self.observations(in: out), 1, "\(tested.kind): the held outcome, written once")
        }
    }

    /// Observations in the files of `folder`.
    static func observations(in folder: URL) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }.reduce(0) { count, name in
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            return count + text.components(separatedBy: #""resourceType":"Observation""#).count - 1
        }
    }
}
