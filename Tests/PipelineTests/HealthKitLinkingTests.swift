import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// Which imported tasks become HealthKit tasks (the `healthKitLinkage` field of the default mappings and
/// Mappings/healthkit.yaml), on the official R4 examples and Synthea's care plans, and that everything
/// `store dump --format carekit-json` serves of them decodes in CareKit 4.0's types (mirrored).
final class HealthKitLinkingTests: XCTestCase {
    /// Every task of `store`, as `store dump --format carekit-json` serves it, decoded with CareKit 4.0's
    /// `OCKTask` or, with a linkage, `OCKHealthKitTask`; the linked ones returned.
    private func servedTasks(_ store: any Store) throws -> (all: Int, linked: [CareKit4Decoded<CareKit4HealthKitTaskMirror>]) {
        var json = Data()
        try StoreDumper(store: store, format: .carekitJSON, taskPatient: CareKitConversion.taskPatient).dump { json.append($0) }
        var all = 0
        var linked: [CareKit4Decoded<CareKit4HealthKitTaskMirror>] = []
        for line in json.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            for task in object["tasks"] as? [[String: Any]] ?? [] {
                all += 1
                let data = try JSONSerialization.data(withJSONObject: task)
                if task["healthKitLinkage"] != nil {
                    linked.append(try JSONDecoder().decode(CareKit4Decoded<CareKit4HealthKitTaskMirror>.self, from: data))
                } else {
                    _ = try JSONDecoder().decode(CareKit4Decoded<CareKit4TaskMirror>.self, from: data)
                }
            }
        }
        return (all, linked)
    }

    /// CarePlan/example's activity is coded LOINC 3141-9 (body weight measured): a HealthKit task of
    /// body mass in kg, under its own id; the other official plans' activities (SNOMED, local codes) stay tasks.
    func testOfficialCarePlansLinkTheirWeightActivity() throws {
        let files = try Corpus.files(in: "fhir-r4-examples", suffix: ".json").filter { $0.lastPathComponent.hasPrefix("CarePlan-") }
        let store = try makeStore()
        let report = try importFiles(files.map(\.path), into: store)
        XCTAssertEqual(report.failures.count, 0, describe(report.failures))
        let served = try servedTasks(store)
        XCTAssertGreaterThan(served.all, 5)
        XCTAssertEqual(served.linked.map(\.own.id), ["CarePlan/example#activity-3141-9.healthkit-BodyMass"])
        let weight = try XCTUnwrap(served.linked.first?.own.healthKitLinkage)
        XCTAssertEqual([weight.quantityIdentifier, weight.quantityType.rawValue, weight.unitString], ["HKQuantityTypeIdentifierBodyMass", "discrete", "kg"])
        var ids: [String] = []
        try store.forEachVersion(.task) { ids.append($0.id) }
        XCTAssertFalse(ids.contains("CarePlan/example#activity-3141-9"), "no plain twin of the linked task")
    }

    /// The official ServiceRequest examples: the active orders with an occurrence (di, ft4) make a task
    /// each, at their occurrence; the completed ones none. None is a measurement HealthKit records.
    func testOfficialServiceRequestsMakeTasksOfActiveOrders() throws {
        let files = try Corpus.files(in: "fhir-r4-examples", suffix: ".json").filter { $0.lastPathComponent.hasPrefix("ServiceRequest-") }
        XCTAssertEqual(files.count, 7)
        let store = try makeStore()
        let report = try importFiles(files.map(\.path), into: store)
        XCTAssertEqual(report.failures.count, 0, describe(report.failures))
        var tasks: [CareTask] = []
        try store.forEachVersion(.task) { if case .task(let task) = $0 { tasks.append(task) } }
        XCTAssertEqual(Set(tasks.map(\.id)), ["ServiceRequest/di", "ServiceRequest/ft4"])
        XCTAssertTrue(tasks.allSatisfy { !$0.isHealthKitTask })
        let ft4 = try XCTUnwrap(tasks.first { $0.id == "ServiceRequest/ft4" })
        XCTAssertEqual(ft4.metadata.linkage.patientID, "Patient/pat2")
        XCTAssertEqual(ft4.schedule.elements.count, 1)
        // One event (`default: once`), on the day of its occurrenceDateTime (2015-08-27T09:33:27+07:00; import zone UTC).
        XCTAssertEqual(ft4.schedule.elements.first?.start, FHIRDateText.date("2015-08-27T00:00:00Z", in: .gmt))
        XCTAssertEqual(try servedTasks(store).all, 2)
    }

    /// A standalone active order coded with a measurement becomes a HealthKit task; a blood pressure
    /// order two (systolic, diastolic), each decoding in CareKit's `OCKHealthKitTask`.
    func testAMeasurementOrderIsAHealthKitTaskAndBloodPressureTwo() throws {
        let folder = try makeScratchFolder("order")
        func order(_ id: String, _ code: String, _ display: String) -> String {
            """
            {"resourceType": "ServiceRequest", "id": "\(id)", "status": "active", "intent": "order",
             "code": {"coding": [{"system": "http://loinc.org", "code": "\(code)", "display": "\(display)"}]},
             "subject": {"reference": "Patient/p1"},
             "occurrenceTiming": {"repeat": {"boundsPeriod": {"start": "2026-01-01"}, "frequency": 1, "period": 1, "periodUnit": "d", "timeOfDay": ["08:00:00"]}}}
            """
        }
        let paths = [
            try folder.writeFile("steps.json", order("steps", "55423-8", "Steps")),
            try folder.writeFile("bp.json", order("bp", "85354-9", "Blood pressure panel")),
            try folder.writeFile("ldl.json", order("ldl", "2089-1", "LDL cholesterol")),
        ]
        let store = try makeStore()
        let report = try importFiles(paths, into: store)
        XCTAssertEqual(report.failures.count, 0, describe(report.failures))
        let served = try servedTasks(store)
        XCTAssertEqual(served.all, 4)
        let linked = Dictionary(uniqueKeysWithValues: served.linked.map { ($0.own.id, $0.own.healthKitLinkage) })
        XCTAssertEqual(Set(linked.keys), [
            "ServiceRequest/steps.healthkit-StepCount", "ServiceRequest/bp.healthkit-BloodPressureSystolic",
            "ServiceRequest/bp.healthkit-BloodPressureDiastolic",
        ])
        XCTAssertEqual(linked["ServiceRequest/steps.healthkit-StepCount"]?.quantityType, .cumulative)
        XCTAssertEqual(linked["ServiceRequest/steps.healthkit-StepCount"]?.unitString, "count")
        XCTAssertEqual(linked["ServiceRequest/bp.healthkit-BloodPressureDiastolic"]?.unitString, "mmHg")
    }

    /// Synthea's care plan activities are SNOMED procedures and regimes (exercise, diet, education):
    /// none is a quantity HealthKit records, so none links, and every task served decodes as OCKTask.
    func testSyntheaCarePlansLinkNothing() throws {
        let files = try Corpus.files(in: "synthea-r4", suffix: ".json").prefix(6)
        let store = try makeStore()
        let report = try importFiles(files.map(\.path), into: store)
        XCTAssertEqual(report.failures.count, 0, describe(report.failures))
        let served = try servedTasks(store)
        XCTAssertGreaterThan(served.all, 0)
        XCTAssertEqual(served.linked.count, 0)
    }
}
