import CareModel
import Crypto
import FHIR
import Foundation
import XCTest
@testable import Mapping

/// What an active task's outcome becomes under the shipped mappings: each kind coded, in UCUM and in its
/// place (value or component), a recording as a DocumentReference with its size and SHA-1, every resource
/// valid R4; a value the task does not take is refused with the reason, and other tasks keep the generic
/// Observation (a binary value still a dead letter).
final class ActiveTaskResultExportTests: XCTestCase {
    private let zone = TimeZone(identifier: "Europe/Zurich") ?? .gmt
    private let start = Date(timeIntervalSince1970: 1_795_000_000)
    private let validator = StructureValidator(options: ValidationOptions(strict: true))

    private func exporter() throws -> OutcomeExporter {
        let set = try MappingSet.defaults()
        return OutcomeExporter(mapping: try XCTUnwrap(set.export), activeTasks: set.activeTasks)
    }

    private func input(codes: [String], values: [OutcomeValue], deleted: Bool = false) throws -> OutcomeExportInput {
        let schedule = try Schedule.dailyAtTime(hour: 9, minutes: 0, start: start, end: nil, text: nil, timeZone: zone)
        var task = CareTask(id: "test", title: "Active task", schedule: schedule, metadata: EntityMetadata(
            effectiveDate: start, timezone: zone, provenance: Provenance(sourceSystem: "https://ehr.example", fhirType: "ServiceRequest", fhirID: "order-1")))
        var linkage = task.metadata.linkage
        linkage.codes = codes
        task.metadata.linkage = linkage
        let patient = Patient(id: "pat", name: PersonName(familyName: "Doe"), metadata: EntityMetadata(
            effectiveDate: start, timezone: zone, provenance: Provenance(sourceSystem: "https://ehr.example", fhirType: "Patient", fhirID: "pat-1")))
        var metadata = EntityMetadata(effectiveDate: start, deletedDate: deleted ? start.addingTimeInterval(3600) : nil, timezone: zone)
        metadata.source = "ResearchKit app"
        let outcome = Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 0, values: values, metadata: metadata)
        return OutcomeExportInput(outcome: outcome, task: task, patient: patient)
    }

    private func value(_ kind: String, _ number: Double, units: String? = nil) -> OutcomeValue {
        OutcomeValue(.double(number), units: units, kind: kind, createdDate: start.addingTimeInterval(9.5 * 3600), timezone: zone)
    }

    /// Every resource of `exported`, checked against R4.
    private func assertValid(_ exported: ExportedObservation, file: StaticString = #filePath, line: UInt = #line) {
        for resource in [exported.observation] + exported.companions.map(\.resource) + (exported.provenance.map { [$0] } ?? []) {
            let errors = validator.validate(resource).errors
            XCTAssertEqual(errors.map(\.diagnostics), [], "\(resource.resourceType ?? "")", file: file, line: line)
        }
    }

    private func quantity(_ element: Element?) -> [String?] {
        ["value", "unit", "system", "code"].map { element?.child(named: "valueQuantity")?.childValue($0) }
    }

    private func codings(_ element: Element?) -> [String] {
        element?.child(named: "code")?.children(named: "coding").map { "\($0.childValue("system") ?? "")|\($0.childValue("code") ?? "")" } ?? []
    }

    func testASixMinuteWalk() throws {
        let exported = try exporter().export(try input(codes: ["http://loinc.org|64098-7"], values: [value("distance", 452.5, units: "m"), value("duration", 360)]))
        assertValid(exported)
        let observation = exported.observation
        XCTAssertEqual(codings(observation), ["http://loinc.org|64098-7"])
        XCTAssertEqual(quantity(observation), ["452.5", "m", "http://unitsofmeasure.org", "m"])
        XCTAssertEqual(observation.children(named: "category").first?.child(named: "coding")?.childValue("code"), "activity")
        let component = try XCTUnwrap(observation.child(named: "component"))
        XCTAssertEqual(codings(component), ["urn:caregate:active-task|walk-duration"])
        XCTAssertEqual(quantity(component), ["360", "s", "http://unitsofmeasure.org", "s"])
        XCTAssertEqual(observation.child(named: "basedOn")?.childValue("reference"), "ServiceRequest/order-1")
        XCTAssertEqual(observation.child(named: "subject")?.childValue("reference"), "Patient/pat-1")
        XCTAssertNotNil(observation.childValue("effectiveDateTime"), "the values' own time")
        XCTAssertTrue(exported.companions.isEmpty)
    }

    func testATimedWalk() throws {
        let exported = try exporter().export(try input(
            codes: ["urn:caregate:active-task|timed-walk"], values: [value("duration", 7.25), value("distance", 7.62), value("timeLimit", 180)]))
        assertValid(exported)
        XCTAssertEqual(codings(exported.observation), ["urn:caregate:active-task|timed-walk"])
        XCTAssertEqual(quantity(exported.observation), ["7.25", "s", "http://unitsofmeasure.org", "s"])
        XCTAssertEqual(exported.observation.children(named: "component").map(codings), [
            ["urn:caregate:active-task|timed-walk-distance"], ["urn:caregate:active-task|timed-walk-time-limit"],
        ])
    }

    func testAToneAudiogramIsOneObservationWithAThresholdPerEarAndFrequency() throws {
        let values = [value("threshold.left.1000", 15), value("threshold.right.1000", 20), value("threshold.left.250", 10), value("threshold.right.8000", 45)]
        let exported = try exporter().export(try input(codes: ["http://loinc.org|89015-2"], values: values))
        assertValid(exported)
        XCTAssertEqual(codings(exported.observation), ["http://loinc.org|89015-2"])
        XCTAssertNil(exported.observation.child(named: "valueQuantity"))
        let components = exported.observation.children(named: "component")
        XCTAssertEqual(components.map(codings), [
            ["urn:caregate:active-task|hearing-threshold.left.250"], ["http://loinc.org|89016-0"], ["http://loinc.org|89017-8"], ["http://loinc.org|89029-3"],
        ], "in the mapping's order")
        XCTAssertEqual(components.map { quantity($0) }, [
            ["10", "dB", "http://unitsofmeasure.org", "dB"], ["15", "dB", "http://unitsofmeasure.org", "dB"],
            ["20", "dB", "http://unitsofmeasure.org", "dB"], ["45", "dB", "http://unitsofmeasure.org", "dB"],
        ])
    }

    func testTheSoundLevelTappingAndSpatialMemory() throws {
        let level = try exporter().export(try input(codes: ["urn:caregate:active-task|environment-sound-level"], values: [value("level", 48.3)]))
        assertValid(level)
        XCTAssertEqual(quantity(level.observation), ["48.3", "dB[SPL]", "http://unitsofmeasure.org", "dB[SPL]"])

        let taps = OutcomeValue(.integer(112), kind: "taps", createdDate: start, timezone: zone)
        let tapping = try exporter().export(try input(codes: ["urn:caregate:active-task|tapping"], values: [taps, value("accuracy", 96.4, units: "%")]))
        assertValid(tapping)
        XCTAssertEqual(tapping.observation.children(named: "component").map { quantity($0) }, [
            ["112", "{taps}", "http://unitsofmeasure.org", "{taps}"], ["96.4", "%", "http://unitsofmeasure.org", "%"],
        ])

        let memory = try exporter().export(try input(
            codes: ["urn:caregate:active-task|spatial-span-memory"],
            values: [OutcomeValue(.integer(85), kind: "score"), OutcomeValue(.integer(6), kind: "games"), OutcomeValue(.integer(2), kind: "failures")]))
        assertValid(memory)
        XCTAssertEqual(quantity(memory.observation), ["85", "{score}", "http://unitsofmeasure.org", "{score}"])
        XCTAssertEqual(memory.observation.children(named: "component").count, 2)
    }

    func testARecordingIsADocumentReferenceWithItsSizeAndHash() throws {
        let audio = Data((0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let recording = OutcomeValue(.binary(audio), units: "audio/x-m4a", kind: "recording", createdDate: start.addingTimeInterval(600), timezone: zone)
        let exported = try exporter().export(try input(codes: ["urn:caregate:active-task|voice-recording"], values: [recording]))
        assertValid(exported)
        let document = exported.observation
        XCTAssertEqual(document.resourceType, "DocumentReference")
        XCTAssertEqual(document.childValue("status"), "current")
        XCTAssertEqual(document.child(named: "subject")?.childValue("reference"), "Patient/pat-1")
        XCTAssertEqual(document.child(named: "type")?.child(named: "coding")?.childValue("code"), "voice-recording")
        XCTAssertEqual(document.child(named: "context")?.child(named: "related")?.childValue("reference"), "ServiceRequest/order-1")
        let attachment = try XCTUnwrap(document.child(named: "content")?.child(named: "attachment"))
        XCTAssertEqual(attachment.childValue("contentType"), "audio/x-m4a", "the value's units, a MIME type")
        XCTAssertEqual(attachment.childValue("size"), "40000")
        XCTAssertEqual(attachment.childValue("hash"), Data(Insecure.SHA1.hash(data: audio)).base64EncodedString())
        XCTAssertEqual(attachment.childValue("data").flatMap { Data(base64Encoded: $0) }, audio)
        XCTAssertEqual(exported.provenance?.children(named: "target").compactMap { $0.childValue("reference") }, ["DocumentReference/\(exported.id)"])

        // No MIME type in the units: the mapping's.
        let bare = OutcomeValue(.binary(audio), kind: "recording")
        let fallback = try exporter().export(try input(codes: ["urn:caregate:active-task|voice-recording"], values: [bare]))
        XCTAssertEqual(fallback.observation.child(named: "content")?.child(named: "attachment")?.childValue("contentType"), "audio/mp4")
    }

    /// An Observation and a recording of one outcome: the first keeps the outcome's ids, the recording
    /// is a companion, and one Provenance names both.
    func testObservationsAndARecordingOfOneOutcome() throws {
        var mapping = try XCTUnwrap(try MappingSet.defaults().activeTasks)
        let index = try XCTUnwrap(mapping.tasks.firstIndex { $0.name == "six-minute-walk" })
        let recording = try XCTUnwrap(mapping.tasks.first { $0.name == "voice-recording" }?.documents.first)
        mapping.tasks[index].documents = [recording]
        let exporter = OutcomeExporter(mapping: try XCTUnwrap(try MappingSet.defaults().export), activeTasks: mapping)
        let exported = try exporter.export(try input(
            codes: ["http://loinc.org|64098-7"], values: [value("distance", 400), OutcomeValue(.binary(Data("RIFF".utf8)), kind: "recording")]))
        assertValid(exported)
        XCTAssertEqual(exported.observation.resourceType, "Observation")
        XCTAssertEqual(exported.companions.map(\.resourceType), ["DocumentReference"])
        let companion = try XCTUnwrap(exported.companions.first)
        XCTAssertEqual(companion.identifierValue, exported.observation.child(named: "identifier")?.childValue("value").map { "\($0)/recording" })
        XCTAssertEqual(
            exported.provenance?.children(named: "target").compactMap { $0.childValue("reference") },
            ["Observation/\(exported.id)", "DocumentReference/\(companion.id)"])
    }

    func testADeletedResultIsEnteredInError() throws {
        let exported = try exporter().export(try input(codes: ["http://loinc.org|64098-7"], values: [value("distance", 400)], deleted: true))
        assertValid(exported)
        XCTAssertEqual(exported.observation.childValue("status"), "entered-in-error")
    }

    /// An outcome recorded without values (the test was not finished): the task's first Observation code,
    /// data absent.
    func testAnEmptyResultSaysTheDataIsAbsent() throws {
        let exported = try exporter().export(try input(codes: ["http://loinc.org|89015-2"], values: []))
        assertValid(exported)
        XCTAssertEqual(codings(exported.observation), ["http://loinc.org|89015-2"])
        XCTAssertEqual(exported.observation.child(named: "dataAbsentReason")?.child(named: "coding")?.childValue("code"), "unknown")
        XCTAssertTrue(exported.observation.children(named: "component").isEmpty)
    }

    func testWhatTheTaskDoesNotTakeIsRefusedWithTheReason() throws {
        let walk = ["http://loinc.org|64098-7"]
        let cases: [([OutcomeValue], String)] = [
            ([value("steps", 500)], "a value of kind 'steps' is no result of the active task 'six-minute-walk'"),
            ([value("distance", 400), value("distance", 410)], "two values of kind 'distance'"),
            ([value("distance", 1312, units: "ft")], "the result 'distance' is in 'm' (UCUM); the value's unit 'ft' is not"),
            ([OutcomeValue(.text("far"), kind: "distance")], "the result 'distance' of the active task 'six-minute-walk' is a number, not a text"),
            ([value("distance", .infinity)], "not a finite number"),
        ]
        for (values, reason) in cases {
            XCTAssertThrowsError(try exporter().export(try input(codes: walk, values: values))) { error in
                XCTAssertTrue((error as? ExportRefusal)?.reason.contains(reason) == true, "\(error)")
            }
        }
        XCTAssertThrowsError(try exporter().export(try input(
            codes: ["urn:caregate:active-task|voice-recording"], values: [OutcomeValue(.binary(Data()), kind: "recording")]))) { error in
            XCTAssertTrue((error as? ExportRefusal)?.reason.contains("is empty") == true, "\(error)")
        }
        XCTAssertThrowsError(try exporter().export(try input(
            codes: ["urn:caregate:active-task|voice-recording"], values: [OutcomeValue(.integer(3), kind: "recording")]))) { error in
            XCTAssertTrue((error as? ExportRefusal)?.reason.contains("is a file") == true, "\(error)")
        }
    }

    /// The export mapping's `units:` aliases hold for active tasks too.
    func testAnAppUnitTheExportMappingKnows() throws {
        let exported = try exporter().export(try input(codes: ["urn:caregate:active-task|tapping"], values: [value("duration", 20, units: "s"), OutcomeValue(.integer(40), units: "{taps}", kind: "taps")]))
        assertValid(exported)
    }

    /// Any other task: the generic Observation, and a binary value stays a dead letter.
    func testOtherTasksAreUnchanged() throws {
        let plain = try exporter().export(try input(codes: ["http://loinc.org|8867-4"], values: [OutcomeValue(.integer(72), units: "/min")]))
        XCTAssertEqual(codings(plain.observation), ["http://loinc.org|8867-4"])
        XCTAssertEqual(plain.observation.children(named: "category").first?.child(named: "coding")?.childValue("code"), "survey")
        XCTAssertThrowsError(try exporter().export(try input(codes: ["http://loinc.org|8867-4"], values: [OutcomeValue(.binary(Data([1, 2])), kind: "recording")]))) { error in
            XCTAssertTrue((error as? ExportRefusal)?.reason.contains("binary: dead-letter") == true, "\(error)")
        }
    }
}
