import CareModel
import DeviceSimulation
import FHIR
import FHIRCore
import Foundation
import Mapping
import Pipeline
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// A device that pulled a log task in the daily shape (one event every day, Docs/log-task-start.md) and
/// pulls again after the store's next import gave the log its reading-day version
/// (Docs/measurement-history.md): it holds the new version after the old one, one chain, one tip, and
/// the old version keeps the outcome it had.
final class LogHistoryDeviceTests: XCTestCase {
    private let logID = "Patient/pat-1#log-http---loinc.org-29463-7"

    /// The weight log of pat-1 as a build before the reading-day shape stored it: daily from day 0, with
    /// a reading on day 1.
    private func storeDailyLog(in store: any Store) throws -> CareTask {
        let utc = AppServerFixture.utc
        let schedule = try Schedule(composing: [ScheduleElement(
            start: AppServerFixture.day0, end: nil, interval: DateComponents(day: 1), duration: .allDay, timeZone: utc)])
        var log = CareTask(id: logID, title: "Body weight", impactsAdherence: false, schedule: schedule,
                           metadata: EntityMetadata(effectiveDate: AppServerFixture.day0, timezone: utc))
        log.metadata.linkage.patientID = "Patient/pat-1"
        log.metadata.linkage.codes = ["http://loinc.org|29463-7"]
        log.metadata.tags = [CareTask.observationLogTag]
        var batch = StoreBatch()
        batch.upsert(log)
        _ = try store.apply(batch)
        let stored = try XCTUnwrap(store.tasks(EntityQuery(ids: [logID])).first)
        var reading = StoreBatch()
        reading.upsert(Outcome(taskUUID: stored.uuid, taskID: logID, taskOccurrenceIndex: 1, values: [OutcomeValue(.double(70), units: "kg")],
                               metadata: EntityMetadata(effectiveDate: AppServerFixture.day0.addingTimeInterval(86_400), timezone: utc)))
        _ = try store.apply(reading)
        return stored
    }

    func testADeviceThatPulledTheDailyLogConvergesOnItsReadingDayVersion() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let store = fixture.store
            let daily = try storeDailyLog(in: store)
            let headers = fixture.bearer(try fixture.token())
            let folder = try makeScratchFolder("log-history-device")
            _ = try folder.writeFile("w.json", #"{"resourceType":"Observation","id":"w9","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"29463-7"}]},"subject":{"reference":"Patient/pat-1"},"effectiveDateTime":"2025-03-09T09:00:00Z","valueQuantity":{"value":72,"unit":"kg","system":"http://unitsofmeasure.org","code":"kg"}}"#)
            let logID = self.logID
            try await fixture.test { client in
                let transport = SyncTransport(client: client, headers: headers)
                let device = SimulatedDevice(name: "A", start: AppServerFixture.day0)
                try await device.synchronize(transport)
                XCTAssertEqual(device.tasks().filter { $0.id == logID }.map(\.uuid), [daily.uuid], "the daily log, as pulled before")

                let gateway = Gateway(store: store, mappings: try MappingSet.defaults(overriddenBy: nil), options: Gateway.Options(timeZone: AppServerFixture.utc))
                let report = try gateway.importer { _ in }.run(FHIRInput.sources(for: [folder.path]))
                XCTAssertEqual(report.failures.map(\.message), [])
                try await device.synchronize(transport)

                let onDevice = device.versions.values.compactMap { version -> CareTask? in
                    if case .task(let task) = version.entity, task.id == logID { task } else { nil }
                }
                XCTAssertEqual(onDevice.count, 2, "the old version and the new one, not a second copy")
                let tips = device.tasks().filter { $0.id == logID }
                XCTAssertEqual(tips.count, 1, "one tip")
                let tip = try XCTUnwrap(tips.first)
                XCTAssertEqual(tip.metadata.previousVersionUUIDs, [daily.uuid])
                XCTAssertEqual(tip.uuid, try XCTUnwrap(store.tasks(EntityQuery(ids: [logID])).first).uuid)
                XCTAssertTrue(tip.schedule.elements.allSatisfy { $0.end != nil }, "reading days")
                XCTAssertEqual(tip.schedule.elements.map(\.start), [AppServerFixture.day0.addingTimeInterval(8 * 86_400)])
                let outcomes = device.versions.values.compactMap { version -> Outcome? in if case .outcome(let outcome) = version.entity { outcome } else { nil } }
                XCTAssertTrue(outcomes.contains { $0.taskUUID == daily.uuid && $0.taskOccurrenceIndex == 1 }, "the old reading keeps its version and index")
                XCTAssertTrue(outcomes.contains { $0.taskUUID == tip.uuid && $0.taskOccurrenceIndex == 0 }, "the new one is the new version's first day")
            }
        }
    }
}
