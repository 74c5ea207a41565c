import CareModel
import Foundation
import Store
import StoreTestSupport
import XCTest

/// CareKit's versioning rules as both stores apply them.
final class VersioningTests: XCTestCase {
    func testAddStoresFirstVersionWithoutLinks() throws {
        try forEachStore { tested in
            let (store, patient, _, _) = try StoreFixtures.storeWithTask(tested)
            let stored = try XCTUnwrap(store.patients().first)
            XCTAssertEqual(stored.id, patient.id)
            XCTAssertEqual(stored.uuid, patient.uuid)
            XCTAssertEqual(stored.previousVersionUUIDs, [])
            XCTAssertEqual(stored.nextVersionUUIDs, [])
            XCTAssertNotNil(stored.metadata.createdDate)
            XCTAssertEqual(stored.name, patient.name)
        }
    }

    func testAddRefusesExistingID() throws {
        try forEachStore { tested in
            let (store, _, _, _) = try StoreFixtures.storeWithTask(tested)
            var again = StoreBatch()
            again.add(StoreFixtures.patient())
            XCTAssertThrowsStoreError(try store.apply(again), .idAlreadyExists(kind: .patient, id: "p1"))
        }
    }

    func testAddRefusesDeletedID() throws {
        try forEachStore { tested in
            let (store, _, _, _) = try StoreFixtures.storeWithTask(tested)
            var delete = StoreBatch()
            delete.delete(.patient, id: "p1", at: StoreFixtures.day(1))
            try store.apply(delete)
            var again = StoreBatch()
            again.add(StoreFixtures.patient())
            XCTAssertThrowsStoreError(try store.apply(again), .idAlreadyExists(kind: .patient, id: "p1"))
        }
    }

    func testAddRefusesUsedUUID() throws {
        try forEachStore { tested in
            let (store, patient, _, _) = try StoreFixtures.storeWithTask(tested)
            var other = StoreFixtures.patient("p2")
            other.uuid = patient.uuid
            var batch = StoreBatch()
            batch.add(other)
            XCTAssertThrowsStoreError(try store.apply(batch), .uuidAlreadyExists(kind: .patient, uuid: patient.uuid))
        }
    }

    func testUpdateAppendsLinkedVersionAfterTip() throws {
        try forEachStore { tested in
            let (store, patient, _, _) = try StoreFixtures.storeWithTask(tested)
            var changed = try XCTUnwrap(store.patients().first)
            changed.name.givenName = "Augusta"
            changed.effectiveDate = StoreFixtures.day(5)
            var batch = StoreBatch()
            batch.update(changed)
            let summary = try store.apply(batch)
            XCTAssertEqual(summary.updated, 1)

            let history = try store.history(.patient, id: "p1").compactMap { entity -> Patient? in
                if case .patient(let value) = entity { return value } else { return nil }
            }
            XCTAssertEqual(history.count, 2)
            let (first, second) = (history[0], history[1])
            XCTAssertEqual(first.uuid, patient.uuid)
            XCTAssertNotEqual(second.uuid, patient.uuid, "an update gets a new uuid")
            XCTAssertEqual(first.nextVersionUUIDs, [second.uuid])
            XCTAssertEqual(second.previousVersionUUIDs, [first.uuid])
            XCTAssertEqual(second.effectiveDate, StoreFixtures.day(5))
            XCTAssertEqual(try store.patients().map(\.name.givenName), ["Augusta"])
        }
    }

    func testUpdateOfMissingIDIsRefused() throws {
        try forEachStore { tested in
            let store = tested.store
            var batch = StoreBatch()
            batch.update(StoreFixtures.patient("nobody"))
            XCTAssertThrowsStoreError(try store.apply(batch), .idNotFound(kind: .patient, id: "nobody"))
        }
    }

    func testUpdateOfDeletedIDIsRefused() throws {
        try forEachStore { tested in
            let (store, _, _, _) = try StoreFixtures.storeWithTask(tested)
            var delete = StoreBatch()
            delete.delete(.patient, id: "p1", at: StoreFixtures.day(1))
            try store.apply(delete)
            var update = StoreBatch()
            update.update(StoreFixtures.patient(effective: StoreFixtures.day(2)))
            XCTAssertThrowsStoreError(try store.apply(update), .entityDeleted(kind: .patient, id: "p1"))
            var deleteAgain = StoreBatch()
            deleteAgain.delete(.patient, id: "p1", at: StoreFixtures.day(3))
            XCTAssertThrowsStoreError(try store.apply(deleteAgain), .entityDeleted(kind: .patient, id: "p1"))
        }
    }

    func testUpdateWithEarlierEffectiveDateIsRefused() throws {
        try forEachStore { tested in
            let (store, _, _, _) = try StoreFixtures.storeWithTask(tested)
            var earlier = StoreFixtures.patient(effective: StoreFixtures.day(-3))
            earlier.name.givenName = "Too early"
            var batch = StoreBatch()
            batch.update(earlier)
            XCTAssertThrowsStoreError(try store.apply(batch)) {
                if case .effectiveDateBeforePrevious(.patient, "p1", _, _) = $0 { return true } else { return false }
            }
        }
    }

