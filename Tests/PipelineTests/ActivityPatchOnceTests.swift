import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// Outcomes of one care plan activity going out together each find the activity complete; the Bundle
/// carries its PATCH once, after the first of them (a file export: once in the file; a push: once per
/// Bundle, as each Bundle is stored or fails as a whole).
final class ActivityPatchOnceTests: XCTestCase {
    private let zone = TimeZone(identifier: "America/Chicago")!

    /// A plan of two days with one activity of two occurrences, whose detail status can be patched.
    private static let carePlan = #"""
        {"resourceType":"CarePlan","id":"cp-once","status":"active","intent":"plan","subject":{"reference":"Patient/p-once"},
         "period":{"start":"2026-11-01","end":"2026-11-02"},
         "activity":[
          {"detail":{"kind":"Task","code":{"coding":[{"system":"http://snomed.info/sct","code":"229065009"}],"text":"Exercises"},
           "status":"scheduled","scheduledTiming":{"repeat":{"count":2,"frequency":1,"period":1,"periodUnit":"d","timeOfDay":["09:00:00"]}}}}]}
        """#

    /// A store with the plan, both occurrences of its activity recorded on the device, and a gateway whose
    /// export mapping patches completed activities.
    private func completedActivity() throws -> Gateway {
        let input = try makeScratchFolder("patch-once-input")
        try Data(#"{"resourceType":"Patient","id":"p-once","name":[{"family":"Once","given":["Olga"]}]}"#.utf8)
            .write(to: input.appendingPathComponent("patient.json"))
        try Data(Self.carePlan.utf8).write(to: input.appendingPathComponent("careplan.json"))
        let store = try makeStore()
        XCTAssertEqual(try importFiles([input.path], into: store, zone: zone.identifier).failures, [])
        let task = try XCTUnwrap(try store.tasks(.current).first { $0.metadata.linkage.elementPath == "CarePlan.activity[0]" })
        var batch = StoreBatch()
        for occurrence in 0..<2 {
            var metadata = EntityMetadata(effectiveDate: task.schedule.eventStart(occurrence: occurrence) ?? Date(), timezone: zone)
            metadata.source = "HeartApp"
            batch.upsert(Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: occurrence, values: [OutcomeValue(.boolean(true))], metadata: metadata))
        }
        XCTAssertEqual(try store.apply(batch).outboxEntryIDs.count, 2)
        let mappings = try makeScratchFolder("patch-once-mappings")
        let defaults = try String(contentsOf: Corpus.projectRoot.appendingPathComponent("Mappings/ObservationExport.yaml"), encoding: .utf8)
        try Data(defaults.replacingOccurrences(of: "activity-status: false", with: "activity-status: true").utf8)
            .write(to: mappings.appendingPathComponent("ObservationExport.yaml"))
        return Gateway(store: store, mappings: try MappingSet.defaults(overriddenBy: mappings.path), options: Gateway.Options(timeZone: zone))
    }

    /// Each entry as `METHOD url`.
    private static func requests(_ bundle: Element) -> [String] {
        bundle.children(named: "entry").map { entry in
            let request = entry.child(named: "request")
            return "\(request?.childValue("method") ?? "?") \(request?.childValue("url") ?? "?")"
        }
    }

    func testAFileExportHoldsEachActivityPatchOnceAfterItsFirstOutcome() throws {
        let gateway = try completedActivity()
        let out = try makeScratchFolder("patch-once-out")
        let report = try gateway.export(to: .folder(out.path))
        XCTAssertEqual(report.observations, 2)
        let bundle = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(report.path))))
        let requests = Self.requests(bundle)
        XCTAssertEqual(requests.filter { $0.hasPrefix("PATCH") }, ["PATCH CarePlan/cp-once"], "\(requests)")
        XCTAssertEqual(requests.map { $0.split(separator: "/").first.map(String.init) ?? $0 },
                       ["PUT Observation", "PUT Provenance", "PATCH CarePlan", "PUT Observation", "PUT Provenance"], "the first outcome's entries, its PATCH, the second's")
    }

    /// Records each Bundle it is sent and stores every outcome.
    private final class RecordingReceiver: ExportReceiver {
        var bundles: [Element] = []
        var entryCounts: [[Int]] = []

        func receive(bundle: Data, entryCounts: [Int]) throws -> [ExportReceipt] {
            bundles.append(try FHIRJSON.read(bundle))
            self.entryCounts.append(entryCounts)
            return entryCounts.map { _ in .stored(location: nil) }
        }
    }

    func testAPushHoldsEachActivityPatchOncePerBundle() throws {
        let together = RecordingReceiver()
        XCTAssertEqual(try completedActivity().push(to: together, batchSize: 10).acknowledged, 2)
        XCTAssertEqual(together.bundles.count, 1)
        XCTAssertEqual(together.bundles.flatMap(Self.requests).filter { $0.hasPrefix("PATCH") }.count, 1)
        XCTAssertEqual(together.entryCounts, [[3, 2]], "the PATCH counts with the outcome it follows")
        XCTAssertEqual(together.bundles.first?.children(named: "entry").count, 5)

        let apart = RecordingReceiver()
        XCTAssertEqual(try completedActivity().push(to: apart, batchSize: 1).acknowledged, 2)
        XCTAssertEqual(apart.bundles.map { Self.requests($0).filter { $0.hasPrefix("PATCH") }.count }, [1, 1], "each Bundle stands alone")
        XCTAssertEqual(apart.entryCounts, [[3], [3]])
    }
}
