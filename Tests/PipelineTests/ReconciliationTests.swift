import CareModel
import FHIR
import Foundation
import Mapping
@testable import Pipeline
import Store
import XCTest

/// Reconciliation on its own: mapped entities against a store, before anything is written.
final class ReconciliationTests: XCTestCase {
    private let utc = TimeZone(identifier: "UTC")!
    /// 2025-03-01 00:00 UTC.
    private let day0 = Date(timeIntervalSince1970: 1_740_787_200)
    private let system = MappingOptions.defaultSourceSystem

    private func patient(_ id: String, hash: String, effective: Date? = nil) -> Patient {
        Patient(id: id, name: PersonName(givenName: "Ada", familyName: "Lovelace"), metadata: EntityMetadata(
            effectiveDate: effective ?? day0, timezone: utc,
            provenance: Provenance(sourceSystem: system, fhirType: "Patient", fhirID: id, contentHash: hash)))
    }

    private func plan(_ id: String, patientID: String, from resource: String = "Patient/p1") -> CarePlan {
        let key = ResourceKey(description: resource)!
        return CarePlan(id: id, title: "Plan", patientID: patientID, metadata: EntityMetadata(
            effectiveDate: day0, timezone: utc,
            provenance: Provenance(sourceSystem: system, fhirType: key.type, fhirID: key.id, contentHash: "plan-\(id)")))
    }

    private func mapped(_ resource: String, _ entities: [CareEntity]) -> MappedResource {
        MappedResource(key: ResourceKey(description: resource)!, result: .mapped(entities: entities, outcomes: []))
    }

    private func reconcile(
        _ mapped: [MappedResource], in store: any Store, last: Bool = true, dryRun: Bool = false
    ) throws -> (groups: [ResourceGroup], waiting: [MappedResource], report: ImportReport) {
        var options = ImportOptions(mapping: MappingOptions(timeZone: utc))
        options.dryRun = dryRun
        let ledger = ImportLedger(store: store, options: options)
        var deletions: [(key: ResourceKey, origin: ImportOrigin)] = []
        let (groups, waiting) = try Reconciliation(store: store, sourceSystem: system, ledger: ledger).reconcile(
            mapped, records: [:], origins: [:], index: ResourceIndex.Builder().build(), last: last, deletions: &deletions)
        return (groups, waiting, ledger.finish(coverage: nil, seconds: 0))
    }

    /// Reconciles `mapped` and writes its groups, as an import's chunk does: the report of both.
    private func reconcileAndWrite(_ mapped: [MappedResource], in store: any Store, dryRun: Bool = false) throws -> ImportReport {
        var options = ImportOptions(mapping: MappingOptions(timeZone: utc))
        options.dryRun = dryRun
        let ledger = ImportLedger(store: store, options: options)
        var deletions: [(key: ResourceKey, origin: ImportOrigin)] = []
        let index = ResourceIndex.Builder().build()
        let (groups, _) = try Reconciliation(store: store, sourceSystem: system, ledger: ledger).reconcile(
            mapped, records: [:], origins: [:], index: index, last: true, deletions: &deletions)
        let engine = MappingEngine(mappings: try MappingSet.defaults(), options: options.mapping)
        try EntityWriter(store: store, engine: engine, options: options, ledger: ledger).write(groups, index: index)
        return ledger.finish(coverage: nil, seconds: 0)
    }

    private func store(_ entities: CareEntity...) throws -> SQLiteStore {
        let store = try SQLiteStore.inMemory()
        var batch = StoreBatch()
        for entity in entities { batch.append(.upsert(entity)) }
        try store.apply(batch)
        return store
    }

    /// p1 as stored, p2 changed, p3 new (over a store holding p1 "a" and p2 "b").
    private func threePatients() -> [MappedResource] {
        [mapped("Patient/p1", [.patient(patient("p1", hash: "a"))]),
         mapped("Patient/p2", [.patient(patient("p2", hash: "changed"))]),
         mapped("Patient/p3", [.patient(patient("p3", hash: "c"))])]
    }

    func testNewChangedAndSameContentAreCountedAsTheStoreWroteThem() throws {
        let store = try store(.patient(patient("p1", hash: "a")), .patient(patient("p2", hash: "b")))
        let input = threePatients()
        let (_, waiting, _) = try reconcile(input, in: store)
        XCTAssertTrue(waiting.isEmpty)
        let report = try reconcileAndWrite(input, in: store)
        XCTAssertEqual(report.byType["Patient"]?.created, 1)
        XCTAssertEqual(report.byType["Patient"]?.updated, 1)
        XCTAssertEqual(report.byType["Patient"]?.unchanged, 1)
        XCTAssertEqual([report.entitiesAdded, report.entitiesUpdated, report.entitiesUnchanged], [1, 1, 1])
        let again = try reconcileAndWrite(input, in: store)
        XCTAssertEqual(again.byType["Patient"]?.unchanged, 3, "the same input again stores nothing")
    }