    func testDeleteAppendsTombstoneAndKeepsEveryVersion() throws {
        try forEachStore { tested in
            let (store, _, _, _) = try StoreFixtures.storeWithTask(tested)
            var delete = StoreBatch()
            delete.delete(.patient, id: "p1", at: StoreFixtures.day(4))
            XCTAssertEqual(try store.apply(delete).deleted, 1)

            XCTAssertEqual(try store.patients(), [], "a deleted patient is not current")
            let history = try store.history(.patient, id: "p1")
            XCTAssertEqual(history.count, 2, "nothing is physically deleted")
            guard case .patient(let tombstone) = history[1], case .patient(let original) = history[0] else {
                return XCTFail("history holds patients")
            }
            XCTAssertEqual(tombstone.deletedDate, StoreFixtures.day(4))
            XCTAssertEqual(tombstone.effectiveDate, StoreFixtures.day(4))
            XCTAssertEqual(tombstone.previousVersionUUIDs, [original.uuid])
            XCTAssertEqual(original.nextVersionUUIDs, [tombstone.uuid])
            XCTAssertEqual(tombstone.name, original.name, "a tombstone keeps the last content")
            let stats = try store.statistics()
            XCTAssertEqual(stats.entities[.patient], StoreStatistics.EntityCounts(versions: 2, current: 0, deleted: 1))
        }
    }

    func testDeleteOfMissingIDIsRefused() throws {
        try forEachStore { tested in
            let store = tested.store
            var batch = StoreBatch()
            batch.delete(.task, id: "ghost")
            XCTAssertThrowsStoreError(try store.apply(batch), .idNotFound(kind: .task, id: "ghost"))
        }
    }

    func testQueryWithIntervalReturnsVersionInEffectAtItsEnd() throws {
        try forEachStore { tested in
            let (store, _, _, _) = try StoreFixtures.storeWithTask(tested)
            for (day, name) in [(10, "Second"), (20, "Third")] {
                var next = StoreFixtures.patient(effective: StoreFixtures.day(day))
                next.name.givenName = name
                var batch = StoreBatch()
                batch.update(next)
                try store.apply(batch)
            }
            func name(endingOn day: Int) throws -> [String?] {
                let interval = DateInterval(start: StoreFixtures.day(day - 1), end: StoreFixtures.day(day))
                return try store.patients(EntityQuery(dateInterval: interval)).map(\.name.givenName)
            }
            XCTAssertEqual(try name(endingOn: 0), [], "nothing is in effect before the first version")
            XCTAssertEqual(try name(endingOn: 5), ["Ada"])
            XCTAssertEqual(try name(endingOn: 10), ["Ada"], "the interval end is exclusive")
            XCTAssertEqual(try name(endingOn: 11), ["Second"])
            XCTAssertEqual(try name(endingOn: 30), ["Third"])
            XCTAssertEqual(try store.patients().map(\.name.givenName), ["Third"])

            var delete = StoreBatch()
            delete.delete(.patient, id: "p1", at: StoreFixtures.day(25))
            try store.apply(delete)
            XCTAssertEqual(try name(endingOn: 24), ["Third"])
            XCTAssertEqual(try name(endingOn: 26), [], "a tombstone in effect hides the entity")
        }
    }

    /// Ids are told apart byte for byte, as the store keeps them: canonically equivalent text ("café" as
    /// one code point, or as "e" and a combining accent) is two ids, written in one batch as in two.
    func testCanonicallyEquivalentIDsAreTwoEntities() throws {
        try forEachStore { tested in
            let store = tested.store
            let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
            XCTAssertEqual(composed, decomposed, "Swift's String calls them equal")
            var batch = StoreBatch()
            batch.upsert(StoreFixtures.patient(composed))
            var other = StoreFixtures.patient(decomposed, effective: StoreFixtures.day(1))
            other.name.familyName = "Other"
            batch.upsert(other)
            XCTAssertEqual(try store.apply(batch).added, 2, "\(tested.kind)")
            for id in [composed, decomposed] {
                let history = try store.history(.patient, id: id)
                XCTAssertEqual(history.count, 1, "\(tested.kind): \(Array(id.unicodeScalars))")
                XCTAssertTrue(history.allSatisfy { $0.id.utf8.elementsEqual(id.utf8) }, "\(tested.kind)")
                // Each patient's revision log (what its app pulls) holds its own version only.
                let pulled = try store.revisions(patientID: id, afterClock: 0, maxEntities: 100) { _ in true }.revisions.flatMap(\.entities)
                XCTAssertEqual(pulled.map(\.metadata.uuid), history.map(\.metadata.uuid), "\(tested.kind): \(Array(id.unicodeScalars))")
            }
        }
    }

