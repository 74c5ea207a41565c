import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import XCTest

/// A log stored in the daily shape (here one starting on 1900-01-01, issue 29): the next import gives it one
/// version in the reading-day shape (Docs/measurement-history.md) taking effect the day after its last
/// reading, holding the import's reading days from then on; the readings it has keep their version and
/// index (and the Observation ids export wrote), old days' values go back on the 1900 version, new ones on
/// the new one, numbered among its reading days.
final class StoredLogUpgradeTests: XCTestCase {
    private let chicago = TimeZone(identifier: "America/Chicago")!
    private let weightLog = "Patient/p#log-http---loinc.org-29463-7"
    private var options: MappingOptions { MappingOptions(timeZone: chicago) }

    private func observation(_ id: String, at time: String, value: String) -> String {
        #"{"resourceType":"Observation","id":"\#(id)","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"29463-7"}]},"subject":{"reference":"Patient/p"},"effectiveDateTime":"\#(time)","valueQuantity":{"value":\#(value),"unit":"kg","system":"http://unitsofmeasure.org","code":"kg"}}"#
    }

    /// The start of `day` (yyyy-mm-dd) in Chicago.
    private func chicagoDay(_ day: String) throws -> Date {
        try XCTUnwrap(FHIRDateText.date(day, in: chicago))
    }

    private func dayNumber(_ day: String) throws -> Int {
        try XCTUnwrap(options.dayNumber(of: chicagoDay(day)))
    }

    /// Patient p and its weight log as a build before issue 29 stored it: starting on 1900-01-01,
    /// written directly (an import makes logs that start later).
    private func storeWithA1900Log() throws -> (store: SQLiteStore, folder: URL, log: CareTask) {
        let store = try makeStore()
        let folder = try makeScratchFolder("log-upgrade")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        let patient = try importFiles([folder.path], into: store, zone: chicago.identifier)
        XCTAssertEqual(patient.failures, [], describe(patient.failures))
        return (store, folder, try write1900Log(weightLog, patientID: "Patient/p", code: "http://loinc.org|29463-7", zone: chicago, into: store))
    }

    /// Records a weight on `day` as the app does (no provenance: queued for export), on `log`'s
    /// occurrence of that day.
    private func record(_ kilograms: Double, on day: String, log: CareTask, in store: any Store) throws {
        let occurrence = try dayNumber(day) - XCTUnwrap(options.dayNumber(of: XCTUnwrap(log.schedule.elements.first).start))
        var metadata = EntityMetadata(effectiveDate: try XCTUnwrap(log.schedule.eventStart(occurrence: occurrence)), timezone: chicago)
        metadata.source = "HeartApp"
        var batch = StoreBatch()
        batch.upsert(Outcome(taskUUID: log.uuid, taskID: log.id, taskOccurrenceIndex: occurrence,
                             values: [OutcomeValue(.double(kilograms), units: "kg")], metadata: metadata))
        _ = try store.apply(batch)
    }

    /// The store's outcomes: Observation (or, for the app's, the Observation id export gives it) -> task
    /// version, occurrence and values.
    private func outcomes(in store: any Store) throws -> [String: String] {
        var byObservation: [String: String] = [:]
        for outcome in try store.outcomes(.current) {
            let key = outcome.metadata.provenance?.fhirID ?? OutcomeExporter.observationID(of: outcome.id)
            byObservation[key] = "\(outcome.taskUUID) #\(outcome.taskOccurrenceIndex) " + outcome.values.map { Self.number($0.value) }.joined(separator: ",")
        }
        return byObservation
    }

    /// A number value as a Double's text (70 and 70.0 alike: "70.0").
    private static func number(_ value: OutcomeValue.Value) -> String {
        switch value {
        case .double(let number): return "\(number)"
        case .integer(let number): return "\(Double(number))"
        default: return "\(value)"
        }
    }

    private func versions(in store: any Store) throws -> [CareTask] {
        try store.history(.task, id: weightLog).compactMap { if case .task(let task) = $0 { task } else { nil } }
    }

