@testable import AppServer
import CareModel
@preconcurrency import Crypto
import DeviceSimulation
import FHIR
import Foundation
import Hummingbird
import HummingbirdTesting
import Mapping
import Pipeline
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// A task a device pulled as a plain `task` cannot become a version of a `healthKitTask` (CareKit links
/// versions within one entity type): when the mapping starts linking it, the import tombstones the plain
/// task and starts a HealthKit task chain under a new id, and a device that pulls before and after ends
/// with the plain task deleted and the linked ones live. A device's own healthKitTask is refused.
final class HealthKitTaskUpgradeTests: XCTestCase {
    private static let planTask = "CarePlan/cp-1#activity-85354-9"

    private static func importProvider(into store: any Store, mappings: String?) throws {
        let gateway = Gateway(
            store: store, mappings: try MappingSet.defaults(overriddenBy: mappings),
            options: Gateway.Options(timeZone: TimeZone(identifier: "America/Chicago")!))
        let report = try gateway.importFHIR(FHIRInput.sources(for: [Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path]))
        XCTAssertEqual(report.failures.map(\.message), [])
    }

    func testAPulledPlainTaskIsTombstonedAndTheLinkedChainsServed() async throws {
        try await forEachStore { tested in
            // First with a table that does not know blood pressure: the activity is a plain task.
            let folder = try makeScratchFolder("no-bp-table")
            try folder.writeFile("healthkit.yaml", """
                healthkit: 1
                types:
                  - identifier: HKQuantityTypeIdentifierHeartRate
                    quantityType: discrete
                    unit: count/min
                    ucum: /min
                    category: vital-signs
                    range: {low: 20, high: 300}
                    codes: [8867-4]
                """)
            let store = tested.store
            try Self.importProvider(into: store, mappings: folder.path)
            let key = ServerKey(privateKey: P256.Signing.PrivateKey())
            let server = AppServer(store: store, key: key, issuer: nil)
            let token = try PatientToken.issue(patientID: "Patient/pat-1", key: key, audience: PatientToken.defaultAudience, lifetime: 3600, now: Date())
            let headers: HTTPFields = [.authorization: "Bearer \(token)"]
            let mirroredPull = Collected()
            let planTask = Self.planTask
            try await Application(router: server.router()).test(.router) { client in
                let transport = SyncTransport(client: client, headers: headers)
                let device = SimulatedDevice(name: "A", start: Date(timeIntervalSince1970: 1_740_787_200))
                try await device.synchronize(transport)
                XCTAssertTrue(device.tasks().contains { $0.id == planTask && !$0.isHealthKitTask && $0.metadata.deletedDate == nil })

                // Then with the default table: blood pressure links, one task per component.
                try Self.importProvider(into: store, mappings: nil)
                try await device.synchronize(transport)
                let live = device.tasks().filter { $0.metadata.deletedDate == nil }
                XCTAssertFalse(live.contains { $0.id == planTask }, "the plain task is tombstoned on the device")
                XCTAssertTrue(device.tasks().contains { $0.id == planTask && $0.metadata.deletedDate != nil })
                XCTAssertEqual(
                    live.filter(\.isHealthKitTask).map(\.id).sorted(),
                    [planTask + ".healthkit-BloodPressureDiastolic", planTask + ".healthkit-BloodPressureSystolic"])
                for task in live where task.isHealthKitTask {
                    XCTAssertEqual(task.healthKitLinkage?.unitString, "mmHg")
                }
                let response = try await client.execute(uri: try SyncTransport.pullURI(KnowledgeVector()), method: .get, headers: headers, body: nil)
                XCTAssertEqual(response.status, .ok)
                XCTAssertNil(response.headers[HTTPFields.Element.Name("Link")!], "one page")
                mirroredPull.data = Data(response.text.utf8)
            }

            // A new device's pull, decoded with CareKit 4.0's types: the tombstone is an OCKTask, the linked ones OCKHealthKitTasks.
            let mirrored = try JSONDecoder().decode([CareKit4RevisionRecordMirror].self, from: mirroredPull.data)
            var plain: [String: Date?] = [:], linked: [String: String] = [:]
            for entity in mirrored.flatMap(\.entities) {
                switch entity {
                case .task(let task): plain[task.own.id] = task.versioned.deletedDate
                case .healthKitTask(let task): linked[task.own.id] = task.own.healthKitLinkage.quantityIdentifier
                default: break
                }
            }
            XCTAssertNotNil(plain[Self.planTask] ?? nil, "served as its tombstone")
            XCTAssertEqual(linked, [
                Self.planTask + ".healthkit-BloodPressureSystolic": "HKQuantityTypeIdentifierBloodPressureSystolic",
                Self.planTask + ".healthkit-BloodPressureDiastolic": "HKQuantityTypeIdentifierBloodPressureDiastolic",
            ])

            // The same import again changes nothing.
            let before = try store.serverClock().clock
            try Self.importProvider(into: store, mappings: nil)
            XCTAssertEqual(try store.serverClock().clock, before)
        }
    }

    /// CareKit's sync pushes the healthKitTasks a device made (OCKStore's supportedTypes): the push decodes
    /// and is refused with the reason, as any task a device pushes.
    func testADevicesOwnHealthKitTaskIsRefusedWithItsReason() async throws {
        try await forEachStore { tested in
            let store = tested.store
            try Self.importProvider(into: store, mappings: nil)
            let key = ServerKey(privateKey: P256.Signing.PrivateKey())
            let server = AppServer(store: store, key: key, issuer: nil)
            let token = try PatientToken.issue(patientID: "Patient/pat-1", key: key, audience: PatientToken.defaultAudience, lifetime: 3600, now: Date())
            let headers: HTTPFields = [.authorization: "Bearer \(token)"]
            try await Application(router: server.router()).test(.router) { client in
                let records = try await SyncTransport(client: client, headers: headers).pull(KnowledgeVector())
                let knowledge = try XCTUnwrap(records.last?.knowledgeVector)
                let schedule = try Schedule.dailyAtTime(hour: 7, minutes: 0, start: Date(timeIntervalSince1970: 1_740_787_200), end: nil, text: nil, timeZone: .gmt)
                let own = CareTask(
                    id: "my-steps", title: "Steps", schedule: schedule,
                    healthKitLinkage: HealthKitLinkage(quantityIdentifier: "HKQuantityTypeIdentifierStepCount", quantityType: .cumulative, unitString: "count"),
                    metadata: EntityMetadata(effectiveDate: Date(timeIntervalSince1970: 1_740_787_200), timezone: .gmt))
                var deviceKnowledge = knowledge
                deviceKnowledge.processes[UUID()] = 2
                let body = try SyncTransport.pushBody([CareKitRevisionRecord(entities: [CareKitEntity(.task(own))], knowledgeVector: deviceKnowledge)], deviceKnowledge)
                XCTAssertTrue(String(decoding: body, as: UTF8.self).contains("\"healthKitTask\""))
                let response = try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: headers, body: ByteBuffer(bytes: body))
                XCTAssertEqual(response.status, .unprocessableContent)
                XCTAssertTrue(response.text.contains("a healthKitTask; a device may push outcomes only"), response.text)
            }
        }
    }
}

private final class Collected: @unchecked Sendable {
    var data = Data()
}
