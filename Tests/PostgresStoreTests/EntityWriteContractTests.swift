import CareModel
import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// The entity writer of the PostgreSQL store against the SQLite store's: the same batches on both give
/// the same summaries, the same versions (uuids the stores make normalised), and the same refusals.
/// CareKit's versioning rules (StoreTests' VersioningTests and VersionDecisionTests, ported).
final class EntityWriteContractTests: EntityWriteTestCase {
    private typealias F = WriteFixtures

    func testAddsAndTheirRefusalsAreAlike() throws {
        let stores = try pair()
        let (patient, plan, task, basics) = try F.basics()
        stores.apply(basics)
        try stores.assertSameHistories(.patient, ids: ["p1"])
        try stores.assertSameHistories(.carePlan, ids: ["cp1"])
        try stores.assertSameHistories(.task, ids: ["t1"])

        var again = StoreBatch(date: F.day(1))
        again.add(F.patient())
        XCTAssertEqual(try stores.apply(again).get_error(), .idAlreadyExists(kind: .patient, id: "p1"))

        var sameUUID = F.patient("p2")
        sameUUID.uuid = patient.uuid
        var batch = StoreBatch(date: F.day(1))
        batch.add(sameUUID)
        XCTAssertEqual(stores.apply(batch).error, .uuidAlreadyExists(kind: .patient, uuid: patient.uuid))

        // A reference that does not exist, and one whose uuid names another id.
        var orphan = F.carePlan("cp2", patient: F.patient("nobody"))
        batch = StoreBatch(date: F.day(1))
        batch.add(orphan)
        XCTAssertNotNil(stores.apply(batch).error)
        orphan = F.carePlan("cp2", patient: patient)
        orphan.patientID = "someone-else"
        batch = StoreBatch(date: F.day(1))
        batch.add(orphan)
        XCTAssertNotNil(stores.apply(batch).error)
        var byID = try F.task("t2", plan: nil)
        byID.carePlanID = "missing"
        batch = StoreBatch(date: F.day(1))
        batch.add(byID)
        XCTAssertEqual(
            stores.apply(batch).error, .missingReference(kind: .task, id: "t2", field: "carePlanID", reference: "carePlan 'missing'"))

        // Stable ids are filled in from the uuids named.
        batch = StoreBatch(date: F.day(1))
        batch.add(try F.task("t2", plan: plan, hour: 20))
        stores.apply(batch)
        XCTAssertEqual(try stores.assertSameHistories(.task, ids: ["t1", "t2"]), 2)
        XCTAssertEqual(try stores.postgres.histories(.task, ids: ["t2"]).first.flatMap { if case .task(let t) = $0 { t.carePlanID } else { nil } }, "cp1")
        _ = task
    }