    func testADryRunReportsWhatTheStoreWouldDoAndWritesNothing() throws {
        let store = try store(.patient(patient("p1", hash: "a")), .patient(patient("p2", hash: "b")))
        let input = threePatients()
        let (groups, _, _) = try reconcile(input, in: store, dryRun: true)
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: groups.map { ($0.key.id, $0.dryRunStatus) }), ["p1": .unchanged, "p2": .updated, "p3": .created])
        let report = try reconcileAndWrite(input, in: store, dryRun: true)
        XCTAssertEqual([report.byType["Patient"]?.created, report.byType["Patient"]?.updated, report.byType["Patient"]?.unchanged], [1, 1, 1])
        XCTAssertEqual(try store.patients(.current).count, 2)
        XCTAssertNil(try reconcile(input, in: store).groups.first?.dryRunStatus, "a real import counts what the store says")
    }

    func testAChangedVersionNeverTakesEffectBeforeTheStoredOne() throws {
        let store = try store(.patient(patient("p1", hash: "a", effective: day0.addingTimeInterval(86_400))))
        let report = try reconcileAndWrite([mapped("Patient/p1", [.patient(patient("p1", hash: "b", effective: day0))])], in: store)
        XCTAssertEqual(report.byType["Patient"]?.updated, 1)
        XCTAssertEqual(try store.patients(.current).first?.effectiveDate, day0.addingTimeInterval(86_400))
        XCTAssertEqual(try store.history(.patient, id: "p1").count, 2)
    }

    func testPatientsAreWrittenBeforeThePlansThatNameThem() throws {
        let (groups, _, _) = try reconcile([
            mapped("CarePlan/cp1", [.carePlan(plan("cp1", patientID: "p1", from: "CarePlan/cp1"))]),
            mapped("Patient/p1", [.patient(patient("p1", hash: "a"))]),
        ], in: try SQLiteStore.inMemory())
        XCTAssertEqual(groups.map(\.key.type), ["Patient", "CarePlan"])
    }

    func testAReferenceToNothingWaitsForALaterChunkThenIsWrittenUnlinked() throws {
        let store = try SQLiteStore.inMemory()
        let input = [mapped("CarePlan/cp1", [.carePlan(plan("cp1", patientID: "nobody", from: "CarePlan/cp1"))])]
        let early = try reconcile(input, in: store, last: false)
        XCTAssertTrue(early.groups.isEmpty)
        XCTAssertEqual(early.waiting.map(\.key.id), ["cp1"])

        let last = try reconcile(input, in: store, last: true)
        XCTAssertTrue(last.waiting.isEmpty)
        guard case .carePlan(let unlinked) = last.groups.first?.entities.first else { return XCTFail("expected the plan") }
        XCTAssertNil(unlinked.patientID)
        XCTAssertNotEqual(unlinked.metadata.provenance?.contentHash, "plan-cp1", "linking it later is a change")
        XCTAssertEqual(last.report.notes.map(\.severity), ["warning"])
    }

    func testAnEntityAResourceNoLongerMakesIsDropped() throws {
        let store = try store(.patient(patient("p1", hash: "a")), .carePlan(plan("cp1", patientID: "p1")), .carePlan(plan("cp2", patientID: "p1")))
        // Patient/p1 made p1, cp1 and cp2 (by their provenance); now it makes p1 and cp1 only.
        let (groups, _, _) = try reconcile([
            mapped("Patient/p1", [.patient(patient("p1", hash: "a")), .carePlan(plan("cp1", patientID: "p1"))]),
        ], in: store)
        XCTAssertEqual(groups.count, 1)
        XCTAssertEqual(groups[0].dropped.map(\.1), ["cp2"])
        XCTAssertEqual(try reconcile([mapped("Patient/p1", [.patient(patient("p1", hash: "a")), .carePlan(plan("cp1", patientID: "p1"))])],
                                     in: store, dryRun: true).groups.first?.dryRunStatus, .updated)
        let report = try reconcileAndWrite([
            mapped("Patient/p1", [.patient(patient("p1", hash: "a")), .carePlan(plan("cp1", patientID: "p1"))]),
        ], in: store)
        XCTAssertEqual(report.byType["Patient"]?.updated, 1, "dropping an entity changes the resource")
        XCTAssertEqual(report.entitiesDeleted, 1)
        XCTAssertEqual(try store.carePlans(.current).map(\.id), ["cp1"])
    }

    func testSkippedFailedAndDeletedResourcesAreReportedNotWritten() throws {
        let store = try SQLiteStore.inMemory()
        let ledger = ImportLedger(store: store, options: ImportOptions(mapping: MappingOptions(timeZone: utc)))
        var deletions: [(key: ResourceKey, origin: ImportOrigin)] = []
        let (groups, _) = try Reconciliation(store: store, sourceSystem: system, ledger: ledger).reconcile([
            MappedResource(key: ResourceKey(type: "CarePlan", id: "a"), result: .skipped("its mapping's `when` is false")),
            MappedResource(key: ResourceKey(type: "CarePlan", id: "b"), result: .failed(MappingFailure(at: "CarePlan", "bad"))),
            MappedResource(key: ResourceKey(type: "CarePlan", id: "c"), result: .delete),
        ], records: [:], origins: [:], index: ResourceIndex.Builder().build(), last: true, deletions: &deletions)
        XCTAssertTrue(groups.isEmpty)
        XCTAssertEqual(deletions.map(\.key.id), ["c"])
        let report = ledger.finish(coverage: nil, seconds: 0)
        XCTAssertEqual(report.byType["CarePlan"]?.skipped, 1)
        XCTAssertEqual(report.byType["CarePlan"]?.failed, 1)
        XCTAssertEqual(report.failures.map(\.message), ["bad"])
    }
}
