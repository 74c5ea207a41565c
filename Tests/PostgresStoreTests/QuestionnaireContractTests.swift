import CareModel
import Foundation
import PostgresStore
import Store
import TestSupport
import XCTest

/// The Questionnaires survey tasks ask are kept alike on SQLite and on a real PostgreSQL server: one per
/// url and version, the first content kept (a second with other content is a conflict), "the latest" the
/// one kept last; and a task version is read back by its uuid.
final class QuestionnaireContractTests: XCTestCase {
    private lazy var both = BothStores(for: self)
    private let t0 = Date(timeIntervalSince1970: 1_790_000_000.123_456_789)

    override func tearDown() {
        both.stop()
    }

    private func stores() throws -> [(name: String, store: any Store)] {
        [("SQLite", try both.sqlite("questionnaire-contract")), ("PostgreSQL", try both.postgres())]
    }

    private func questionnaire(_ url: String, _ version: String, id: String?, content: String, kept offset: Double) -> StoredQuestionnaire {
        let json = Data(#"{"resourceType":"Questionnaire","url":"\#(url)","version":"\#(version)","title":"\#(content)"}"#.utf8)
        return StoredQuestionnaire(
            url: url, version: version, sourceSystem: "https://ehr.example/fhir", resourceID: id, contentHash: ContentHash.of(json), json: json,
            keptDate: t0 + offset)
    }

    func testVersionsAreKeptOnceAndTheLatestIsTheOneKeptLastAlike() throws {
        let phq = "http://example.org/Questionnaire/phq-9"
        try assertAlike(try stores(), "questionnaires") { store in
            let questionnaires = try XCTUnwrap(store.questionnaires)
            var seen: [String] = []
            let first = questionnaire(phq, "2", id: "q1", content: "PHQ-9 v2", kept: 0)
            seen.append(exact(try questionnaires.keep(first)))
            seen.append(exact(try questionnaires.keep(first)))
            seen.append(exact(try questionnaires.keep(questionnaire(phq, "2", id: "q1", content: "changed", kept: 1))))
            seen.append(exact(try questionnaires.keep(questionnaire(phq, "1", id: "q1", content: "PHQ-9 v1", kept: 2))))
            seen.append(exact(try questionnaires.keep(questionnaire("http://example.org/Questionnaire/gad-7", "1", id: nil, content: "GAD-7", kept: 3))))
            seen.append(exact(try questionnaires.questionnaire(url: phq, version: "2")))
            seen.append(exact(try questionnaires.questionnaire(url: phq, version: "3")))
            seen.append(exact(try questionnaires.latestQuestionnaire(url: phq)))
            seen.append(exact(try questionnaires.latestQuestionnaire(url: "http://example.org/none")))
            seen.append(exact(try questionnaires.latestQuestionnaire(sourceSystem: "https://ehr.example/fhir", resourceID: "q1")))
            seen.append(exact(try questionnaires.latestQuestionnaire(sourceSystem: "https://other.example/fhir", resourceID: "q1")))
            XCTAssertEqual(try questionnaires.questionnaire(url: phq, version: "2"), first, "the first content stays, to the bit")
            XCTAssertEqual(try questionnaires.latestQuestionnaire(url: phq)?.version, "1", "kept last, whatever its version")
            return seen
        }
    }

    /// A task version is read by its uuid, a later version and a tombstone too; an unknown uuid is nil.
    func testTaskVersionsAreReadByUUIDAlike() throws {
        let utc = TimeZone(identifier: "UTC")!
        let day0 = Date(timeIntervalSince1970: 1_740_787_200)
        let patient = Patient(id: "p1", name: PersonName(givenName: "Ada", familyName: "Lovelace"), metadata: EntityMetadata(effectiveDate: day0, timezone: utc))
        let plan = CarePlan(id: "cp1", title: "Mood", patientUUID: patient.uuid, metadata: EntityMetadata(effectiveDate: day0, timezone: utc))
        let schedule = try Schedule.dailyAtTime(hour: 8, minutes: 0, start: day0, end: nil, text: nil, duration: .minutes(30), timeZone: utc)
        var task = CareTask(id: "survey", title: "PHQ-9", schedule: schedule, carePlanUUID: plan.uuid, metadata: EntityMetadata(effectiveDate: day0, timezone: utc))
        task.metadata.userInfo = ["questionnaire": "http://example.org/Questionnaire/phq-9|2"]
        var later = task
        later.metadata.uuid = UUID()
        later.metadata.effectiveDate = day0 + 86_400
        later.title = "PHQ-9 (weekly)"
        try assertAlike(try stores(), "task versions") { store in
            var batch = StoreBatch(date: t0)
            batch.add(patient)
            batch.add(plan)
            batch.add(task)
            batch.update(later)
            let summary: BatchSummary
            do {
                summary = try store.apply(batch)
            } catch PostgresStoreError.unavailable {
                throw XCTSkip("the PostgreSQL entity writer has not landed in this branch: task versions cannot be written yet")
            }
            let questionnaires = try XCTUnwrap(store.questionnaires)
            let uuids = Array(summary.versionUUIDs.suffix(2))
            XCTAssertEqual(uuids.count, 2)
            // Version uuids the store made differ between stores: each is checked, then written as its place.
            var read: [CareTask?] = try uuids.map { try questionnaires.taskVersion(uuid: $0) }
            XCTAssertEqual(read.map { $0?.uuid }, uuids)
            func placed(_ uuid: UUID) -> UUID {
                uuids.firstIndex(of: uuid).map { UUID(uuidString: "00000000-0000-4000-8000-00000000000\($0)")! } ?? uuid
            }
            read = read.map { version in
                version.map { found in
                    var task = found
                    task.metadata.uuid = placed(task.metadata.uuid)
                    task.metadata.previousVersionUUIDs = task.metadata.previousVersionUUIDs.map(placed)
                    task.metadata.nextVersionUUIDs = task.metadata.nextVersionUUIDs.map(placed)
                    return task
                }
            }
            // Compared as values (CareTask's ==, its dates to the bit): its calendar's mirror holds caches.
            return read + [try questionnaires.taskVersion(uuid: UUID())]
        }
    }
}