    /// The key a batch files each change under (what `record(_:ifChanged:)` and the written tips look up)
    /// tells canonically equivalent ids apart, as the store's rows do.
    func testAnEntityKeyComparesIDsByteForByte() {
        let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
        XCTAssertNotEqual(EntityKey(.patient, id: composed), EntityKey(.patient, id: decomposed))
        XCTAssertEqual(Set([EntityKey(.patient, id: composed), EntityKey(.patient, id: decomposed)]).count, 2)
        XCTAssertEqual(EntityKey(.patient, id: composed), EntityKey(.patient, id: "caf\u{E9}"))
        XCTAssertNotEqual(EntityKey(.patient, id: composed), EntityKey(.carePlan, id: composed))
        let task = UUID()
        let outcome = EntityKey(outcomeOf: task, occurrence: 3)
        XCTAssertEqual(outcome, EntityKey(.outcome, id: outcome.id))
        XCTAssertEqual(Set([outcome, EntityKey(.outcome, id: outcome.id)]).count, 1)
    }

    func testUpsertOfUnchangedContentMakesNoVersion() throws {
        try forEachStore { tested in
            let store = tested.store
            let patient = StoreFixtures.patient()
            var first = StoreBatch()
            first.upsert(patient)
            XCTAssertEqual(try store.apply(first).added, 1)

            // The same content again, as a re-import makes it: a fresh uuid, the same fields.
            var again = StoreBatch()
            again.upsert(StoreFixtures.patient())
            let summary = try store.apply(again)
            XCTAssertEqual(summary.unchanged, 1)
            XCTAssertEqual(summary.versionUUIDs, [patient.uuid])
            XCTAssertEqual(try store.history(.patient, id: "p1").count, 1)

            var changed = StoreFixtures.patient(effective: StoreFixtures.day(1))
            changed.name.familyName = "King"
            var third = StoreBatch()
            third.upsert(changed)
            XCTAssertEqual(try store.apply(third).updated, 1)
            XCTAssertEqual(try store.history(.patient, id: "p1").count, 2)
        }
    }

    func testUpsertComparesProvenanceContentHash() throws {
        try forEachStore { tested in
            let store = tested.store
            func imported(hash: String, given: String) -> Patient {
                var patient = StoreFixtures.patient(provenance: Provenance(
                    sourceSystem: "https://ehr.example/fhir", fhirType: "Patient", fhirID: "123", versionID: "1", contentHash: hash))
                patient.name.givenName = given
                return patient
            }
            var batch = StoreBatch()
            batch.upsert(imported(hash: "aaa", given: "Ada"))
            try store.apply(batch)
            var same = StoreBatch()
            same.upsert(imported(hash: "aaa", given: "Ada"))
            XCTAssertEqual(try store.apply(same).unchanged, 1)
            var changed = StoreBatch()
            changed.upsert(imported(hash: "bbb", given: "Ada B."))
            XCTAssertEqual(try store.apply(changed).updated, 1)
            XCTAssertEqual(try store.history(.patient, id: "p1").count, 2)
            XCTAssertEqual(try store.links(resourceType: "Patient", resourceID: "123"), [
                ResourceLink(sourceSystem: "https://ehr.example/fhir", resourceType: "Patient", resourceID: "123", entityKind: .patient, entityID: "p1"),
            ])
        }
    }

    func testUpsertOfDeletedIDIsRefused() throws {
        try forEachStore { tested in
            let (store, _, _, _) = try StoreFixtures.storeWithTask(tested)
            var delete = StoreBatch()
            delete.delete(.patient, id: "p1", at: StoreFixtures.day(1))
            try store.apply(delete)
            var upsert = StoreBatch()
            upsert.upsert(StoreFixtures.patient())
            XCTAssertThrowsStoreError(try store.apply(upsert), .entityDeleted(kind: .patient, id: "p1"))
        }
    }

    func testReferencesMustExistAndStableIDsAreFilledIn() throws {
        try forEachStore { tested in
            let store = tested.store
            let patient = StoreFixtures.patient()
            let plan = StoreFixtures.carePlan(patient: patient)
            var orphan = StoreBatch()
            orphan.add(plan)
            XCTAssertThrowsStoreError(try store.apply(orphan)) {
                if case .missingReference(.carePlan, "cp1", "patientUUID", _) = $0 { return true } else { return false }
            }
            var batch = StoreBatch()
            batch.add(patient)
            batch.add(plan)
            try store.apply(batch)
            XCTAssertEqual(try store.carePlans().first?.patientID, "p1")
        }
    }

    func testTasksOfCarePlan() throws {
        try forEachStore { tested in
            let (store, patient, plan, _) = try StoreFixtures.storeWithTask(tested)
            let otherPlan = StoreFixtures.carePlan("cp2", patient: patient)
            var batch = StoreBatch()
            batch.add(otherPlan)
            batch.add(try StoreFixtures.task("t2", plan: plan, hour: 20))
            batch.add(try StoreFixtures.task("t3", plan: otherPlan))
            try store.apply(batch)
            XCTAssertEqual(try store.tasks(carePlanID: "cp1", .current).map(\.id), ["t1", "t2"])
            XCTAssertEqual(try store.tasks(carePlanID: "cp2", .current).map(\.id), ["t3"])
            XCTAssertEqual(try store.tasks(carePlanID: "cp1", .current).first?.carePlanID, "cp1")
        }
    }
}
