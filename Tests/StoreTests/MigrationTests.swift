import CareModel
import Foundation
import GRDB
@testable import Store
import TestSupport
import XCTest

/// A store written before the latest migrations opens with its data intact.
final class MigrationTests: XCTestCase {
    func testVersion1StoreIsMigratedWithItsOutcomes() throws {
        let folder = try makeScratchFolder("migration")
        let path = folder.appendingPathComponent("v1.sqlite").path

        // A version-1 store: one task, one outcome in two versions, the second with two values.
        let patient = StoreFixtures.patient()
        let task = try StoreFixtures.task(plan: StoreFixtures.carePlan(patient: patient))
        let taskJSON = try JSONEncoder().encode(task)
        let (first, second) = (UUID(), UUID())
        let eventStart = StoreFixtures.day(2, hour: 8).timeIntervalSince1970
        do {
            let queue = try DatabaseQueue(path: path)
            try StoreSchema.migrator.migrate(queue, upTo: "v1 staging tables")
            try queue.write { db in
                try db.execute(
                    sql: "INSERT INTO task (uuid, id, effectiveDate, payload) VALUES (?, 't1', ?, ?)",
                    arguments: [task.uuid, task.effectiveDate.timeIntervalSince1970, taskJSON])
                for (uuid, previous, next) in [(first, nil, second), (second, first, nil)] as [(UUID, UUID?, UUID?)] {
                    try db.execute(
                        sql: """
                            INSERT INTO outcome (uuid, effectiveDate, previousVersionUUID, nextVersionUUID, taskUUID, taskID,
                                                 occurrenceIndex, eventStart, timezone)
                            VALUES (?, ?, ?, ?, ?, 't1', 2, ?, 'GMT')
                            """,
                        arguments: [uuid, eventStart, previous, next, task.uuid, eventStart])
                }
                let rows = try Int64.fetchAll(db, sql: "SELECT rowID FROM outcome ORDER BY rowID")
                try db.execute(sql: "INSERT INTO outcomeValue (outcomeRowID, position, type, value, units) VALUES (?, 0, 'double', 120, 'mmHg')", arguments: [rows[0]])
                try db.execute(sql: "INSERT INTO outcomeValue (outcomeRowID, position, type, value, units) VALUES (?, 0, 'double', 121, 'mmHg')", arguments: [rows[1]])
                try db.execute(sql: "INSERT INTO outcomeValue (outcomeRowID, position, type, value) VALUES (?, 1, 'text', 'after a walk')", arguments: [rows[1]])
            }
        }

        let store = try SQLiteStore(path: path, mode: .existingOnly)
        XCTAssertEqual(try store.integrityCheck(), [])
        let current = try store.outcomes()
        XCTAssertEqual(current.map(\.uuid), [second])
        XCTAssertEqual(current.first?.values, [OutcomeValue(.double(121), units: "mmHg"), OutcomeValue(.text("after a walk"))])
        let history = try store.history(.outcome, id: "\(task.uuid.uuidString)_2")
        XCTAssertEqual(history.count, 2)
        XCTAssertEqual(try store.statistics().outcomeValues, 3)

        // The migrated chain goes on: a third version after the second, a second first version refused.
        var update = StoreBatch()
        var third = StoreFixtures.outcome(task, occurrence: 2, value: 125)
        third.effectiveDate = StoreFixtures.day(3)
        update.update(third)
        try store.apply(update)
        XCTAssertEqual(try store.history(.outcome, id: "\(task.uuid.uuidString)_2").count, 3)
        var duplicate = StoreBatch()
        duplicate.add(StoreFixtures.outcome(task, occurrence: 2))
        XCTAssertThrowsStoreError(try store.apply(duplicate), .idAlreadyExists(kind: .outcome, id: "\(task.uuid.uuidString)_2"))
    }

    /// The export reads a resource's kept contents by type and id through the unique key (once per source
    /// system), not by scanning every resource ever kept (the key leads with the source system), and
    /// without the index v15 made for it, which every import paid for.
    func testKeptResourcesAreReadByTypeAndIDThroughTheUniqueKey() throws {
        let folder = try makeScratchFolder("migration-v17")
        let path = folder.appendingPathComponent("store.sqlite").path
        let store = try SQLiteStore(path: path)
        var batch = StoreBatch()
        for system in ["https://ehr.example/fhir", "plans.json"] {
            batch.record(SourceResource(sourceSystem: system, resourceType: "CarePlan", resourceID: "plan-1", body: Data(system.utf8), activitiesWithDetail: [system]))
        }
        batch.record(SourceResource(sourceSystem: "plans.json", resourceType: "CarePlan", resourceID: "plan-2", body: Data("other".utf8)))
        try store.apply(batch)
        XCTAssertEqual(try store.sourceResources(resourceType: "CarePlan", resourceID: "plan-1").map(\.sourceSystem), ["https://ehr.example/fhir", "plans.json"])
        XCTAssertEqual(try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: "plan-1"), ["plans.json"])
        XCTAssertNil(try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: "plan-3"))
        let queue = try DatabaseQueue(path: path)
        let indexes = try queue.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sourceResource'") }
        XCTAssertFalse(indexes.contains("sourceResource_by_resource"), "\(indexes)")
        for query in [SQLiteStore.sourceResourcesSQL, SQLiteStore.activitiesWithDetailSQL] {
            let details = try queue.read { db in try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query, arguments: ["CarePlan", "plan-1"]).map { $0["detail"] as String? ?? "" } }
            XCTAssertFalse(details.contains { $0.hasPrefix("SCAN sourceResource") }, "\(query): \(details)")
            XCTAssertTrue(details.contains { $0.contains("SEARCH sourceResource USING INDEX sqlite_autoindex_sourceResource_1 (sourceSystem=? AND resourceType=? AND resourceID=?)") }, "\(details)")
        }
    }

    /// CarePlans kept before v14 have no record of their activities' details (the export reads their
    /// body); those kept after it have one.
    func testSourcesKeptBeforeVersion14HaveNoActivityRecord() throws {
        let folder = try makeScratchFolder("migration-v14")
        let path = folder.appendingPathComponent("v13.sqlite").path
        let body = Data(#"{"resourceType":"CarePlan","id":"cp1","activity":[{"detail":{"status":"scheduled"}}]}"#.utf8)
        do {
            let queue = try DatabaseQueue(path: path)
            try StoreSchema.migrator.migrate(queue, upTo: "v13 tasks of no care plan by patient")
            try queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO sourceResource (sourceSystem, resourceType, resourceID, contentHash, format, body, receivedDate)
                        VALUES ('file', 'CarePlan', 'cp1', ?, 'json', ?, 1000)
                        """,
                    arguments: [ContentHash.of(body), body])
            }
        }

        let store = try SQLiteStore(path: path, mode: .existingOnly)
        XCTAssertEqual(try store.integrityCheck(), [])
        XCTAssertEqual(try store.sourceResources(resourceType: "CarePlan", resourceID: "cp1").map(\.body), [body])
        XCTAssertNil(try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: "cp1"))
        var batch = StoreBatch()
        batch.record(SourceResource(sourceSystem: "file", resourceType: "CarePlan", resourceID: "cp1", body: body + Data(" ".utf8), activitiesWithDetail: ["CarePlan.activity[0]"]))
        try store.apply(batch)
        XCTAssertEqual(try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: "cp1"), ["CarePlan.activity[0]"])
    }
}
