import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// A patient's care team (Mappings/Patient.yaml's `members:`, Docs/care-team.md): one careProvider contact
/// per practitioner per patient, from every place FHIR records the team, with why it is there; a
/// practitioner who leaves the team is tombstoned.
final class CareTeamImportTests: XCTestCase {
    /// The current care-team contacts of `patient`, by the practitioner they are.
    private func team(of patient: String, in store: any Store) throws -> [String: Contact] {
        var found: [String: Contact] = [:]
        for contact in try store.contacts(.current) where contact.metadata.linkage.patientID == patient && contact.id.contains("#careteam-") {
            let member = try XCTUnwrap(contact.metadata.userInfo?["careTeam.member"], contact.id)
            XCTAssertNil(found[member], "one contact per practitioner: \(member) twice for \(patient)")
            found[member] = contact
        }
        return found
    }

    private func reasons(_ contact: Contact?) -> [String] {
        contact?.metadata.userInfo?["careTeam.reasons"]?.split(separator: "\n").map(String.init) ?? []
    }

    /// Whether the store holds a tombstone (a version with a deleted date) of contact `id`.
    private func isTombstoned(_ id: String, in store: any Store) throws -> Bool {
        var found = false
        try store.forEachVersion(.contact) { entity in
            if entity.id == id, entity.metadata.deletedDate != nil { found = true }
        }
        return found
    }

    private func date(_ text: String) -> Date { FHIRDateText.date(text, in: TimeZone(identifier: "UTC")!)! }

