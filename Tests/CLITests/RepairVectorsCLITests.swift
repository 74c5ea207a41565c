import CareModel
import Foundation
import Store
import TestSupport
import XCTest

/// `caregate store repair-vectors` as an operator runs it.
final class RepairVectorsCLITests: XCTestCase {
    func testRepairRetiresBloatedVectorsAndOnePatientOnRequest() throws {
        let folder = try makeScratchFolder("repair-vectors-cli")
        let path = folder.appendingPathComponent("care.sqlite").path
        let generated = try CLIRunner.run(["store", "generate", "--store", path, "--patients", "2", "--tasks", "1", "--days", "1"])
        XCTAssertEqual(generated.status, 0, generated.stderr)
        do {
            let store = try SQLiteStore(path: path)
            var batch = StoreBatch()
            batch.mergeKnowledge(patientID: "patient-1", clocks: Dictionary(uniqueKeysWithValues: (0..<100).map { _ in (UUID(), 1) }))
            batch.mergeKnowledge(patientID: "patient-2", clocks: [UUID(): 4, UUID(): 2])
            try store.apply(batch)
        }
        var result = try CLIRunner.run(["store", "repair-vectors", "--store", path])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "patient-1: 100 device processes retired, 0 revision stamps cleared\n")
        result = try CLIRunner.run(["store", "repair-vectors", "--store", path])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix("no patient's vector serves more than 64"), result.stdout)
        result = try CLIRunner.run(["store", "repair-vectors", "--store", path, "--patient", "patient-2"])
        XCTAssertEqual(result.stdout, "patient-2: 2 device processes retired, 0 revision stamps cleared\n")
        let store = try SQLiteStore(path: path)
        for patient in ["patient-1", "patient-2"] {
            XCTAssertEqual(try store.revisions(patientID: patient, afterClock: 0, maxEntities: 0) { _ in true }.deviceClocks, [:])
        }
        result = try CLIRunner.run(["store", "repair-vectors", "--store", folder.appendingPathComponent("missing.sqlite").path])
        XCTAssertEqual(result.status, 1)
        result = try CLIRunner.run(["store", "repair-vectors", "--store", path, "--patient", ""])
        XCTAssertEqual(result.status, 2)
    }
}
