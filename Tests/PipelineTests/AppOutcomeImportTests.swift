import CareModel
import Foundation
import Pipeline
import Store
import TestSupport
import XCTest

/// `caregate outcomes import`: outcomes in CareKit JSON, as an app sends them, into the store and its outbox.
final class AppOutcomeImportTests: XCTestCase {
    private let walk = "CarePlan/cp-1#activity-Walk-for-30-minutes"
    private let bloodPressure = "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic"

    private func importedStore() throws -> SQLiteStore {
        let store = try makeStore()
        let report = try importFiles([Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path], into: store, zone: "America/Chicago")
        XCTAssertEqual(report.failures, [], describe(report.failures))
        return store
    }

    private func taskUUID(_ id: String, in store: any Store) throws -> String {
        try XCTUnwrap(try store.tasks(EntityQuery(ids: [id])).first).uuid.uuidString
    }

    /// One outcome as CareKit 2.x's `JSONEncoder()` writes an `OCKOutcome`: every key present, dates as
    /// seconds since 2001-01-01, the app's own version uuid.
    private func careKitOutcome(task: String, occurrence: Int, values: String, extra: String = "") -> String {
        """
        {"taskUUID": "\(task)", "taskOccurrenceIndex": \(occurrence), "values": [\(values)],
         "uuid": "\(UUID().uuidString)", "effectiveDate": 815580000, "createdDate": 815580000.5,
         "updatedDate": null, "deletedDate": null, "schemaVersion": {"majorVersion": 2, "minorVersion": 1, "patchNumber": 0},
         "groupIdentifier": null, "tags": null, "remoteID": null, "source": "WalkApp", "userInfo": null,
         "asset": null, "notes": null, "timezone": {"identifier": "America/Chicago"},
         "previousVersionUUIDs": [], "nextVersionUUIDs": []\(extra)}
        """
    }

    private func careKitValue(_ type: String, _ value: String, units: String = "null", kind: String = "null") -> String {
        """
        {"type": "\(type)", "value": \(value), "units": \(units), "kind": \(kind), "index": null, "uuid": null,
         "createdDate": 815580300, "updatedDate": null, "schemaVersion": null, "group": null, "tags": null,
         "remoteID": null, "source": null, "userInfo": null, "timezone": {"identifier": "America/Chicago"}}
        """
    }

    private func run(_ json: String, into store: any Store) throws -> AppOutcomeImport.Report {
        let outcomes = try AppOutcomeImport.decode(Data(json.utf8), file: "app.json")
        return try AppOutcomeImport.apply(outcomes, file: "app.json", to: store)
    }