    /// Encounters of one patient by two practitioners (one with a phone, one with an email through a
    /// PractitionerRole), a general practitioner who also prescribes, and a CareTeam that ends.
    private func writeRecord(_ folder: URL, encounters: [(id: String, practitioner: String, day: String)], careTeamStatus: String = "active") throws -> String {
        var entries = [
            #"{"resource": {"resourceType": "Patient", "id": "p1", "name": [{"family": "Pae"}], "generalPractitioner": [{"reference": "Practitioner/gp"}]}}"#,
            #"{"resource": {"resourceType": "Patient", "id": "p2", "name": [{"family": "Other"}]}}"#,
            #"{"resource": {"resourceType": "Practitioner", "id": "gp", "name": [{"family": "General", "given": ["Gail"]}]}}"#,
            #"{"resource": {"resourceType": "Practitioner", "id": "a", "name": [{"family": "Alpha"}], "telecom": [{"system": "phone", "value": "+1 555 0101", "use": "work"}]}}"#,
            #"{"resource": {"resourceType": "Practitioner", "id": "b", "name": [{"family": "Beta"}]}}"#,
            #"{"resource": {"resourceType": "Practitioner", "id": "nurse", "name": [{"family": "Nurse"}]}}"#,
            #"{"resource": {"resourceType": "PractitionerRole", "id": "b-role", "practitioner": {"reference": "Practitioner/b"}, "code": [{"text": "Cardiologist"}], "organization": {"display": "Heart Clinic"}, "telecom": [{"system": "email", "value": "beta@clinic.example.org"}]}}"#,
            #"{"resource": {"resourceType": "MedicationRequest", "id": "mr", "status": "active", "intent": "order", "subject": {"reference": "Patient/p1"}, "medicationCodeableConcept": {"text": "Aspirin"}, "requester": {"reference": "Practitioner/gp"}}}"#,
            #"{"resource": {"resourceType": "CareTeam", "id": "team", "status": "\#(careTeamStatus)", "subject": {"reference": "Patient/p1"}, "participant": [{"member": {"reference": "Practitioner/nurse"}}, {"member": {"reference": "Patient/p1"}}]}}"#,
        ]
        for encounter in encounters {
            entries.append(#"{"resource": {"resourceType": "Encounter", "id": "\#(encounter.id)", "status": "finished", "class": {"code": "AMB"}, "subject": {"reference": "Patient/p1"}, "participant": [{"individual": {"reference": "PractitionerRole/b-role"}}], "period": {"start": "\#(encounter.day)T09:00:00Z", "end": "\#(encounter.day)T09:30:00Z"}}}"#
                .replacingOccurrences(of: "PractitionerRole/b-role", with: encounter.practitioner))
        }
        let file = folder.appendingPathComponent("record-\(UUID().uuidString).json")
        try Data(#"{"resourceType": "Bundle", "type": "collection", "entry": [\#(entries.joined(separator: ",\n"))]}"#.utf8).write(to: file)
        return file.path
    }

    func testEveryPlaceNamesOneContactPerPractitionerWithItsReasons() throws {
        let folder = try makeScratchFolder("care-team")
        let store = try makeStore()
        let record = try writeRecord(folder, encounters: [("e1", "Practitioner/a", "2019-01-10"), ("e2", "PractitionerRole/b-role", "2020-03-01"), ("e3", "Practitioner/a", "2019-06-01")])
        let report = try importFiles([record], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let team = try team(of: "Patient/p1", in: store)
        XCTAssertEqual(Set(team.keys), ["Practitioner/gp", "Practitioner/a", "Practitioner/b", "Practitioner/nurse"])
        XCTAssertEqual(reasons(team["Practitioner/gp"]), ["general practitioner", "prescriber"])
        XCTAssertEqual(reasons(team["Practitioner/nurse"]), ["care team"])
        XCTAssertEqual(reasons(team["Practitioner/a"]), ["encounter"])
        XCTAssertEqual(team["Practitioner/a"]?.metadata.userInfo?["careTeam.lastSeen"], "2019-06-01T09:30:00Z", "the latest visit")
        XCTAssertEqual(team["Practitioner/a"]?.phoneNumbers?.map(\.value), ["+1 555 0101"])
        // Named through a PractitionerRole: its role, organization and email.
        let beta = try XCTUnwrap(team["Practitioner/b"])
        XCTAssertEqual(beta.role, "Cardiologist")
        XCTAssertEqual(beta.organization, "Heart Clinic")
        XCTAssertEqual(beta.emailAddresses?.map(\.value), ["beta@clinic.example.org"])
        for contact in team.values {
            XCTAssertEqual(contact.category, .careProvider)
            XCTAssertNil(contact.carePlanID, "a patient's care team is on no care plan")
        }
        XCTAssertEqual(try self.team(of: "Patient/p2", in: store).count, 0, "nothing of p1's team is p2's")
        // Encounters are read, not kept.
        XCTAssertEqual(try store.tasks(.current).filter { $0.metadata.provenance?.fhirType == "Encounter" }.count, 0)

        // Again: nothing changes.
        let again = try importFiles([record], into: store)
        XCTAssertEqual(again.entitiesAdded + again.entitiesUpdated, 0)
    }

    func testAPractitionerLeavesTheTeamWhenTheWindowPassesOrTheCareTeamEnds() throws {
        let folder = try makeScratchFolder("care-team-window")
        let store = try makeStore()
        _ = try importFiles([try writeRecord(folder, encounters: [("e1", "Practitioner/a", "2019-01-10"), ("e2", "Practitioner/b", "2020-03-01")])], into: store)
        XCTAssertEqual(Set(try team(of: "Patient/p1", in: store).keys), ["Practitioner/gp", "Practitioner/a", "Practitioner/b", "Practitioner/nurse"])
        let alpha = try XCTUnwrap(try team(of: "Patient/p1", in: store)["Practitioner/a"])

        // A visit two years and more after Alpha's last: Alpha is out of the default window (two years back
        // from the patient's latest encounter); the CareTeam is inactive, so its nurse leaves too.
        let later = try writeRecord(
            folder, encounters: [("e1", "Practitioner/a", "2019-01-10"), ("e2", "Practitioner/b", "2020-03-01"), ("e3", "Practitioner/b", "2022-05-01")],
            careTeamStatus: "inactive")
        let report = try importFiles([later], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let team = try team(of: "Patient/p1", in: store)
        XCTAssertEqual(Set(team.keys), ["Practitioner/gp", "Practitioner/b"])
        XCTAssertEqual(team["Practitioner/b"]?.metadata.userInfo?["careTeam.lastSeen"], "2022-05-01T09:30:00Z")
        XCTAssertTrue(try isTombstoned(alpha.id, in: store), "Alpha's contact is tombstoned")
    }

    func testAWindowCountedFromTheRunsDate() throws {
        let folder = try makeScratchFolder("care-team-run-window")
        let mappings = folder.appendingPathComponent("mappings")
        try FileManager.default.createDirectory(at: mappings, withIntermediateDirectories: true)
        try Data("""
            resource: Patient
            extends: default
            entities:
              - entity: contact
                name: careteam
                members:
                  - reason: recent visit
                    reverse: Encounter
                    on: subject
                    from: participant.individual
                    seen: period.end | period.start
                    window: 1 year
                    window-end: run
                fields:
                  category: { value: careProvider }
            """.utf8).write(to: mappings.appendingPathComponent("Patient.yaml"))
        let record = try writeRecord(folder, encounters: [("e1", "Practitioner/a", "2019-01-10"), ("e2", "Practitioner/b", "2020-03-01")])
        let store = try makeStore()
        _ = try importFiles([record], into: store, mappings: mappings.path, runDate: date("2019-06-01"))
        XCTAssertEqual(Set(try team(of: "Patient/p1", in: store).keys), ["Practitioner/a", "Practitioner/b"])
        _ = try importFiles([record], into: store, mappings: mappings.path, runDate: date("2020-06-01"))
        let team = try team(of: "Patient/p1", in: store)
        XCTAssertEqual(Set(team.keys), ["Practitioner/b"], "a year after Alpha's visit, Alpha has left")
        XCTAssertEqual(reasons(team["Practitioner/b"]), ["recent visit"])
    }

    /// The official R4 examples: a Patient's generalPractitioner, a CarePlan's author and its (contained)
    /// care team, and the CareTeam example, whose contained dietitian is on the team until its period ends.
    func testTheOfficialExamplesGiveTheContactsTheyName() throws {
        let corpus = try Corpus.folder("fhir-r4-examples")
        let folder = try makeScratchFolder("care-team-official")
        var paths = ["Patient-example", "Patient-glossy", "Patient-f201", "CareTeam-example", "CarePlan-example", "CarePlan-f201", "CarePlan-f202",
                     "CarePlan-preg", "Practitioner-example", "PractitionerRole-example", "Practitioner-f201", "Practitioner-f204"].map { corpus.appendingPathComponent("\($0).json").path }
        // CarePlan-preg's subject, Patient/1, is no example of its own.
        let patient1 = folder.appendingPathComponent("patient-1.json")
        try Data(#"{"resourceType": "Patient", "id": "1", "name": [{"family": "Everywoman", "given": ["Eve"]}]}"#.utf8).write(to: patient1)
        paths.append(patient1.path)
        let store = try makeStore()
        let report = try importFiles(paths, into: store, runDate: date("2012-06-01"))
        XCTAssertEqual(report.failures, [], describe(report.failures))

        let glossy = try team(of: "Patient/glossy", in: store)
        XCTAssertEqual(Array(glossy.keys), ["Practitioner/example"])
        XCTAssertEqual(reasons(glossy["Practitioner/example"]), ["general practitioner"])
        XCTAssertEqual(glossy["Practitioner/example"]?.name.familyName, "Careful")
        // Its phone and email are its PractitionerRole's (PractitionerRole-example).
        XCTAssertEqual(glossy["Practitioner/example"]?.phoneNumbers?.map(\.value), ["(03) 5555 6473"])
        XCTAssertEqual(glossy["Practitioner/example"]?.emailAddresses?.map(\.value), ["adam.southern@example.org"])

        let f201 = try team(of: "Patient/f201", in: store)
        XCTAssertEqual(Set(f201.keys), ["Practitioner/f201", "Practitioner/f204"])
        XCTAssertEqual(reasons(f201["Practitioner/f201"]), ["care plan's care team"])

        let eve = try team(of: "Patient/1", in: store)
        XCTAssertEqual(Set(eve.values.map { $0.name.familyName ?? "" }), ["Midwife", "Obstetrician"], "CarePlan-preg's contained care team")

        // In 2012 the CareTeam example's dietitian (contained in it, until 2013-01-01) is on Peter's team;
        // CarePlan-example's author too. (The plan's care team is that CareTeam: a member contained in a
        // CareTeam the plan references, not contains, counts through the CareTeam alone.)
        var peter = try team(of: "Patient/example", in: store)
        XCTAssertEqual(reasons(peter["Practitioner/example"]), ["care plan author"])
        let dietitian = try XCTUnwrap(peter.values.first { $0.name.familyName == "Dietician" }, "\(peter.keys)")
        XCTAssertEqual(reasons(dietitian), ["care team"])

        // Once the CareTeam's period is over, the dietitian has left it.
        _ = try importFiles(paths, into: store, runDate: date("2014-01-01"))
        peter = try team(of: "Patient/example", in: store)
        XCTAssertEqual(Array(peter.keys), ["Practitioner/example"])
        XCTAssertTrue(try isTombstoned(dietitian.id, in: store))
    }
}
