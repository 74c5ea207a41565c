import CareModel
import FHIR
import Foundation
import Mapping
import XCTest
@testable import Pipeline

/// How an active task's outcome is written into a Bundle or NDJSON: its first resource (an Observation, or
/// a DocumentReference when the outcome is only a recording) and each companion as entries of their own
/// type, PUT by id or conditionally created on their own identifiers, and one Provenance whose targets are
/// the entries' `fullUrl`s when the server gives the ids.
final class ActiveTaskRenderingTests: XCTestCase {
    private let start = Date(timeIntervalSince1970: 1_795_000_000)

    /// A six-minute walk with a recording: an Observation and a DocumentReference companion.
    private func exported(values: [OutcomeValue], codes: [String], previousVersions: Int = 0) throws -> ExportedObservation {
        var mapping = try XCTUnwrap(try MappingSet.defaults().activeTasks)
        let index = try XCTUnwrap(mapping.tasks.firstIndex { $0.name == "six-minute-walk" })
        mapping.tasks[index].documents = try XCTUnwrap(mapping.tasks.first { $0.name == "voice-recording" }?.documents)
        let schedule = try Schedule.dailyAtTime(hour: 9, minutes: 0, start: start, end: nil, text: nil, timeZone: .gmt)
        var task = CareTask(id: "walk", title: "Walk test", schedule: schedule, metadata: EntityMetadata(
            effectiveDate: start, timezone: .gmt, provenance: Provenance(sourceSystem: "https://ehr.example", fhirType: "CarePlan", fhirID: "cp-1")))
        var linkage = task.metadata.linkage
        linkage.codes = codes
        task.metadata.linkage = linkage
        let patient = Patient(id: "pat", name: PersonName(familyName: "Doe"), metadata: EntityMetadata(
            effectiveDate: start, timezone: .gmt, provenance: Provenance(sourceSystem: "https://ehr.example", fhirType: "Patient", fhirID: "pat-1")))
        let outcome = Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 0, values: values, metadata: EntityMetadata(
            effectiveDate: start, previousVersionUUIDs: (0..<previousVersions).map { _ in UUID() }, timezone: .gmt))
        let exporter = OutcomeExporter(mapping: try XCTUnwrap(try MappingSet.defaults().export), activeTasks: mapping)
        return try exporter.export(OutcomeExportInput(outcome: outcome, task: task, patient: patient))
    }

    private func bundle(_ exported: ExportedObservation, request: ExportOptions.Request, format: ExportOptions.Format = .json) throws -> (Element?, ExportRendering.Rendered) {
        var options = ExportOptions()
        options.request = request
        options.format = format
        let rendering = ExportRendering(options: options, identifierSystem: "urn:caregate:outcome", exportID: "test", now: start)
        let rendered = rendering.render(exported, outcomeID: "outcome-1")
        guard format == .json else { return (nil, rendered) }
        return (try FHIRJSON.read(rendering.head() + rendered.bytes + rendering.tail()), rendered)
    }

    private let walk = ["http://loinc.org|64098-7"]
    private var values: [OutcomeValue] {
        [OutcomeValue(.double(400), units: "m", kind: "distance"), OutcomeValue(.binary(Data("audio".utf8)), units: "audio/mp4", kind: "recording")]
    }

    func testPutEntriesByTypeAndId() throws {
        let exported = try exported(values: values, codes: walk)
        let (bundle, rendered) = try bundle(exported, request: .put)
        let entries = try XCTUnwrap(bundle).children(named: "entry")
        XCTAssertEqual(rendered.entries, 3)
        XCTAssertEqual(entries.compactMap { $0.child(named: "request")?.childValue("url") }, [
            "Observation/\(exported.id)", "DocumentReference/\(exported.companions[0].id)", "Provenance/\(exported.provenance?.childValue("id") ?? "")",
        ])
        XCTAssertEqual(entries.last?.child(named: "resource")?.children(named: "target").compactMap { $0.childValue("reference") }, [
            "Observation/\(exported.id)", "DocumentReference/\(exported.companions[0].id)",
        ])
    }

    func testConditionalEntriesFindEachResourceByItsOwnIdentifier() throws {
        let exported = try exported(values: values, codes: walk)
        let entries = try XCTUnwrap(try bundle(exported, request: .conditional).0).children(named: "entry")
        XCTAssertEqual(entries.compactMap { $0.child(named: "request")?.childValue("method") }, ["POST", "POST", "POST"])
        XCTAssertEqual(entries.compactMap { $0.child(named: "request")?.childValue("ifNoneExist") }, [
            "identifier=urn:caregate:outcome|outcome-1", "identifier=urn:caregate:outcome|\(exported.companions[0].identifierValue)",
        ])
        XCTAssertTrue(entries.dropLast().allSatisfy { $0.child(named: "resource")?.childValue("id") == nil }, "the server gives the ids")
        let urls = entries.dropLast().compactMap { $0.childValue("fullUrl") }
        XCTAssertEqual(Set(urls).count, 2)
        XCTAssertEqual(entries.last?.child(named: "resource")?.children(named: "target").compactMap { $0.childValue("reference") }, urls)

        let later = try self.exported(values: values, codes: walk, previousVersions: 1)
        let updates = try XCTUnwrap(try bundle(later, request: .conditional).0).children(named: "entry")
        XCTAssertEqual(updates.dropLast().compactMap { $0.child(named: "request")?.childValue("url") }, [
            "Observation?identifier=urn:caregate:outcome|outcome-1", "DocumentReference?identifier=urn:caregate:outcome|\(later.companions[0].identifierValue)",
        ])
    }

    /// A recording alone: the DocumentReference is the first resource.
    func testARecordingAloneIsADocumentReferenceEntry() throws {
        let exported = try exported(values: [values[1]], codes: ["urn:caregate:active-task|voice-recording"])
        let entries = try XCTUnwrap(try bundle(exported, request: .put).0).children(named: "entry")
        XCTAssertEqual(entries.compactMap { $0.child(named: "request")?.childValue("url") }.first, "DocumentReference/\(exported.id)")
        XCTAssertEqual(entries.count, 2)
    }

    func testNDJSONWritesALinePerResource() throws {
        let rendered = try bundle(try exported(values: values, codes: walk), request: .put, format: .ndjson).1
        let lines = String(decoding: rendered.bytes, as: UTF8.self).split(separator: "\n")
        XCTAssertEqual(lines.count, 3)
        XCTAssertEqual(rendered.entries, 3)
        XCTAssertEqual(try lines.map { try FHIRJSON.read(Data($0.utf8)).resourceType }, ["Observation", "DocumentReference", "Provenance"])
    }
}
