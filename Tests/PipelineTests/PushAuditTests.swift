import CareModel
import FHIR
import FHIRValidation
import Foundation
import Pipeline
import Store
import TestSupport
import XCTest

/// Issue 48, item 5: a push to the provider's server writes the audit trail's entries of the patients
/// whose data each Bundle carries, before the Bundle leaves, and completes them with the receipts.
final class PushAuditTests: XCTestCase {
    private let zone = TimeZone(identifier: "America/Chicago")!
    private let audit = PushAudit(subject: "cli:tester", recipient: "https://fhir.example.org/r4", runID: "run1")

    /// A file store holding Fixtures/provider and three outcomes of patient `Patient/pat-1`.
    private func storeWithOutcomes() throws -> SQLiteStore {
        let folder = try makeScratchFolder("push-audit")
        let store = try SQLiteStore(path: folder.appendingPathComponent("store.sqlite").path)
        let report = try Gateway(store: store, options: Gateway.Options(timeZone: zone))
            .importFHIR(FHIRInput.sources(for: [Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path]))
        XCTAssertEqual(report.failures.count, 0)
        var batch = StoreBatch()
        for (id, occurrence) in [("CarePlan/cp-1#activity-Walk-for-30-minutes", 1), ("CarePlan/cp-1#activity-Walk-for-30-minutes", 2), ("MedicationRequest/medreq-1", 3)] {
            let task = try XCTUnwrap(try store.tasks(EntityQuery(ids: [id])).first)
            var metadata = EntityMetadata(effectiveDate: task.schedule.eventStart(occurrence: occurrence) ?? Date(), timezone: zone)
            metadata.source = "HeartApp"
            let value = id.hasPrefix("Medication") ? OutcomeValue(.double(10), units: "mg") : OutcomeValue(.boolean(true))
            batch.upsert(Outcome(taskUUID: task.uuid, taskOccurrenceIndex: occurrence, values: [value], metadata: metadata))
        }
        try store.apply(batch)
        return store
    }

    private func pushEntries(_ store: SQLiteStore) throws -> [AuditEntry] {
        try store.auditEntries(patientID: nil, limit: 100).filter { $0.action == "caregate sync push" }.sorted { ($0.id ?? 0) < ($1.id ?? 0) }
    }

    /// Answers each outcome with `receipt`, or throws; notes what the trail held when the Bundle came.
    private final class Receiver: ExportReceiver {
        let store: SQLiteStore
        let receipt: ExportReceipt?
        var trailSeen: [[AuditEntry]] = []

        init(store: SQLiteStore, receipt: ExportReceipt?) {
            self.store = store
            self.receipt = receipt
        }

        struct NoAnswer: Error {}

        func receive(bundle: Data, entryCounts: [Int]) throws -> [ExportReceipt] {
            trailSeen.append(try store.auditEntries(patientID: nil, limit: 100).filter { $0.action == "caregate sync push" })
            guard let receipt else { throw NoAnswer() }
            return entryCounts.map { _ in receipt }
        }
    }

    func testEachBundleIsAuditedPerPatientBeforeItLeavesAndCompletedWithItsReceipts() throws {
        let store = try storeWithOutcomes()
        let receiver = Receiver(store: store, receipt: .stored(location: nil))
        let report = try Gateway(store: store).exporter().push(to: receiver, batchSize: 2, audit: audit)
        XCTAssertEqual(report.acknowledged, 3)
        XCTAssertEqual(receiver.trailSeen.map(\.count), [1, 2], "each Bundle's entry is in the trail before the Bundle is sent")
        XCTAssertEqual(receiver.trailSeen.first?.first?.detail, "2 outcome(s) to https://fhir.example.org/r4 (run run1): being sent")

        let entries = try pushEntries(store)
        XCTAssertEqual(entries.count, 2, "one entry per patient per Bundle")
        XCTAssertEqual(entries.map(\.patientID), ["Patient/pat-1", "Patient/pat-1"])
        XCTAssertEqual(entries.map(\.subject), ["cli:tester", "cli:tester"])
        XCTAssertEqual(entries.map(\.status), [0, 0])
        XCTAssertEqual(entries.map(\.detail), [
            "2 outcome(s) to https://fhir.example.org/r4 (run run1): 2 stored, 0 refused, 0 to send again",
            "1 outcome(s) to https://fhir.example.org/r4 (run run1): 1 stored, 0 refused, 0 to send again",
        ])

        // Nothing is due any more: a second push sends and audits nothing.
        XCTAssertEqual(try Gateway(store: store).exporter().push(to: receiver, batchSize: 2, audit: audit).requests, 0)
        XCTAssertEqual(try pushEntries(store).count, 2)
    }

