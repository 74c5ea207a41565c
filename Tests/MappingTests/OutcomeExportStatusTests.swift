import CareModel
import FHIR
import Foundation
import Mapping
import XCTest

/// `Observation.status` of an exported outcome (FHIR R4 observation-status): `amended` only when the
/// provider has, or may have, an earlier version of the outcome; the mapping's status otherwise, also for
/// a version edited before any was sent; `entered-in-error` for a deletion. The request (create or
/// update) follows the version, not the status.
final class OutcomeExportStatusTests: XCTestCase {
    private let zone = TimeZone(identifier: "America/Chicago") ?? .gmt
    private let start = Date(timeIntervalSince1970: 1_795_000_000)

    private func input(previousVersions: Int, deleted: Bool = false, earlierVersionMayBeAtProvider: Bool?) throws -> OutcomeExportInput {
        let schedule = try Schedule.dailyAtTime(hour: 9, minutes: 0, start: start, end: nil, text: nil, timeZone: zone)
        let task = CareTask(id: "walk", title: "Walk", schedule: schedule, metadata: EntityMetadata(effectiveDate: start, timezone: zone))
        let patient = Patient(id: "pat", name: PersonName(familyName: "Doe"), metadata: EntityMetadata(
            effectiveDate: start, timezone: zone, provenance: Provenance(sourceSystem: "https://ehr.example", fhirType: "Patient", fhirID: "pat-1")))
        var metadata = EntityMetadata(
            effectiveDate: start, deletedDate: deleted ? start.addingTimeInterval(60) : nil,
            previousVersionUUIDs: (0..<previousVersions).map { _ in UUID() }, timezone: zone)
        metadata.source = "HeartApp"
        let outcome = Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 0, values: [OutcomeValue(.boolean(true))], metadata: metadata)
        return OutcomeExportInput(outcome: outcome, task: task, patient: patient, earlierVersionMayBeAtProvider: earlierVersionMayBeAtProvider)
    }

    private func exported(_ input: OutcomeExportInput, status: String = "final") throws -> ExportedObservation {
        var mapping = ExportMapping(file: "test.yaml")
        mapping.status = status
        return try OutcomeExporter(mapping: mapping).export(input)
    }

    func testAFirstVersionHasTheMappingsStatus() throws {
        let first = try exported(try input(previousVersions: 0, earlierVersionMayBeAtProvider: false))
        XCTAssertEqual(first.observation.childValue("status"), "final")
        XCTAssertTrue(first.isFirstVersion)
        XCTAssertEqual(try exported(try input(previousVersions: 0, earlierVersionMayBeAtProvider: false), status: "preliminary").observation.childValue("status"), "preliminary")
    }

    /// Recorded, then edited before any export: the provider never had a final version.
    func testAVersionEditedBeforeAnyWasSentHasTheMappingsStatusButGoesAsAnUpdate() throws {
        let edited = try exported(try input(previousVersions: 1, earlierVersionMayBeAtProvider: false))
        XCTAssertEqual(edited.observation.childValue("status"), "final")
        XCTAssertFalse(edited.isFirstVersion, "a later version is an update, whatever its status")
    }

    /// An earlier version was sent (or came from the provider).
    func testAVersionAfterOneThatMayBeAtTheProviderIsAmended() throws {
        let amended = try exported(try input(previousVersions: 2, earlierVersionMayBeAtProvider: true))
        XCTAssertEqual(amended.observation.childValue("status"), "amended")
        XCTAssertFalse(amended.isFirstVersion)
    }

    func testADeletionIsEnteredInErrorWhateverWasSent() throws {
        for mayBeThere in [true, false] {
            let deletion = try exported(try input(previousVersions: 1, deleted: true, earlierVersionMayBeAtProvider: mayBeThere))
            XCTAssertEqual(deletion.observation.childValue("status"), "entered-in-error")
            XCTAssertFalse(deletion.isFirstVersion)
        }
    }

    /// A caller that does not say what was sent gets the rule of version links alone.
    func testWithoutTheFactAnyEarlierVersionCounts() throws {
        XCTAssertFalse(try input(previousVersions: 0, earlierVersionMayBeAtProvider: nil).earlierVersionMayBeAtProvider)
        XCTAssertTrue(try input(previousVersions: 1, earlierVersionMayBeAtProvider: nil).earlierVersionMayBeAtProvider)
        XCTAssertEqual(try exported(try input(previousVersions: 1, earlierVersionMayBeAtProvider: nil)).observation.childValue("status"), "amended")
    }
}