    func testUpdatesUpsertsAndDeletesAreAlike() throws {
        let stores = try pair()
        let (patient, _, task, basics) = try F.basics()
        stores.apply(basics)

        var changed = patient
        changed.name.givenName = "Augusta"
        changed.effectiveDate = F.day(5)
        var batch = StoreBatch(date: F.day(5))
        batch.update(changed)
        XCTAssertEqual(try stores.apply(batch).get().updated, 1)

        // An update dated before the tip is refused; an upsert that asks is raised to it.
        var earlier = changed
        earlier.name.givenName = "Early"
        earlier.effectiveDate = F.day(2)
        batch = StoreBatch(date: F.day(6))
        batch.update(earlier)
        XCTAssertEqual(stores.apply(batch).error, .effectiveDateBeforePrevious(kind: .patient, id: "p1", effective: F.day(2), previous: F.day(5)))
        batch = StoreBatch(date: F.day(6))
        batch.upsert(earlier, effective: .noEarlierThanPrevious)
        XCTAssertEqual(try stores.apply(batch).get().updated, 1)

        // Unchanged content makes no version, by content or by hash.
        batch = StoreBatch(date: F.day(7))
        batch.upsert(earlier, effective: .noEarlierThanPrevious)
        XCTAssertEqual(try stores.apply(batch).get().unchanged, 1)
        var hashed = F.patient("p9", provenance: F.provenance("Patient", "9", hash: "h1"))
        batch = StoreBatch(date: F.day(7))
        batch.upsert(hashed)
        stores.apply(batch)
        hashed.name.givenName = "Different but same hash"
        batch = StoreBatch(date: F.day(8))
        batch.upsert(hashed)
        XCTAssertEqual(try stores.apply(batch).get().unchanged, 1)
        hashed.metadata.provenance?.contentHash = "h2"
        batch = StoreBatch(date: F.day(8))
        batch.upsert(hashed)
        XCTAssertEqual(try stores.apply(batch).get().updated, 1)

        // Update and delete of what is missing; a delete dated before the tip, raised when asked.
        batch = StoreBatch(date: F.day(8))
        batch.update(F.patient("nobody"))
        XCTAssertEqual(stores.apply(batch).error, .idNotFound(kind: .patient, id: "nobody"))
        batch = StoreBatch(date: F.day(8))
        batch.delete(.task, id: "nothing", at: F.day(8))
        XCTAssertEqual(stores.apply(batch).error, .idNotFound(kind: .task, id: "nothing"))
        batch = StoreBatch(date: F.day(8))
        batch.delete(.patient, id: "p9", at: F.day(-1))
        XCTAssertEqual(stores.apply(batch).error, .effectiveDateBeforePrevious(kind: .patient, id: "p9", effective: F.day(-1), previous: F.day(0)))
        batch = StoreBatch(date: F.day(9))
        batch.delete(.patient, id: "p9", at: nil)
        XCTAssertEqual(try stores.apply(batch).get().deleted, 1)

        // A deleted id stays deleted: update, upsert, delete and add are refused.
        batch = StoreBatch(date: F.day(10))
        batch.update(hashed)
        XCTAssertEqual(stores.apply(batch).error, .entityDeleted(kind: .patient, id: "p9"))
        var upsertDeleted = hashed
        upsertDeleted.metadata.provenance?.contentHash = "h3"
        batch = StoreBatch(date: F.day(10))
        batch.upsert(upsertDeleted)
        XCTAssertEqual(stores.apply(batch).error, .entityDeleted(kind: .patient, id: "p9"))
        batch = StoreBatch(date: F.day(10))
        batch.delete(.patient, id: "p9")
        XCTAssertEqual(stores.apply(batch).error, .entityDeleted(kind: .patient, id: "p9"))
        batch = StoreBatch(date: F.day(10))
        batch.add(F.patient("p9"))
        XCTAssertEqual(stores.apply(batch).error, .idAlreadyExists(kind: .patient, id: "p9"))

        // A task updated and deleted: its versions and the time each owns.
        var later = task
        later.title = "Measure twice"
        later.effectiveDate = F.day(3)
        batch = StoreBatch(date: F.day(3))
        batch.update(later)
        batch.delete(.task, id: "t1", at: F.day(4))
        let summary = try stores.apply(batch).get()
        XCTAssertEqual(summary.entityChanges.map(\.change), [.updated, .deleted])
        XCTAssertEqual(try stores.assertSameHistories(.patient, ids: ["p1", "p9"]), 6)
        XCTAssertEqual(try stores.assertSameHistories(.task, ids: ["t1"]), 3)
        try stores.assertSameRevisions(patientID: "p1")
        try stores.assertSameRevisions(patientID: "p9")
    }

    func testAFailedBatchIsRolledBackWholeOnBoth() throws {
        let stores = try pair()
        let (_, _, _, basics) = try F.basics()
        stores.apply(basics)
        var batch = StoreBatch(date: F.day(1))
        batch.add(F.patient("p2"))
        batch.add(F.patient("p1"))
        XCTAssertEqual(stores.apply(batch).error, .idAlreadyExists(kind: .patient, id: "p1"))
        XCTAssertEqual(try stores.assertSameHistories(.patient, ids: ["p1", "p2"]), 1, "p2 rolled back")
        try stores.assertSameRevisions(patientID: "p1")
        XCTAssertEqual(try stores.apply(StoreBatch(date: F.day(1))).get(), BatchSummary(), "an empty batch changes nothing")
    }

