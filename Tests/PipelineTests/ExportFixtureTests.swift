import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// The Observation each kind of outcome becomes, against the reviewed files of Fixtures/export: per case
/// (`<name>.case.json`: a task of Fixtures/provider, an occurrence, CareKit outcome values, optionally
/// `then: delete`) the exported Observation must equal `<name>.observation.json`, where the task
/// version's uuid (new in every store) reads `{task-uuid}`. `CAREGATE_UPDATE_FIXTURES=1` rewrites the
/// expected files, for review.
final class ExportFixtureTests: XCTestCase {
    private struct Case: Decodable {
        let description: String
        let task: String
        let occurrence: Int
        let values: [OutcomeValue]
        let then: String?
    }

    /// When every outcome is written (the store's clock for the batch): the Observation's `issued`.
    private let recordedAt = Date(timeIntervalSince1970: 1_795_000_000)

    func testEachCaseExportsItsExpectedObservation() throws {
        let folder = Corpus.projectRoot.appendingPathComponent("Fixtures/export")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".case.json") }.map { String($0.dropLast(".case.json".count)) }.sorted()
        XCTAssertGreaterThanOrEqual(names.count, 10)
        let update = ProcessInfo.processInfo.environment["CAREGATE_UPDATE_FIXTURES"] == "1"
        for name in names {
            let spec = try CareKitJSON.makeDecoder().decode(Case.self, from: Data(contentsOf: folder.appendingPathComponent("\(name).case.json")))
            let actual = try exportedObservation(for: spec)
            let expectedURL = folder.appendingPathComponent("\(name).observation.json")
            if update {
                try Data(actual.utf8).write(to: expectedURL)
                continue
            }
            let expected = try String(contentsOf: expectedURL, encoding: .utf8)
            XCTAssertEqual(actual, expected, "\(name): \(spec.description)")
        }
    }

    /// The pretty JSON of the Observation `spec`'s outcome exports as, the task uuid made `{task-uuid}`.
    private func exportedObservation(for spec: Case) throws -> String {
        let store = try makeStore()
        let report = try importFiles([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: store, zone: "America/Chicago")
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let task = try XCTUnwrap(try store.tasks(EntityQuery(ids: [spec.task])).first, spec.task)
        let zone = TimeZone(identifier: "America/Chicago") ?? .gmt
        var metadata = EntityMetadata(effectiveDate: try XCTUnwrap(task.schedule.eventStart(occurrence: spec.occurrence)), timezone: zone)
        metadata.source = "HeartApp"
        var batch = StoreBatch(date: recordedAt)
        batch.upsert(Outcome(taskUUID: task.uuid, taskOccurrenceIndex: spec.occurrence, values: spec.values, metadata: metadata))
        try store.apply(batch)
        if spec.then == "delete" {
            var deletion = StoreBatch(date: recordedAt.addingTimeInterval(3600))
            deletion.delete(.outcome, id: Outcome.id(taskUUID: task.uuid, occurrence: spec.occurrence))
            try store.apply(deletion)
        }
        let out = try makeScratchFolder("export-fixture")
        let exported = try Gateway(store: store).export(to: .folder(out.path), now: recordedAt.addingTimeInterval(7200))
        XCTAssertEqual(exported.refused.map(\.reason), [], spec.description)
        let bundle = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(exported.path))))
        let observation = try XCTUnwrap(bundle.children(named: "entry").compactMap { $0.child(named: "resource") }.first { $0.resourceType == "Observation" })
        return String(decoding: FHIRJSON.write(observation, pretty: true), as: UTF8.self)
            .replacingOccurrences(of: task.uuid.uuidString.lowercased(), with: "{task-uuid}")
            .replacingOccurrences(of: task.uuid.uuidString, with: "{task-uuid}")
    }
}
