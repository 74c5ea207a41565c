import CareModel
import FHIR
import Foundation
import Pipeline
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// `caregate sync` keeps each patient's care team whole across incremental runs (Docs/care-team.md): a
/// Patient pulled again without its Encounters keeps the practitioners who saw them, and a new Encounter
/// adds its practitioner though neither the Patient nor the Practitioner changed; a practitioner's roles
/// come along though nothing references them.
final class CareTeamSyncTests: XCTestCase {
    /// The care team members of Patient/p1 in `store`.
    private func team(_ store: any Store) throws -> Set<String> {
        Set(try store.contacts(.current)
            .filter { $0.metadata.linkage.patientID == "Patient/p1" }.compactMap { $0.metadata.userInfo?["careTeam.member"] })
    }

    private func contact(_ member: String, in store: any Store) throws -> Contact? {
        try store.contacts(.current).first { $0.metadata.userInfo?["careTeam.member"] == member }
    }

    private func put(_ resources: [String], in folder: URL, on server: FHIRServerProcess) throws {
        let file = folder.appendingPathComponent("put-\(UUID().uuidString).json")
        let entries = resources.map { #"{"resource": \#($0)}"# }.joined(separator: ",\n")
        try Data(#"{"resourceType": "Bundle", "type": "collection", "entry": [\#(entries)]}"#.utf8).write(to: file)
        try loadKeepingIDs([file.path], into: server.base)
    }

    private func encounter(_ id: String, by practitioner: String, on day: String, of patient: String = "p1") -> String {
        #"{"resourceType": "Encounter", "id": "\#(id)", "status": "finished", "class": {"code": "AMB"}, "subject": {"reference": "Patient/\#(patient)"}, "participant": [{"individual": {"reference": "Practitioner/\#(practitioner)"}}], "period": {"start": "\#(day)T09:00:00Z", "end": "\#(day)T09:30:00Z"}}"#
    }

    func testIncrementalRunsKeepEachPatientsCareTeamWhole() throws {
        try forEachStore(sqliteFile: true) { tested in
            let server = try FHIRServerProcess.start()
            defer { server.stop() }
            let folder = try makeScratchFolder("care-team-sync")
            try put([
                #"{"resourceType": "Patient", "id": "p1", "name": [{"family": "Pae"}]}"#,
                #"{"resourceType": "Practitioner", "id": "a", "name": [{"family": "Alpha"}], "telecom": [{"system": "email", "value": "alpha@example.org"}]}"#,
                #"{"resourceType": "Practitioner", "id": "b", "name": [{"family": "Beta"}]}"#,
                // Alpha's role, which nothing references: the rules find it by its `practitioner`.
                #"{"resourceType": "PractitionerRole", "id": "ra", "practitioner": {"reference": "Practitioner/a"}, "code": [{"text": "Cardiologist"}]}"#,
                encounter("e1", by: "a", on: "2024-01-10"),
            ], in: folder, on: server)
            // Put later, so that the cursors (`_lastUpdated ge`, which pulls the latest of each type again)
            // stand on another patient's Encounter, another Practitioner and another's role.
            try put([
                #"{"resourceType": "Patient", "id": "p2", "name": [{"family": "Other"}]}"#,
                #"{"resourceType": "Practitioner", "id": "c", "name": [{"family": "Gamma"}]}"#,
                #"{"resourceType": "PractitionerRole", "id": "rc", "practitioner": {"reference": "Practitioner/c"}, "code": [{"text": "Nurse"}]}"#,
                encounter("e9", by: "c", on: "2024-02-01", of: "p2"),
            ], in: folder, on: server)
            let config = folder.appendingPathComponent("sync.yaml")
            try Data("server: \(server.base.absoluteString)\ntime-zone: UTC\n".utf8).write(to: config)
            let store = try XCTUnwrap(tested.location)
            func sync() throws {
                let run = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
                XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
            }
            try sync()
            XCTAssertEqual(try team(tested.reopen()), ["Practitioner/a"])

            // The Patient changes alone: the run pulls it, and with it the patient's Encounter and Alpha.
            try put([#"{"resourceType": "Patient", "id": "p1", "name": [{"family": "Pae", "given": ["Pat"]}]}"#], in: folder, on: server)
            try sync()
            XCTAssertEqual(try team(tested.reopen()), ["Practitioner/a"], "\(tested.kind): Alpha is still on the team")
            XCTAssertEqual(try contact("Practitioner/a", in: tested.reopen())?.role, "Cardiologist", "with the role no resource references")

            // A new Encounter with Beta, who was pulled at the first run and has not changed since.
            try put([encounter("e2", by: "b", on: "2024-06-01")], in: folder, on: server)
            try sync()
            XCTAssertEqual(try team(tested.reopen()), ["Practitioner/a", "Practitioner/b"])
            XCTAssertEqual(try contact("Practitioner/a", in: tested.reopen())?.emailAddresses?.map(\.value), ["alpha@example.org"])
        }
    }

    /// Another run's cursors committed while this one pulls (two syncs at once): the Patients were
    /// pulled in full, before any cursor, and the care-team types after, from the cursors the other run
    /// just moved. The run completes the patients' care-team input as an incremental run does, so a
    /// Patient imported without its Encounters keeps the practitioners who saw them.
    func testCursorsMovedByAnotherRunDuringThePullStillCompleteTheCareTeams() throws {
        try forEachStore { tested in
            let server = try FHIRServerProcess.start()
            defer { server.stop() }
            let folder = try makeScratchFolder("care-team-race")
            try put([
                #"{"resourceType": "Patient", "id": "p1", "name": [{"family": "Pae"}]}"#,
                #"{"resourceType": "Practitioner", "id": "a", "name": [{"family": "Alpha"}]}"#,
                encounter("e1", by: "a", on: "2024-01-10"),
            ], in: folder, on: server)
            let configuration = try SyncConfiguration.parse(
                "server: \(server.base.absoluteString)\ntime-zone: UTC\n", file: folder.appendingPathComponent("sync.yaml").path)
            let job = try Gateway(store: tested.store).syncJob(configuration: configuration, client: FHIRClient(base: server.base))
            let checkpointServer = FHIRClient.withoutCredentials(configuration.server)
            var moved = false
            job.progress = { line in
                guard line.hasPrefix("pulled Patient"), !moved else { return }
                moved = true
                // The other run's cursors, past everything on the server, land now.
                var cursors = StoreBatch()
                for type in configuration.resources where type != "Patient" {
                    cursors.setCheckpoint(SyncCheckpoint(server: checkpointServer, resourceType: type, cursor: "2100-01-01T00:00:00Z"))
                }
                do { try tested.store.apply(cursors) } catch { XCTFail("the other run's cursors: \(error)") }
            }
            let report = try job.run()
            XCTAssertTrue(moved, "the Patients were pulled")
            XCTAssertEqual(report.pulled["Encounter"]?.resources ?? 0, 0, "\(tested.kind): the Encounters were searched from the new cursor")
            XCTAssertEqual(try team(tested.store), ["Practitioner/a"], "\(tested.kind): Alpha is on the team though the Encounter came by the care-team completion")
        }
    }
}