    /// A 1900 log with two readings the app recorded (2025-03-02 and 03-04) and exported, then an import of
    /// a weight on an old day (03-03) and one on a new day (03-09).
    private func upgradedStore() throws -> (store: SQLiteStore, folder: URL, exportBundle: String, exported: Set<String>, report: ImportReport) {
        let (store, folder, log) = try storeWithA1900Log()
        try record(70, on: "2025-03-02", log: log, in: store)
        try record(71, on: "2025-03-04", log: log, in: store)
        let exportFolder = try makeScratchFolder("log-upgrade-export")
        let export = try Gateway(store: store, options: Gateway.Options(timeZone: chicago)).export(to: .folder(exportFolder.path))
        XCTAssertEqual(export.observations, 2)
        let bundle = try FHIRJSON.read(try Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(export.path))))
        let exported = Set(bundle.children(named: "entry").compactMap { $0.child(named: "resource") }
            .filter { $0.resourceType == "Observation" }.compactMap { $0.childValue("id") })
        XCTAssertEqual(exported.count, 2)
        XCTAssertEqual(Set(try outcomes(in: store).keys), exported)

        try folder.writeFile("w.ndjson", [
            observation("w3", at: "2025-03-03T09:00:00-06:00", value: "70.5"),
            observation("w9", at: "2025-03-09T09:00:00-05:00", value: "72"),
        ].joined(separator: "\n"))
        let report = try importFiles([folder.path], into: store, zone: chicago.identifier)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        return (store, folder, try XCTUnwrap(export.path), exported, report)
    }

    func testA1900LogGetsOneVersionOfItsNewReadingDaysFromTheDayAfterItsLastReadingAndKeepsItsOutcomes() throws {
        let (store, _, _, exported, report) = try upgradedStore()
        let versions = try versions(in: store)
        XCTAssertEqual(versions.count, 2, "exactly one new version")
        let (old, new) = (versions[0], versions[1])
        XCTAssertEqual(old.schedule.elements.first?.start, options.epoch)
        XCTAssertEqual(new.schedule.elements.map(\.start), [try chicagoDay("2025-03-09")], "the new reading days")
        XCTAssertEqual(new.metadata.effectiveDate, try chicagoDay("2025-03-05"), "the day after the last reading")
        XCTAssertEqual(new.metadata.previousVersionUUIDs, [old.uuid])
        XCTAssertNotEqual(new.uuid, old.uuid)
        XCTAssertEqual(new.title, old.title)
        let pulled = try store.revisions(patientID: "Patient/p", afterClock: 0, maxEntities: .max) { _ in true }
            .revisions.flatMap(\.entities).map(\.metadata.uuid)
        XCTAssertTrue(pulled.contains(new.uuid), "in the patient's revision log: devices pull it")
        XCTAssertEqual(report.byType["Observation"]?.created, 2)

        let stored = try outcomes(in: store)
        XCTAssertEqual(stored.count, 4)
        for id in exported {
            XCTAssertTrue(stored[id]?.hasPrefix("\(old.uuid) #") == true, "exported Observation \(id) is still an outcome of the 1900 version")
        }
        XCTAssertEqual(stored["w3"], "\(old.uuid) #\(try dayNumber("2025-03-03")) 70.5", "an old day goes on the 1900 version, its index from 1900")
        XCTAssertEqual(stored["w9"], "\(new.uuid) #0 72.0", "a new day goes on the new version, its index among its reading days")
    }

    func testTheCareKitDumpHoldsTheOldVersionItsReadingsNameBeforeTheCurrentOne() throws {
        let (store, _, _, _, _) = try upgradedStore()
        let (old, new) = try { let v = try versions(in: store); return (v[0], v[1]) }()
        var text = Data()
        try StoreDumper(store: store, format: .carekitJSON, patientID: "Patient/p", taskPatient: CareKitConversion.taskPatient).dump { text.append($0) }
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: text) as? [String: Any])
        let tasks = try XCTUnwrap(object["tasks"] as? [[String: Any]])
        let taskUUIDs = tasks.compactMap { $0["uuid"] as? String }
        let logVersions = taskUUIDs.filter { [old.uuid.uuidString, new.uuid.uuidString].contains($0) }
        XCTAssertEqual(logVersions, [old.uuid.uuidString, new.uuid.uuidString], "both versions of the log, the old one first")
        let outcomes = try XCTUnwrap(object["outcomes"] as? [[String: Any]])
        XCTAssertEqual(outcomes.count, 4)
        for outcome in outcomes {
            XCTAssertTrue(taskUUIDs.contains(outcome["taskUUID"] as? String ?? ""), "every outcome's task version is in the object, as a CareKit store needs")
        }
    }

    func testTheSameInputAndTheExportedObservationsAgainChangeNothing() throws {
        let (store, folder, exportBundle, _, _) = try upgradedStore()
        let before = try outcomes(in: store)
        let again = try importFiles([folder.path, exportBundle], into: store, zone: chicago.identifier)
        XCTAssertEqual(again.failures, [], describe(again.failures))
        XCTAssertEqual(again.byType["Observation"]?.unchanged, 4)
        XCTAssertEqual(again.byType["Observation"]?.created ?? 0, 0)
        XCTAssertEqual(again.byType["Observation"]?.updated ?? 0, 0)
        XCTAssertEqual(again.entitiesAdded + again.entitiesUpdated + again.entitiesDeleted, 0)
        XCTAssertEqual(try outcomes(in: store), before)
        XCTAssertEqual(try versions(in: store).count, 2, "a log moved once is not moved again")
    }

    func testANewReadingAfterTheUpgradeGoesOnAThirdVersionWithASmallIndex() throws {
        let (store, _, _, _, _) = try upgradedStore()
        let later = try makeScratchFolder("log-upgrade-later")
        try later.writeFile("w12.json", observation("w12", at: "2025-03-12T08:00:00-05:00", value: "73"))
        let report = try importFiles([later.path], into: store, zone: chicago.identifier)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let versions = try versions(in: store)
        XCTAssertEqual(versions.count, 3, "the reading-day version's days are fixed: a later day is a new version")
        XCTAssertEqual(versions[2].metadata.effectiveDate, try chicagoDay("2025-03-12"), "its first new day")
        XCTAssertEqual(versions[2].schedule.elements.map(\.start), [try chicagoDay("2025-03-12")])
        XCTAssertEqual(try outcomes(in: store)["w12"], "\(versions[2].uuid) #0 73.0")
    }

    func testEventsOfAnOldAndANewDayAgreeWithTheSource() throws {
        let (store, _, _, _, _) = try upgradedStore()
        let versions = try versions(in: store)
        func readings(_ day: String) throws -> [String] {
            let start = try chicagoDay(day)
            return try store.events(patientID: "Patient/p", in: DateInterval(start: start, duration: 86_400))
                .filter { $0.task.id == weightLog }
                .map { event in
                    let version = event.task.uuid == versions[0].uuid ? "1900" : event.task.uuid == versions[1].uuid ? "new" : "?"
                    return "\(version) #\(event.scheduleEvent.occurrence) " + (event.outcome?.values.map { Self.number($0.value) }.joined(separator: ",") ?? "-")
                }
        }
        XCTAssertEqual(try readings("2025-03-02"), ["1900 #\(try dayNumber("2025-03-02")) 70.0"], "recorded by the app")
        XCTAssertEqual(try readings("2025-03-03"), ["1900 #\(try dayNumber("2025-03-03")) 70.5"], "Observation w3")
        XCTAssertEqual(try readings("2025-03-04"), ["1900 #\(try dayNumber("2025-03-04")) 71.0"], "recorded by the app")
        XCTAssertEqual(try readings("2025-03-06"), [], "no reading")
        XCTAssertEqual(try readings("2025-03-05"), [], "the new version's: no reading")
        XCTAssertEqual(try readings("2025-03-09"), ["new #0 72.0"], "Observation w9")
        XCTAssertEqual(try readings("2025-03-10"), [], "no reading")
    }

    func testALogWithNoReadingGetsAVersionFromItsFirstImportedDay() throws {
        let (store, folder, _) = try storeWithA1900Log()
        try folder.writeFile("w.ndjson", observation("w1", at: "2025-03-02T09:00:00-06:00", value: "70"))
        let report = try importFiles([folder.path], into: store, zone: chicago.identifier)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let versions = try versions(in: store)
        XCTAssertEqual(versions.count, 2)
        XCTAssertEqual(versions[1].metadata.effectiveDate, try chicagoDay("2025-03-02"))
        XCTAssertEqual(versions[1].schedule.elements.map(\.start), [try chicagoDay("2025-03-02")])
        XCTAssertEqual(try outcomes(in: store)["w1"], "\(versions[1].uuid) #0 70.0")
    }

    func testALogWithNoReadingInTheImportGetsAVersionWithNoEventFromTheImportsDay() throws {
        // The import brings a heart rate only: the weight log moves all the same, with no day of its own.
        let (store, folder, _) = try storeWithA1900Log()
        try folder.writeFile("h.json", #"{"resourceType":"Observation","id":"h1","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"8867-4"}]},"subject":{"reference":"Patient/p"},"effectiveDateTime":"2025-03-02T09:00:00-06:00","valueQuantity":{"value":60,"unit":"/min","system":"http://unitsofmeasure.org","code":"/min"}}"#)
        let dayBefore = try XCTUnwrap(options.dayNumber(of: Date()))
        let report = try importFiles([folder.path], into: store, zone: chicago.identifier)
        let dayAfter = try XCTUnwrap(options.dayNumber(of: Date()))
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let versions = try versions(in: store)
        XCTAssertEqual(versions.count, 2)
        let new = versions[1]
        let effective = new.metadata.effectiveDate
        XCTAssertTrue([dayBefore, dayAfter].compactMap(options.startOfDay(number:)).contains(effective), "\(effective): the import's day")
        XCTAssertEqual(new.schedule.elements.count, 1)
        XCTAssertLessThan(try XCTUnwrap(new.schedule.elements.first?.start), effective, "its one element is before it takes effect")
        let events = try store.events(patientID: "Patient/p", in: DateInterval(start: effective, duration: 3 * 86_400)).filter { $0.task.id == weightLog }
        XCTAssertEqual(events.count, 0, "no empty weight task")
    }

    func testADryRunMovesNothing() throws {
        let (store, folder, _) = try storeWithA1900Log()
        try folder.writeFile("w.ndjson", observation("w1", at: "2025-03-02T09:00:00-06:00", value: "70"))
        let gateway = Gateway(store: store, mappings: try MappingSet.defaults(overriddenBy: nil), options: Gateway.Options(timeZone: chicago))
        let report = try gateway.importer { $0.dryRun = true }.run(FHIRInput.sources(for: [folder.path]))
        XCTAssertEqual(report.failures, [], describe(report.failures))
        XCTAssertEqual(try versions(in: store).count, 1)
    }
}

extension XCTestCase {
    /// Writes log `id` of patient `patientID` for `code` (`system|code`) as a build before issue 29 stored
    /// it, starting on 1900-01-01 in `zone` (an import makes logs that start later), and returns it as stored.
    @discardableResult
    func write1900Log(_ id: String, patientID: String, code: String, zone: TimeZone, into store: any Store) throws -> CareTask {
        let epoch = MappingOptions(timeZone: zone).epoch
        let schedule = try Schedule(composing: [ScheduleElement(start: epoch, end: nil, interval: DateComponents(day: 1), duration: .allDay, timeZone: zone)])
        var log = CareTask(id: id, title: "Body weight", impactsAdherence: false, schedule: schedule, metadata: EntityMetadata(effectiveDate: epoch, timezone: zone))
        log.metadata.linkage.patientID = patientID
        log.metadata.linkage.codes = [code]
        log.metadata.tags = [CareTask.observationLogTag]
        var batch = StoreBatch()
        batch.upsert(log)
        _ = try store.apply(batch)
        return try XCTUnwrap(store.tasks(EntityQuery(ids: [id])).first)
    }
}
