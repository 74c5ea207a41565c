import CareModel
import FHIR
import Foundation
import Mapping
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// One of the provider's own Observations, pulled by `caregate sync` from a real FHIR server (sekmet-fhir),
/// edited on a device, and pushed by the next sync: the server keeps the provider's Observation as it was
/// (a patient's edit never overwrites a clinician's record) and gets the patient's once, `final`,
/// `derivedFrom` it; the sync after that sends and changes nothing.
final class ProviderObservationLiveTests: XCTestCase {
    private let zone = TimeZone(identifier: "America/Chicago")!

    /// The ids of every Observation on the server.
    private func observationIDs(on client: FHIRClient) throws -> [String] {
        var ids: [String] = []
        try client.search("Observation", [("_count", "200")]) { page in
            ids += page.children(named: "entry").compactMap { $0.child(named: "resource")?.childValue("id") }
            return true
        }
        return ids.sorted()
    }

    func testAnEditedProviderObservationStaysAndThePatientsComesOnceDerivedFromIt() throws {
        try forEachStore(sqliteFile: true) { tested in
            let fhir = try FHIRServerProcess.start()
            defer { fhir.stop() }
            try loadKeepingIDs([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: fhir.base)
            let folder = try makeScratchFolder("provider-observation-live")
            let config = try folder.writeFile("sync.yaml", "server: \(fhir.base.absoluteString)\ntime-zone: America/Chicago\n")
            let storePath = try XCTUnwrap(tested.location)
            func sync() throws -> String {
                let run = try CLIRunner.run(["sync", "--once", "--config", config, "--store", storePath])
                XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
                return run.stdout
            }
            _ = try sync()
            let client = FHIRClient(base: fhir.base)
            let before = try observationIDs(on: client)
            XCTAssertTrue(before.contains("obs-bp-1"), "\(before)")
            let original = try client.read("Observation", "obs-bp-1")

            // The device's edit: a new version of the outcome made from obs-bp-1, with no provenance.
            let store = tested.store
            let outcome = try XCTUnwrap(try store.outcomes(.current).first { $0.metadata.provenance?.fhirID == "obs-bp-1" })
            var metadata = EntityMetadata(effectiveDate: outcome.metadata.effectiveDate, timezone: zone)
            metadata.source = "HeartApp"
            var batch = StoreBatch()
            batch.upsert(Outcome(taskUUID: outcome.taskUUID, taskID: outcome.taskID, taskOccurrenceIndex: outcome.taskOccurrenceIndex, values: [
                OutcomeValue(.integer(131), units: "mm[Hg]", kind: "http://loinc.org|8480-6", index: 0),
                OutcomeValue(.integer(85), units: "mm[Hg]", kind: "http://loinc.org|8462-4", index: 1),
            ], metadata: metadata))
            let edited = try XCTUnwrap(try store.apply(batch).versionUUIDs.first)

            let pushed = try sync()
            XCTAssertTrue(pushed.contains("pushed: 1 outcome(s): 1 acknowledged"), "\(tested.kind): \(pushed)")
            let derivedID = OutcomeExporter.observationID(of: outcome.id)
            XCTAssertEqual(try observationIDs(on: client), (before + [derivedID]).sorted(), "the provider's Observation and the patient's")
            let kept = try client.read("Observation", "obs-bp-1")
            XCTAssertEqual(kept.child(named: "meta")?.childValue("versionId"), original.child(named: "meta")?.childValue("versionId"), "the provider's is not written")
            XCTAssertEqual(kept.children(named: "component").map { $0.child(named: "valueQuantity")?.childValue("value") },
                           original.children(named: "component").map { $0.child(named: "valueQuantity")?.childValue("value") })
            let derived = try client.read("Observation", derivedID)
            XCTAssertEqual(derived.childValue("status"), "final")
            XCTAssertEqual(derived.children(named: "derivedFrom").map { $0.childValue("reference") }, ["Observation/obs-bp-1"])
            XCTAssertEqual(derived.children(named: "component").map { $0.child(named: "valueQuantity")?.childValue("value") }, ["131", "85"])

            // The patient's Observation pulled back is CareGate's own write: it changes nothing, and nothing goes out.
            let again = try sync()
            XCTAssertTrue(again.contains("pushed: 0 outcome(s)"), again)
            XCTAssertEqual(try store.outcomes(.current).first { $0.id == outcome.id }?.metadata.uuid, edited)
            XCTAssertEqual(try observationIDs(on: client), (before + [derivedID]).sorted())
        }
    }
}
