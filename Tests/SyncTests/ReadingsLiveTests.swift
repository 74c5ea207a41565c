import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// Readings back, end to end: a week of HealthKitOnFHIR readings stored for a patient the provider's
/// server holds, then `caregate sync` against a real FHIR server (sekmet-fhir): the expected
/// Observations on the server, each once, each valid, with their Provenance; the same batch again and
/// another sync change nothing.
final class ReadingsLiveTests: XCTestCase {
    private let zone = TimeZone(identifier: "America/Chicago")!

    func testAWeekOfReadingsReachesTheServerOnceEachValid() throws {
        try forEachStore(sqliteFile: true) { tested in
            let fhir = try FHIRServerProcess.start()
            defer { fhir.stop() }
            try loadKeepingIDs([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: fhir.base)
            let folder = try makeScratchFolder("readings-live")
            let config = try folder.writeFile("sync.yaml", "server: \(fhir.base.absoluteString)\ntime-zone: America/Chicago\n")
            let storePath = try XCTUnwrap(tested.location)
            func sync() throws -> String {
                let run = try CLIRunner.run(["sync", "--once", "--config", config, "--store", storePath])
                XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
                return run.stdout
            }
            _ = try sync()
            let client = FHIRClient(base: fhir.base)
            let providers = Set(try allResources("Observation", on: client).compactMap { $0.childValue("id") })

            // The week before yesterday, as the patient's phone sends it.
            let store = tested.store
            let patient = try XCTUnwrap(try store.patients(.current).first { $0.metadata.provenance?.fhirID == "pat-1" })
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            let day0 = calendar.startOfDay(for: Date().addingTimeInterval(-8 * 86_400))
            let week = HealthKitReadings.week(from: day0, zone: zone)
            let importer = ReadingImport(store: store, kinds: ReadingKinds(table: try HealthKitTable.defaults()))
            let decoded = try ReadingDecoding.decode(HealthKitReadings.body(week, bundle: true))
            XCTAssertEqual(try importer.apply(decoded.samples, patientID: patient.id).stored, week.count)

            let pushed = try sync()
            XCTAssertTrue(pushed.contains("pushed: 29 outcome(s): 29 acknowledged"), pushed)
            let observations = try allResources("Observation", on: client).filter { !providers.contains($0.childValue("id") ?? "") }
            XCTAssertEqual(observations.count, 29, "\(tested.kind): each reading's occurrence once")
            let validator = StructureValidator(options: ValidationOptions(strict: true))
            for observation in observations {
                XCTAssertEqual(validator.validate(observation).errors.map(\.diagnostics), [], observation.childValue("id") ?? "")
                XCTAssertEqual(observation.child(named: "subject")?.childValue("reference"), "Patient/pat-1")
            }
            func coded(_ code: String) -> [Element] {
                observations.filter { $0.child(named: "code")?.children(named: "coding").contains { $0.childValue("code") == code } == true }
            }
            XCTAssertEqual(coded("29463-7").count, 7)
            XCTAssertEqual(coded("85354-9").count, 7, "blood pressure as one panel each")
            XCTAssertTrue(coded("85354-9").allSatisfy { $0.children(named: "component").count == 2 })
            XCTAssertEqual(coded("2708-6").count, 7)
            XCTAssertEqual(coded("55423-8").count, 7)
            XCTAssertEqual(coded("41653-7").count, 1, "a glucometer glucose on a new log of its own code, laboratory")
            XCTAssertEqual(coded("41653-7").first?.child(named: "valueQuantity")?.childValue("code"), "mg/dL")
            let provenances = try allResources("Provenance", on: client)
            XCTAssertEqual(provenances.count, 29, "one Provenance per Observation")
            XCTAssertTrue(provenances.allSatisfy { $0.children(named: "agent").contains { $0.child(named: "who")?.childValue("display") != nil } },
                          "each names the device")

            // The same batch again stores nothing; the next sync sends nothing.
            XCTAssertEqual(try importer.apply(decoded.samples, patientID: patient.id).known, week.count)
            let again = try sync()
            XCTAssertTrue(again.contains("pushed: 0 outcome(s)"), again)
            XCTAssertEqual(try allResources("Observation", on: client).count, providers.count + 29)
        }
    }
}