    func testABundleWithoutAnAnswerIsAuditedAsSuchAndARefusalIsCounted() throws {
        let store = try storeWithOutcomes()
        _ = try Gateway(store: store).exporter().push(to: Receiver(store: store, receipt: nil), batchSize: 10, audit: audit)
        var entries = try pushEntries(store)
        XCTAssertEqual(entries.map(\.status), [1], "the data left, and no answer came")
        XCTAssertEqual(entries.first?.detail, "3 outcome(s) to https://fhir.example.org/r4 (run run1): no answer (sent again later)")

        _ = try Gateway(store: store).exporter().push(
            to: Receiver(store: store, receipt: .refused(reason: "no")), batchSize: 10, now: Date().addingTimeInterval(120), audit: audit)
        entries = try pushEntries(store)
        XCTAssertEqual(entries.map(\.status), [1, 0])
        XCTAssertEqual(entries.last?.detail, "3 outcome(s) to https://fhir.example.org/r4 (run run1): 0 stored, 3 refused, 0 to send again")
    }

    func testAPushWithoutAuditWritesNoEntry() throws {
        let store = try storeWithOutcomes()
        XCTAssertEqual(try Gateway(store: store).exporter().push(to: Receiver(store: store, receipt: .stored(location: nil))).acknowledged, 3)
        XCTAssertEqual(try pushEntries(store), [])
    }

    /// A push's entry is an Export (a disclosure out of CareGate) by the sync job, valid R4.
    func testAPushEntryIsAnExportAuditEventOfTheSyncJob() throws {
        let entry = AuditEntry(
            id: 7, date: Date(), subject: "cli:tester", patientID: "Patient/pat-1", action: "caregate sync push", status: 0,
            detail: "1 outcome(s) to https://fhir.example.org/r4 (run run1): 1 stored, 0 refused, 0 to send again")
        XCTAssertEqual(BALPAuditEvent.Pattern.of(action: entry.action), .export)
        let event = try XCTUnwrap(BALPAuditEvent.resource(entry, host: "gateway.example.org"))
        XCTAssertEqual(event.child(named: "type")?.childValue("code"), "110106")
        XCTAssertEqual(event.childValue("outcome"), "0")
        let agents = event.children(named: "agent").compactMap { $0.child(named: "who")?.childValue("display") }
        XCTAssertTrue(agents.contains("CareGate sync job"), "\(agents)")
        XCTAssertEqual(StructureValidator(options: ValidationOptions(strict: true)).validate(event).errors.map(\.diagnostics), [])
    }

    /// Payload entries are audited by the patient they name; AuditEvents are not audited again.
    func testPayloadEntriesAreAuditedByTheirPatientAndAuditEventsNot() throws {
        func entry(_ id: String, payload: String) -> OutboxEntry {
            OutboxEntry(destination: OutboxEntry.provider, entityKind: .patient, entityID: id, entityUUID: UUID(), payload: Data(payload.utf8))
        }
        let subject = #"{"resource":{"resourceType":"Communication","subject":{"reference":"Patient/pat-9"}}}"#
        XCTAssertEqual(PayloadOutbox.auditedItem(entry("Patient/pat-9/2026-11-01/2026-11-08", payload: "{}")), PushAudit.Item(patientID: "Patient/pat-9", what: "report"))
        XCTAssertEqual(PayloadOutbox.auditedItem(entry("Communication/abc", payload: subject)), PushAudit.Item(patientID: "Patient/pat-9", what: "share"))
        XCTAssertEqual(
            PayloadOutbox.auditedItem(entry("Consent/abc", payload: #"{"resource":{"resourceType":"Consent","patient":{"reference":"Patient/pat-9"}}}"#)),
            PushAudit.Item(patientID: "Patient/pat-9", what: "consent decision"))
        XCTAssertNil(PayloadOutbox.auditedItem(entry("AuditEvent/abc", payload: "{}")))
    }
}
