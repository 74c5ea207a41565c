import Foundation
import TestSupport
import XCTest

/// `caregate patients contacts`: a patient's care team with why each is there, as text and JSON, and
/// nothing of another patient.
final class PatientsContactsCLITests: XCTestCase {
    func testListsThePatientsCareTeamWithItsReasons() throws {
        let folder = try makeScratchFolder("patients-contacts")
        let store = folder.appendingPathComponent("store.sqlite").path
        let imported = try CLIRunner.run(["import", "--store", store, "--time-zone", "UTC", "Fixtures/provider", "Fixtures/mapping-tests/care-team/team.xml"])
        XCTAssertEqual(imported.status, 0, imported.stderr)

        let text = try CLIRunner.run(["patients", "contacts", "--store", store, "--patient", "Patient/ct-patient"])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("Dr. Ana Luísa Ferreira  [careProvider]"), text.stdout)
        XCTAssertTrue(text.stdout.contains("why:       care team, care plan's care team"), text.stdout)
        XCTAssertTrue(text.stdout.contains("Endocrinologist, Endocrinology, Portland Diabetes Clinic"), text.stdout)
        XCTAssertTrue(text.stdout.contains("Mai Nguyen  [friendsAndFamily]"), "friends and family after the care team: \(text.stdout)")
        XCTAssertFalse(text.stdout.contains("Alan Smith"), "another patient's practitioner")

        let json = try CLIRunner.run(["patients", "contacts", "--store", store, "--patient", "Patient/pat-1", "--format", "json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let listed = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(listed.map { $0["id"] as? String }, ["Patient/pat-1#careteam-Practitioner-prac-1"])
        XCTAssertEqual(listed.first?["reasons"] as? [String], ["general practitioner", "care plan author", "prescriber"])
        XCTAssertEqual(listed.first?["emails"] as? [String], ["alan.smith@springfield-clinic.example.org"])

        let unknown = try CLIRunner.run(["patients", "contacts", "--store", store, "--patient", "Patient/nobody"])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("no patient with id 'Patient/nobody'"), unknown.stderr)
    }
}