    func testAppOutcomesAreStoredQueuedAndIdempotent() throws {
        let store = try importedStore()
        let walkUUID = try taskUUID(walk, in: store)
        let bpUUID = try taskUUID(bloodPressure, in: store)
        let file = "[" + [
            careKitOutcome(task: walkUUID, occurrence: 2, values: careKitValue("boolean", "true")),
            careKitOutcome(task: bpUUID, occurrence: 20, values: careKitValue("integer", "131", units: "\"mm[Hg]\"", kind: "\"http://loinc.org|8480-6\"")
                + "," + careKitValue("integer", "85", units: "\"mm[Hg]\"", kind: "\"http://loinc.org|8462-4\"")),
        ].joined(separator: ",") + "]"

        let first = try run(file, into: store)
        XCTAssertEqual(first.received, 2)
        XCTAssertEqual(first.added, 2)
        XCTAssertEqual(first.queued.count, 2, "each app outcome is queued for export in the same transaction")
        let stored = try XCTUnwrap(try store.outcomes(EntityQuery(ids: ["\(bpUUID)_20"])).first)
        XCTAssertEqual(stored.taskID, bloodPressure, "the store names the task of the version")
        XCTAssertEqual(stored.values.map(\.value), [.integer(131), .integer(85)])
        XCTAssertEqual(stored.values.first?.kind, "http://loinc.org|8480-6")
        XCTAssertEqual(stored.metadata.source, "WalkApp")
        XCTAssertNil(stored.metadata.provenance)

        let again = try run(file, into: store)
        XCTAssertEqual(again.unchanged, 2, "the same outcomes again change nothing")
        XCTAssertEqual(again.queued, [])

        // A changed value is a new version; the app's tombstone deletes; a tombstone of nothing is nothing.
        let changed = careKitOutcome(task: walkUUID, occurrence: 2, values: careKitValue("boolean", "false"))
        let deletion = careKitOutcome(task: bpUUID, occurrence: 20, values: "", extra: #", "deletedDate": 815590000"#)
            .replacingOccurrences(of: #""deletedDate": null, "#, with: "")
        let nothing = careKitOutcome(task: bpUUID, occurrence: 21, values: "", extra: #", "deletedDate": 815590000"#)
            .replacingOccurrences(of: #""deletedDate": null, "#, with: "")
        let third = try run("{\"outcomes\": [\(changed), \(deletion), \(nothing)]}", into: store)
        XCTAssertEqual(third.updated, 1)
        XCTAssertEqual(third.deleted, 1)
        XCTAssertEqual(third.unchanged, 1)
        XCTAssertEqual(third.queued.count, 2)
        XCTAssertEqual(try store.outcomes(EntityQuery(ids: ["\(bpUUID)_20"])), [])
        XCTAssertEqual(try store.history(.outcome, id: "\(walkUUID)_2").count, 2)
    }

    func testABadOutcomeAnywhereStoresNothingAndSaysWhere() throws {
        let store = try importedStore()
        let walkUUID = try taskUUID(walk, in: store)
        let before = try store.statistics()
        let good = careKitOutcome(task: walkUUID, occurrence: 1, values: careKitValue("boolean", "true"))

        let unknownTask = careKitOutcome(task: UUID().uuidString, occurrence: 1, values: careKitValue("boolean", "true"))
        XCTAssertThrowsError(try run("[\(good), \(unknownTask)]", into: store)) { error in
            guard case AppOutcomeImportError.refused(_, let position, _, let reason) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(position, 1)
            XCTAssertTrue(reason.contains("no task version"), reason)
        }
        let noOccurrence = careKitOutcome(task: walkUUID, occurrence: 1_000_000, values: careKitValue("boolean", "true"))
        XCTAssertThrowsError(try run("[\(good), \(noOccurrence)]", into: store)) { error in
            XCTAssertTrue("\(error)".contains("outcome [1]"), "\(error)")
            XCTAssertTrue("\(error)".contains("occurrence 1000000"), "\(error)")
        }
        XCTAssertEqual(try store.statistics(), before, "a refused file stores nothing, not even its good outcomes")

        XCTAssertThrowsError(try run("[\(good), {\"taskUUID\": \"\(walkUUID)\"}]", into: store)) { error in
            XCTAssertEqual(error as? AppOutcomeImportError, .invalid(file: "app.json", path: "[1].taskOccurrenceIndex", reason: "'taskOccurrenceIndex' is missing"))
        }
        let wrongType = careKitOutcome(task: walkUUID, occurrence: 1, values: careKitValue("integer", "\"seven\""))
        XCTAssertThrowsError(try run("[\(wrongType)]", into: store)) { error in
            XCTAssertTrue("\(error)".hasPrefix("app.json: [0].values[0].value:"), "\(error)")
        }
        XCTAssertThrowsError(try run("[\(good),", into: store)) { error in
            guard case AppOutcomeImportError.unreadable(let file, _) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(file.hasPrefix("app.json:"), "the place of a syntax error: \(file)")
        }
        XCTAssertThrowsError(try run("42", into: store)) { error in
            XCTAssertTrue("\(error)".contains("expected an outcome"), "\(error)")
        }
    }

    /// An OCKOutcome as CareKit 4.0 encodes it: its own random `id`, values of five keys, `createdDate` set.
    private func careKit4Outcome(task: String, occurrence: Int, value: String) -> String {
        """
        {"id": "\(UUID().uuidString)", "taskUUID": "\(task)", "taskOccurrenceIndex": \(occurrence),
         "values": [{"createdDate": 815580300, "type": "boolean", "value": \(value)}],
         "uuid": "\(UUID().uuidString)", "effectiveDate": 815580000, "previousVersionUUIDs": [], "nextVersionUUIDs": [],
         "source": "WalkApp", "timezone": {"identifier": "America/Chicago"}}
        """
    }

    /// CareKit 4.0 outcomes, alone, in a revision record, in an `OCKEntity` array and in JSON Lines of
    /// dump objects, all read; another kind of entity in a record is refused with its position.
    func testReadsCareKit4OutcomesInEveryShapeAnAppOrADumpWrites() throws {
        let store = try importedStore()
        let walkUUID = try taskUUID(walk, in: store)
        let single = careKit4Outcome(task: walkUUID, occurrence: 3, value: "true")
        let decoded = try AppOutcomeImport.decode(Data(single.utf8), file: "app.json")
        XCTAssertEqual(decoded.map(\.id), ["\(walkUUID)_3"], "CareGate names an outcome by task version and occurrence, not the app's id")
        XCTAssertEqual(decoded.first?.values.first?.createdDate, Date(timeIntervalSinceReferenceDate: 815580300))

        let record = """
        {"entities": [{"type": "outcome", "object": \(single)},
                      {"type": "outcome", "object": \(careKit4Outcome(task: walkUUID, occurrence: 4, value: "false"))}],
         "knowledgeVector": {"processes": [{"id": "\(UUID().uuidString)", "clock": 3}]}}
        """
        XCTAssertEqual(try AppOutcomeImport.decode(Data(record.utf8), file: "app.json").map(\.taskOccurrenceIndex), [3, 4])
        let entities = "[{\"type\": \"outcome\", \"object\": \(single)}]"
        XCTAssertEqual(try AppOutcomeImport.decode(Data(entities.utf8), file: "app.json").count, 1)
        let lines = [
            "{\"patients\": [], \"outcomes\": [\(careKit4Outcome(task: walkUUID, occurrence: 5, value: "true").replacingOccurrences(of: "\n", with: ""))]}",
            "{\"patients\": [], \"outcomes\": [\(careKit4Outcome(task: walkUUID, occurrence: 6, value: "true").replacingOccurrences(of: "\n", with: ""))]}",
        ].joined(separator: "\n") + "\n"
        XCTAssertEqual(try AppOutcomeImport.decode(Data(lines.utf8), file: "app.json").map(\.taskOccurrenceIndex), [5, 6])

        let report = try run(record, into: store)
        XCTAssertEqual(report.added, 2)
        XCTAssertEqual(report.queued.count, 2)
        XCTAssertEqual(try run(record, into: store).unchanged, 2, "the same outcomes again change nothing")

        let mixed = """
        {"entities": [{"type": "outcome", "object": \(single)}, {"type": "carePlan", "object": {"id": "p", "title": "t", "effectiveDate": 0}}],
         "knowledgeVector": {"processes": []}}
        """
        XCTAssertThrowsError(try AppOutcomeImport.decode(Data(mixed.utf8), file: "app.json")) { error in
            guard case AppOutcomeImportError.invalid(_, let path, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(path, "entities[1].type")
        }
    }
}
