import CareModel
import Foundation
@testable import Store
import StoreTestSupport
import TestSupport
import XCTest

/// The reads an export makes: outcome versions read by id (on SQLite by position, ``OutcomeRowReader``)
/// must be the versions the reading of every version decodes, and the task versions read by uuid those of
/// the tasks' histories; on both stores.
final class ExportReadTests: XCTestCase {
    /// Outcomes of every shape the codec reads: one value, two values (the second in `outcomeValue`), the
    /// rarely used fields kept as JSON, a provider's provenance, later versions, and a tombstone.
    private func storeWithOutcomes(_ tested: TestStore) throws -> (AnyTestStore, CareTask, [String]) {
        let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
        var batch = StoreBatch()
        let plain = StoreFixtures.outcome(task, occurrence: 0)
        var twoValues = StoreFixtures.outcome(task, occurrence: 1)
        twoValues.values.append(OutcomeValue(.integer(80), units: "mmHg", kind: "diastolic", index: 1, createdDate: StoreFixtures.day(1, hour: 10)))
        var extras = StoreFixtures.outcome(task, occurrence: 2, value: 118)
        extras.metadata.tags = ["home"]
        extras.metadata.notes = [Note(author: nil, title: "after a walk", content: "tired")]
        extras.metadata.source = "ReadApp"
        var provided = StoreFixtures.outcome(task, occurrence: 3, value: 131)
        provided.provenance = Provenance(sourceSystem: "https://ehr.example", fhirType: "Observation", fhirID: "obs-3", versionID: "2",
                                         lastUpdated: StoreFixtures.day(3, hour: 11), contentHash: "abc")
        for outcome in [plain, twoValues, extras, provided] { batch.add(outcome) }
        try store.apply(batch)

        var again = StoreBatch()
        var edited = twoValues
        edited.values[0] = OutcomeValue(.double(125), units: "mmHg", kind: "systolic")
        again.upsert(edited)
        again.delete(.outcome, id: plain.id, at: StoreFixtures.day(5))
        try store.apply(again)
        return (store, task, [plain, twoValues, extras, provided].map(\.id))
    }

    func testOutcomeVersionsReadByPositionAreTheVersionsRowsDecode() throws {
        try forEachStore { tested in
            let (store, _, ids) = try storeWithOutcomes(tested)
            var decodedFromRows: [CareEntity] = []
            try store.forEachVersion(.outcome) { decodedFromRows.append($0) }
            let readByPosition = try store.histories(.outcome, ids: ids)
            XCTAssertEqual(readByPosition.count, 6, "four outcomes, a second version of one and a tombstone of another")
            XCTAssertEqual(readByPosition, decodedFromRows)
            // The same versions whatever the order or repetition of the ids asked.
            XCTAssertEqual(try store.histories(.outcome, ids: ids.reversed() + ids), decodedFromRows)
        }
    }

    func testTaskVersionsByUUIDAreThoseOfTheirHistories() throws {
        try forEachStore { tested in
            let (store, _, _, task) = try StoreFixtures.storeWithTask(tested)
            for (day, title) in [(2, "Measure blood pressure twice"), (4, "Measure blood pressure at rest")] {
                var next = task
                next.title = title
                next.metadata.effectiveDate = StoreFixtures.day(day)
                var batch = StoreBatch()
                batch.update(next)
                try store.apply(batch)
            }
            let history = try store.histories(.task, ids: [task.id]).compactMap { entity -> CareTask? in
                if case .task(let version) = entity { version } else { nil }
            }
            XCTAssertEqual(history.count, 3)
            let asked = [history[2].uuid, history[0].uuid, history[2].uuid, UUID()]
            let read = try store.taskVersions(uuids: asked, ids: [task.id])
            XCTAssertEqual(read, [history[0], history[2]], "each version asked once, in stored order; an unknown uuid left out")
            // The protocol's default (from the histories), which stores without a lookup by version use:
            // InterleavingStore (over a SQLite store) has none of its own.
            if let sqlite = tested.sqlite {
                XCTAssertEqual(try InterleavingStore(sqlite).taskVersions(uuids: asked, ids: [task.id]), read)
            }
        }
    }
}
