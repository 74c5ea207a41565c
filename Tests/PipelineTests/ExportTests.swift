import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// Write-back: the store's change feed, each value type as its Observation value, refusals as dead
/// letters, exporting twice, and the round trip back through import.
final class ExportTests: XCTestCase {
    private var fixtures: String { Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path }
    private let zone = TimeZone(identifier: "America/Chicago")!

    private func importedStore() throws -> SQLiteStore {
        let store = try makeStore()
        let report = try importFiles([fixtures], into: store, zone: "America/Chicago")
        XCTAssertEqual(report.failures, [], describe(report.failures))
        return store
    }

    private func task(_ id: String, in store: any Store) throws -> CareTask {
        try XCTUnwrap(try store.tasks(EntityQuery(ids: [id])).first, "no task \(id)")
    }

    /// Records `values` as the app would: an outcome with no provenance.
    @discardableResult
    private func record(_ values: [OutcomeValue], task id: String, occurrence: Int, in store: any Store, source: String? = "HeartApp") throws -> BatchSummary {
        let task = try task(id, in: store)
        var metadata = EntityMetadata(effectiveDate: task.schedule.eventStart(occurrence: occurrence) ?? Date(), timezone: zone)
        metadata.source = source
        var batch = StoreBatch()
        batch.upsert(Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: occurrence, values: values, metadata: metadata))
        return try store.apply(batch)
    }

    /// Exports through the gateway, with the default mappings or a set holding only `mapping` for the export.
    private func export(_ store: any Store, mapping: ExportMapping? = nil, to folder: URL) throws -> (ExportReport, [Element]) {
        let report = try Gateway(store: store, mappings: mapping.map { MappingSet([], export: $0) }).export(to: .folder(folder.path))
        guard let path = report.path else { return (report, []) }
        let bundle = try FHIRJSON.read(try Data(contentsOf: URL(fileURLWithPath: path)))
        let resources = bundle.children(named: "entry").compactMap { $0.child(named: "resource") }
        return (report, resources)
    }

    func testOnlyWhatThePatientRecordedIsQueuedInTheSameTransaction() throws {
        let store = try importedStore()
        XCTAssertEqual(try store.outboxEntries(in: .pending), [], "outcomes made from the provider's Observations are not sent back")
        let summary = try record([OutcomeValue(.boolean(true))], task: "CarePlan/cp-1#activity-Walk-for-30-minutes", occurrence: 1, in: store)
        XCTAssertEqual(summary.outboxEntryIDs.count, 1)
        let entry = try XCTUnwrap(try store.outboxEntries(in: .pending).first)
        XCTAssertEqual(entry.entityKind, .outcome)
        XCTAssertEqual(entry.entityUUID, summary.versionUUIDs.first)
        // The same content again makes no version and no entry; a change makes both; a deletion too.
        XCTAssertEqual(try record([OutcomeValue(.boolean(true))], task: "CarePlan/cp-1#activity-Walk-for-30-minutes", occurrence: 1, in: store).outboxEntryIDs, [])
        XCTAssertEqual(try record([OutcomeValue(.boolean(false))], task: "CarePlan/cp-1#activity-Walk-for-30-minutes", occurrence: 1, in: store).outboxEntryIDs.count, 1)
        var deletion = StoreBatch()
        deletion.delete(.outcome, id: entry.entityID)
        XCTAssertEqual(try store.apply(deletion).outboxEntryIDs.count, 1)
        XCTAssertEqual(try store.outboxEntries(in: .pending).count, 3)
    }

    /// A receiver that never answers (the connection drops after the server may have stored it).
    private struct SilentReceiver: ExportReceiver {
        struct NoAnswer: Error, CustomStringConvertible { var description: String { "no answer" } }
        func receive(bundle: Data, entryCounts: [Int]) throws -> [ExportReceipt] { throw NoAnswer() }
    }

    /// Issue 27: a push whose answer was lost counts as an attempt (it was sent), and the entry waits
    /// for its retry time, so that the next run can say what waits instead of "0 to send again".
    func testAPushWithNoAnswerCountsAsAnAttemptAndWaitsForItsRetry() throws {
        let store = try importedStore()
        try record([OutcomeValue(.boolean(true))], task: "CarePlan/cp-1#activity-Walk-for-30-minutes", occurrence: 1, in: store)
        let now = Date()
        let report = try Gateway(store: store).push(to: SilentReceiver(), now: now)
        XCTAssertEqual(report.unanswered.count, 1)
        let failed = try XCTUnwrap(try store.outboxEntries(in: .failed, limit: 10).first)
        XCTAssertEqual(failed.attempts, 1, "the Bundle was sent")
        XCTAssertEqual(try XCTUnwrap(failed.nextAttemptDate).timeIntervalSince(now), 60, accuracy: 1)
        XCTAssertEqual(try store.dueOutboxEntries(at: now, limit: 10), [], "nothing is due before its retry time")
    }

    func testEachValueTypeBecomesItsObservationValueAndValidates() throws {
        let store = try importedStore()
        let recorded = Date(timeIntervalSince1970: 1_793_000_000)
        let bp = "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic"
        let cases: [(OutcomeValue, String, (Element) -> Void)] = [
            (OutcomeValue(.integer(7)), "valueInteger", { XCTAssertEqual($0.value, "7") }),
            (OutcomeValue(.double(72.5), units: "kg"), "valueQuantity", {
                XCTAssertEqual($0.childValue("value"), "72.5")
                XCTAssertEqual($0.childValue("system"), "http://unitsofmeasure.org")
                XCTAssertEqual($0.childValue("code"), "kg")
            }),
            (OutcomeValue(.integer(64), units: "beats/min"), "valueQuantity", {
                XCTAssertEqual($0.childValue("code"), "/min", "the mapping's table gives the UCUM code")
                XCTAssertEqual($0.childValue("unit"), "beats/min")
            }),
            (OutcomeValue(.double(3), units: "glasses"), "valueQuantity", {
                XCTAssertEqual($0.childValue("unit"), "glasses")
                XCTAssertNil($0.childValue("system"), "a unit that is not UCUM is text only")
            }),
            (OutcomeValue(.boolean(false)), "valueBoolean", { XCTAssertEqual($0.value, "false") }),
            (OutcomeValue(.text("felt dizzy")), "valueString", { XCTAssertEqual($0.value, "felt dizzy") }),
            (OutcomeValue(.text("Yes"), units: "http://loinc.org|LA33-6"), "valueCodeableConcept", {
                XCTAssertEqual($0.child(named: "coding")?.childValue("code"), "LA33-6")
                XCTAssertEqual($0.childValue("text"), "Yes")
            }),
            (OutcomeValue(.date(recorded), timezone: zone), "valueDateTime", { XCTAssertEqual($0.value.map { FHIRDateText.date($0, in: self.zone) }, recorded) }),
        ]
        for (occurrence, (value, _, _)) in cases.enumerated() {
            try record([value], task: bp, occurrence: occurrence + 10, in: store)
        }
        let folder = try makeScratchFolder("export")
        let (report, resources) = try export(store, to: folder)
        XCTAssertEqual(report.refused.count, 0, "\(report.refused)")
        XCTAssertGreaterThan(report.seconds, 0, "the report says how long it took")
        let observations = resources.filter { $0.resourceType == "Observation" }
        XCTAssertEqual(observations.count, cases.count)
        XCTAssertEqual(resources.filter { $0.resourceType == "Provenance" }.count, cases.count, "a Provenance per Observation")
        let validator = StructureValidator(options: ValidationOptions(strict: true))
        for resource in resources {
            XCTAssertEqual(validator.validate(resource).errors.map(\.diagnostics), [], "\(String(decoding: FHIRJSON.write(resource), as: UTF8.self))")
        }
        for (occurrence, (_, name, check)) in cases.enumerated() {
            let id = OutcomeExporter.observationID(of: Outcome.id(taskUUID: try task(bp, in: store).uuid, occurrence: occurrence + 10))
            let observation = try XCTUnwrap(observations.first { $0.childValue("id") == id })
            XCTAssertEqual(observation.childValue("status"), "final")
            XCTAssertEqual(observation.child(named: "subject")?.childValue("reference"), "Patient/pat-1")
            XCTAssertEqual(observation.child(named: "basedOn")?.childValue("reference"), "CarePlan/cp-1")
            XCTAssertEqual(observation.child(named: "code")?.child(named: "coding")?.childValue("code"), "85354-9", "the task's code kept at import")
            XCTAssertNotNil(observation.child(named: "effectiveDateTime") ?? observation.child(named: "effectivePeriod"))
            check(try XCTUnwrap(observation.child(named: name), "\(name) in \(id)"))
        }
        // Exporting again writes nothing.
        let (again, none) = try export(store, to: folder)
        XCTAssertEqual(again.observations, 0)
        XCTAssertEqual(none.count, 0)
        XCTAssertEqual(try store.outboxEntries(in: .sent).count, cases.count)
    }

    func testSeveralValuesAreComponentsAndADeletionIsEnteredInError() throws {
        let store = try importedStore()
        let bp = "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic"
        try record([
            OutcomeValue(.integer(128), units: "mm[Hg]", kind: "http://loinc.org|8480-6", index: 0),
            OutcomeValue(.integer(82), units: "mm[Hg]", kind: "http://loinc.org|8462-4", index: 1),
        ], task: bp, occurrence: 3, in: store)
        let folder = try makeScratchFolder("export")
        let observation = try XCTUnwrap(try export(store, to: folder).1.first)
        let components = observation.children(named: "component")
        XCTAssertEqual(components.map { $0.child(named: "code")?.child(named: "coding")?.childValue("code") }, ["8480-6", "8462-4"])
        XCTAssertEqual(components.map { $0.child(named: "valueQuantity")?.childValue("value") }, ["128", "82"])
        XCTAssertNil(observation.child(named: "valueQuantity"))

        var deletion = StoreBatch()
        deletion.delete(.outcome, id: Outcome.id(taskUUID: try task(bp, in: store).uuid, occurrence: 3))
        try store.apply(deletion)
        let deleted = try XCTUnwrap(try export(store, to: folder).1.first)
        XCTAssertEqual(deleted.childValue("status"), "entered-in-error")
        XCTAssertEqual(deleted.childValue("id"), observation.childValue("id"), "the same outcome is the same Observation")
    }

    func testValuesWithNoFHIRFormGoToDeadLettersAndTheRestExports() throws {
        let store = try importedStore()
        let bp = "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic"
        try record([OutcomeValue(.binary(Data([1, 2, 3])))], task: bp, occurrence: 1, in: store)
        try record([OutcomeValue(.double(2), units: "scoops")], task: bp, occurrence: 2, in: store)
        try record([OutcomeValue(.integer(120), units: "mm[Hg]")], task: bp, occurrence: 3, in: store)
        var mapping = try XCTUnwrap(try MappingSet.defaults().export)
        mapping.unknownUnits = .deadLetter
        let folder = try makeScratchFolder("export")
        let (report, resources) = try export(store, mapping: mapping, to: folder)
        XCTAssertEqual(report.refused.count, 2, "\(report.refused)")
        XCTAssertTrue(report.refused.contains { $0.reason.contains("binary") })
        XCTAssertTrue(report.refused.contains { $0.reason.contains("'scoops'") })
        XCTAssertEqual(resources.filter { $0.resourceType == "Observation" }.count, 1)
        XCTAssertEqual(try store.deadLetters(limit: 10).filter { $0.outboxEntryID != nil }.count, 2)
        XCTAssertEqual(try store.outboxEntries(in: .failed).count, 2)
    }

    func testExportedObservationsImportBackToTheSameOutcomes() throws {
        let store = try importedStore()
        try record([
            OutcomeValue(.integer(128), units: "mm[Hg]", kind: "http://loinc.org|8480-6", index: 0),
            OutcomeValue(.integer(82), units: "mm[Hg]", kind: "http://loinc.org|8462-4", index: 1),
        ], task: "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic", occurrence: 3, in: store)
        try record([OutcomeValue(.boolean(true))], task: "CarePlan/cp-1#activity-Walk-for-30-minutes", occurrence: 1, in: store)
        try record([OutcomeValue(.double(10.5), units: "mg")], task: "MedicationRequest/medreq-1", occurrence: 2, in: store)
        let folder = try makeScratchFolder("export")
        let (report, _) = try export(store, to: folder)
        XCTAssertEqual(report.observations, 3)

        let fresh = try importedStore()
        let back = try importFiles([try XCTUnwrap(report.path)], into: fresh, zone: "America/Chicago")
        XCTAssertEqual(back.failures, [], describe(back.failures))
        func recorded(_ store: any Store) throws -> [String] {
            try store.outcomes(.current).filter { $0.metadata.provenance == nil || $0.metadata.provenance?.fhirID.contains("-") == true && $0.metadata.provenance?.fhirID.count ?? 0 > 36 }
                .map { outcome in "\(outcome.taskID ?? "?") #\(outcome.taskOccurrenceIndex): " + outcome.values.map { "\($0.value) \($0.units ?? "")" }.joined(separator: ", ") }
                .sorted()
        }
        XCTAssertEqual(try recorded(fresh), try recorded(store))
        XCTAssertEqual(try recorded(fresh).count, 3)
    }

    /// XML, with conditional requests: a first version is a conditional create on the derived
    /// identifier, a later one a conditional update, the resources carry no id, the Provenance names its
    /// Observation by its fullUrl; the Bundle validates as a whole.
    func testXMLExportWithConditionalRequestsValidates() throws {
        let store = try importedStore()
        let bp = "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic"
        try record([OutcomeValue(.integer(120), units: "mm[Hg]")], task: bp, occurrence: 20, in: store)
        let folder = try makeScratchFolder("export-xml")
        var options = Gateway.Options()
        options.export.format = .xml
        options.export.request = .conditional
        let exporter = try Gateway(store: store, options: options).exporter()
        let first = try exporter.run(to: .folder(folder.path))
        let bundle = try FHIRXML.read(Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(first.path))))
        XCTAssertEqual(bundle.childValue("type"), "transaction")
        var xml = ValidationOptions(strict: true)
        xml.checkJSONValueKinds = false  // XML has no JSON value kinds
        xml.checkJSONArrayShape = false
        XCTAssertEqual(StructureValidator(options: xml).validate(bundle).errors.map(\.diagnostics), [])
        let entries = bundle.children(named: "entry")
        XCTAssertEqual(entries.count, 2)
        let observationEntry = try XCTUnwrap(entries.first { $0.child(named: "resource")?.resourceType == "Observation" })
        let outcomeID = Outcome.id(taskUUID: try task(bp, in: store).uuid, occurrence: 20)
        XCTAssertEqual(observationEntry.child(named: "request")?.childValue("method"), "POST")
        XCTAssertEqual(observationEntry.child(named: "request")?.childValue("ifNoneExist"), "identifier=urn:caregate:outcome|\(outcomeID)")
        XCTAssertNil(observationEntry.child(named: "resource")?.childValue("id"), "a create carries no id")
        let provenance = try XCTUnwrap(entries.first { $0.child(named: "resource")?.resourceType == "Provenance" })
        XCTAssertEqual(provenance.child(named: "resource")?.child(named: "target")?.childValue("reference"), observationEntry.childValue("fullUrl"))

        try record([OutcomeValue(.integer(124), units: "mm[Hg]")], task: bp, occurrence: 20, in: store)
        let second = try exporter.run(to: .folder(folder.path))
        let amended = try FHIRXML.read(Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(second.path))))
        let request = amended.children(named: "entry").first?.child(named: "request")
        XCTAssertEqual(request?.childValue("method"), "PUT")
        XCTAssertEqual(request?.childValue("url"), "Observation?identifier=urn:caregate:outcome|\(outcomeID)", "a later version is a conditional update")
        XCTAssertEqual(amended.children(named: "entry").first?.child(named: "resource")?.childValue("status"), "amended")
    }

    /// With `activity-status: true`, the outcome that completes a finite activity's task is followed by
    /// a FHIRPath Patch of its CarePlan setting that activity's detail.status to completed; none before.
    func testCompletingAFiniteActivityPatchesItsStatusWhenTheMappingSaysSo() throws {
        let input = try makeScratchFolder("activity-status")
        try Data(#"{"resourceType":"Patient","id":"p-count","name":[{"family":"Count","given":["Cora"]}]}"#.utf8)
            .write(to: input.appendingPathComponent("patient.json"))
        try Data(#"""
            {"resourceType":"CarePlan","id":"cp-count","status":"active","intent":"plan","subject":{"reference":"Patient/p-count"},
             "period":{"start":"2026-11-01"},
             "activity":[{"detail":{"kind":"Task","code":{"coding":[{"system":"http://snomed.info/sct","code":"229065009"}],"text":"Exercises"},
               "status":"scheduled","scheduledTiming":{"repeat":{"count":2,"frequency":1,"period":1,"periodUnit":"d","timeOfDay":["09:00:00"]}}}}]}
            """#.utf8).write(to: input.appendingPathComponent("careplan.json"))
        let store = try makeStore()
        XCTAssertEqual(try importFiles([input.path], into: store, zone: "America/Chicago").failures, [])
        let mappings = try makeScratchFolder("activity-status-mappings")
        let defaults = try String(contentsOf: Corpus.projectRoot.appendingPathComponent("Mappings/ObservationExport.yaml"), encoding: .utf8)
        try Data(defaults.replacingOccurrences(of: "activity-status: false", with: "activity-status: true").utf8)
            .write(to: mappings.appendingPathComponent("ObservationExport.yaml"))
        let mapping = try XCTUnwrap(try MappingSet.defaults(overriddenBy: mappings.path).export)
        XCTAssertTrue(mapping.activityStatus)
        let taskID = "CarePlan/cp-count#activity-229065009"
        XCTAssertEqual(try task(taskID, in: store).metadata.linkage.elementPath, "CarePlan.activity[0]")

        let out = try makeScratchFolder("activity-status-out")
        try record([OutcomeValue(.boolean(true))], task: taskID, occurrence: 0, in: store)
        let (_, firstResources) = try export(store, mapping: mapping, to: out)
        XCTAssertEqual(firstResources.filter { $0.resourceType == "Parameters" }.count, 0, "one of two occurrences done: not completed")

        try record([OutcomeValue(.boolean(true))], task: taskID, occurrence: 1, in: store)
        let (report, resources) = try export(store, mapping: mapping, to: out)
        let bundle = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(report.path))))
        XCTAssertEqual(StructureValidator(options: ValidationOptions(strict: true)).validate(bundle).errors.map(\.diagnostics), [])
        let patchEntry = try XCTUnwrap(bundle.children(named: "entry").first { $0.child(named: "resource")?.resourceType == "Parameters" })
        XCTAssertEqual(patchEntry.child(named: "request")?.childValue("method"), "PATCH")
        XCTAssertEqual(patchEntry.child(named: "request")?.childValue("url"), "CarePlan/cp-count")
        let parts = resources.first { $0.resourceType == "Parameters" }?.child(named: "parameter")?.children(named: "part") ?? []
        XCTAssertEqual(parts.first { $0.childValue("name") == "path" }?.childValue("valueString"), "CarePlan.activity[0].detail.status")
        XCTAssertEqual(parts.first { $0.childValue("name") == "value" }?.childValue("valueCode"), "completed")
    }

    /// Issue 29: `amended` (FHIR: modified after being final) only when the provider has, or may have, an
    /// earlier version. Recorded and edited before any export: one Observation, `final`, still sent as
    /// an update of its id. Exported, edited, exported again: `amended`; also after a push that got no
    /// answer (the server may have stored it).
    func testAnOutcomeIsAmendedOnlyAfterAVersionMayHaveReachedTheProvider() throws {
        let store = try importedStore()
        let walk = "CarePlan/cp-1#activity-Walk-for-30-minutes"
        let folder = try makeScratchFolder("export-status")
        func status(after export: (ExportReport, [Element]), occurrence: Int) throws -> String? {
            let id = OutcomeExporter.observationID(of: Outcome.id(taskUUID: try task(walk, in: store).uuid, occurrence: occurrence))
            let observations = export.1.filter { $0.resourceType == "Observation" }
            XCTAssertEqual(observations.map { $0.childValue("id") }, [id])
            return observations.first?.childValue("status")
        }

        try record([OutcomeValue(.boolean(true))], task: walk, occurrence: 1, in: store)
        try record([OutcomeValue(.boolean(false))], task: walk, occurrence: 1, in: store)
        let first = try export(store, to: folder)
        XCTAssertEqual(first.0.sent, 2, "both versions' entries, as the last version")
        XCTAssertEqual(try status(after: first, occurrence: 1), "final", "the provider never had the first version")

        try record([OutcomeValue(.boolean(true))], task: walk, occurrence: 1, in: store)
        XCTAssertEqual(try status(after: try export(store, to: folder), occurrence: 1), "amended")

        try record([OutcomeValue(.boolean(true))], task: walk, occurrence: 2, in: store)
        XCTAssertEqual(try Gateway(store: store).push(to: SilentReceiver()).unanswered.count, 1)
        try record([OutcomeValue(.boolean(false))], task: walk, occurrence: 2, in: store)
        // The unanswered version is due again with its edit a minute later: the edit goes, amended.
        let retry = try Gateway(store: store).exporter().run(to: .folder(folder.path), now: Date().addingTimeInterval(120))
        let bundle = try FHIRJSON.read(try Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(retry.path))))
        XCTAssertEqual(try status(after: (retry, bundle.children(named: "entry").compactMap { $0.child(named: "resource") }), occurrence: 2), "amended")
    }

    /// An outcome made from the provider's own Observation, then edited on the device: the provider had
    /// a final version, so the edit is `amended`.
    /// An edit on the device of an outcome made from the provider's Observation: the provider keeps its
    /// Observation (a patient's edit never overwrites a clinician's record) and gets the patient's as a
    /// new one, `final` (the provider has no earlier version of it), `derivedFrom` the original, which
    /// the Provenance names as the entity derived from.
    func testAnEditOfAnOutcomeFromTheProviderIsANewObservationDerivedFromIt() throws {
        let store = try importedStore()
        let imported = try XCTUnwrap(try store.outcomes(.current).first { $0.metadata.provenance?.fhirType == "Observation" && !$0.values.isEmpty })
        let original = "Observation/" + (imported.metadata.provenance?.fhirID ?? "")
        var metadata = EntityMetadata(effectiveDate: imported.metadata.effectiveDate, timezone: zone)
        metadata.source = "HeartApp"
        var batch = StoreBatch()
        batch.upsert(Outcome(
            taskUUID: imported.taskUUID, taskID: imported.taskID, taskOccurrenceIndex: imported.taskOccurrenceIndex,
            values: [OutcomeValue(.text("edited on the device"))], metadata: metadata))
        XCTAssertEqual(try store.apply(batch).outboxEntryIDs.count, 1)
        let (report, resources) = try export(store, to: try makeScratchFolder("export-edited-import"))
        XCTAssertEqual(report.refused.count, 0, "\(report.refused)")
        let observation = try XCTUnwrap(resources.first { $0.resourceType == "Observation" })
        XCTAssertEqual(observation.childValue("id"), OutcomeExporter.observationID(of: imported.id))
        XCTAssertNotEqual("Observation/" + (observation.childValue("id") ?? ""), original, "the provider's Observation is not written")
        XCTAssertEqual(observation.childValue("status"), "final", "the provider has no earlier version of this Observation")
        XCTAssertEqual(observation.children(named: "derivedFrom").map { $0.childValue("reference") }, [original])
        let provenance = try XCTUnwrap(resources.first { $0.resourceType == "Provenance" })
        let entity = try XCTUnwrap(provenance.child(named: "entity"))
        XCTAssertEqual(entity.childValue("role"), "derivation")
        XCTAssertEqual(entity.child(named: "what")?.childValue("reference"), original)
    }

    /// A device deleting an outcome: its tombstone goes to the provider when the patient wrote a version
    /// of it (their Observation is retracted, entered-in-error), not when only the provider's made it.
    func testADeletionIsSentOnlyForAnOutcomeThePatientWroteAVersionOf() throws {
        let store = try importedStore()
        let fromProvider = try store.outcomes(.current).filter { $0.metadata.provenance?.fhirType == "Observation" && !$0.values.isEmpty }
        XCTAssertGreaterThanOrEqual(fromProvider.count, 2)
        let (untouched, edited) = (fromProvider[0], fromProvider[1])
        func deviceVersion(of outcome: Outcome, values: [OutcomeValue], deleted: Bool) -> Outcome {
            var metadata = EntityMetadata(effectiveDate: outcome.metadata.effectiveDate, timezone: zone)
            metadata.uuid = UUID()
            metadata.previousVersionUUIDs = [outcome.metadata.uuid]
            if deleted { metadata.deletedDate = outcome.metadata.effectiveDate }
            return Outcome(taskUUID: outcome.taskUUID, taskID: outcome.taskID, taskOccurrenceIndex: outcome.taskOccurrenceIndex, values: values, metadata: metadata)
        }
        var edit = StoreBatch()
        let editedVersion = deviceVersion(of: edited, values: [OutcomeValue(.text("edited"))], deleted: false)
        edit.appendVersion(keepingUUIDOf: editedVersion)
        XCTAssertEqual(try store.apply(edit).outboxEntryIDs.count, 1)
        var deletions = StoreBatch()
        deletions.appendVersion(keepingUUIDOf: deviceVersion(of: untouched, values: untouched.values, deleted: true))
        deletions.appendVersion(keepingUUIDOf: deviceVersion(of: editedVersion, values: editedVersion.values, deleted: true))
        let queued = try store.apply(deletions).outboxEntryIDs
        XCTAssertEqual(queued.count, 1, "only the tombstone of the outcome the patient edited")
        let entries = try store.outboxEntries(in: .pending)
        XCTAssertEqual(Set(entries.map(\.entityID)), [edited.id])
        XCTAssertFalse(entries.contains { $0.entityID == untouched.id }, "the provider's own reading is the provider's to retract")
    }
}