    func testSourcesIfChangedAndLinksAreAlike() throws {
        let stores = try pair()
        let resource = SourceResource(
            sourceSystem: "https://ehr.example/fhir", resourceType: "Patient", resourceID: "9", versionID: "1", lastUpdated: "2025-03-01T00:00:00Z",
            format: "json", body: Data(#"{"resourceType":"Patient","id":"9"}"#.utf8), receivedDate: F.day(0))
        let patient = F.patient("p9", provenance: F.provenance("Patient", "9", hash: "h1"))
        var batch = StoreBatch(date: F.day(0))
        batch.upsert(patient)
        batch.record(resource, ifChanged: [EntityKey(.patient, id: "p9")])
        batch.link(ResourceLink(sourceSystem: "https://ehr.example/fhir", resourceType: "Patient", resourceID: "9", entityKind: .patient, entityID: "p9"))
        XCTAssertEqual(try stores.apply(batch).get().sourcesRecorded, 1)
        batch = StoreBatch(date: F.day(1))
        batch.upsert(patient)
        batch.record(resource, ifChanged: [EntityKey(.patient, id: "p9")])
        batch.record(resource)
        let again = try stores.apply(batch).get()
        XCTAssertEqual([again.unchanged, again.sourcesRecorded, again.sourcesUnchanged], [1, 0, 1])
        XCTAssertEqual(try stores.sqlite.links(resourceType: "Patient", resourceID: "9").count, 1)
        XCTAssertEqual(try stores.postgresCount("SELECT count(*) FROM resource_link WHERE resource_type = 'Patient' AND resource_id = '9'"), 1)
        XCTAssertEqual(try stores.postgresCount("SELECT count(*) FROM source_resource"), 1)
    }
}

extension Result where Failure == StoreError {
    /// The refusal, or nil when the batch was taken.
    var error: StoreError? {
        if case .failure(let error) = self { return error }
        return nil
    }

    func get_error() throws -> StoreError? { error }
}

/// One batch that writes the same entities again and again: what the PostgreSQL writer knows ahead
/// (prefetched tips, versions waiting for their bulk insert) must answer as the SQLite store's reads do.
final class EntityWriteWithinOneBatchTests: EntityWriteTestCase {
    private typealias F = WriteFixtures

    func testRepeatedChangesOfOneBatchAreAlike() throws {
        let stores = try pair("entity-write-one-batch")
        let (patient, plan, task, basics) = try F.basics()
        var batch = basics
        // The patient again and again: updates, an unchanged upsert, a delete, a refused add is left out.
        var renamed = patient
        renamed.name.givenName = "Augusta"
        renamed.effectiveDate = F.day(1)
        batch.update(renamed)
        batch.upsert(renamed)
        var second = F.patient("p2")
        batch.upsert(second)
        second.name.givenName = "Changed"
        second.uuid = UUID()
        batch.upsert(second)
        batch.delete(.patient, id: "p2", at: F.day(2))
        // A task version written in the batch, outcomes of both versions, outcomes written again and deleted.
        var later = try F.task(plan: plan, hour: 18, effective: F.day(10))
        later.uuid = UUID()
        batch.update(later)
        batch.add(F.outcome(task, occurrence: 1))
        batch.upsert(F.outcome(task, occurrence: 1, value: 121))
        batch.upsert(F.outcome(task, occurrence: 1, value: 121))
        batch.add(F.outcome(later, occurrence: 11))
        batch.delete(.outcome, id: "\(later.uuid.uuidString)_11", at: F.day(11, hour: 20))
        batch.upsert(F.outcome(later, occurrence: 11, value: 99))
        batch.upsert(F.outcome(task, occurrence: 2))
        // A care plan of another patient, its task, and a contact of no care plan.
        let other = F.patient("p3")
        let otherPlan = F.carePlan("cp3", patient: other)
        batch.add(other)
        batch.add(otherPlan)
        batch.add(try F.task("t3", plan: otherPlan))
        var device = F.outcome(task, occurrence: 3)
        device.metadata.uuid = UUID()
        batch.appendVersion(keepingUUIDOf: device)
        var deviceAgain = F.outcome(task, occurrence: 3, value: 140)
        deviceAgain.metadata.uuid = UUID()
        deviceAgain.metadata.previousVersionUUIDs = [device.uuid]
        batch.appendVersion(keepingUUIDOf: deviceAgain)
        batch.upsert(F.outcome(task, occurrence: 3, value: 150))
        let summary = try stores.apply(batch).get()
        XCTAssertEqual(summary.entityChanges.count, batch.count)
        try stores.assertSameHistories(.patient, ids: ["p1", "p2", "p3"])
        try stores.assertSameHistories(.task, ids: ["t1", "t3"])
        try stores.assertSameHistories(.outcome, ids: (1...3).map { "\(task.uuid.uuidString)_\($0)" } + ["\(later.uuid.uuidString)_11"])
        for id in ["p1", "p2", "p3"] { try stores.assertSameRevisions(patientID: id) }

        // A refusal late in a batch of such changes leaves nothing of it.
        batch = StoreBatch(date: F.day(3))
        batch.upsert(F.patient("p4"))
        batch.add(F.outcome(task, occurrence: 4))
        batch.add(F.outcome(task, occurrence: 4))
        XCTAssertEqual(stores.apply(batch).error, .idAlreadyExists(kind: .outcome, id: "\(task.uuid.uuidString)_4"))
        try stores.assertSameHistories(.patient, ids: ["p4"])

        // More versions than one page of forEachVersion.
        batch = StoreBatch(date: F.day(4))
        for occurrence in 20..<1_220 { batch.add(F.outcome(later, occurrence: occurrence)) }
        stores.apply(batch)
        var count = 0
        try stores.postgres.forEachVersion(.outcome) { _ in count += 1 }
        var expected = 0
        try stores.sqlite.forEachVersion(.outcome) { _ in expected += 1 }
        XCTAssertEqual(count, expected)
        XCTAssertGreaterThan(count, 1_200)
    }
}
