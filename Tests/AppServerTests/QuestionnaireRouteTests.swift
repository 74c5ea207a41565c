@testable import AppServer
import CareModel
import Foundation
import Hummingbird
import HummingbirdTesting
import Store
import StoreTestSupport
import XCTest

/// `GET /carekit/v1/questionnaires` (issue 44, item 2): a Questionnaire only for a patient one of whose
/// survey tasks asks it; every other request the same 404, whether the Questionnaire exists or not.
final class QuestionnaireRouteTests: XCTestCase {
    static let mood = #"{"resourceType":"Questionnaire","url":"http://example.org/q/mood","version":"1","status":"active","item":[{"linkId":"q1","type":"integer"}]}"#
    static let secret = #"{"resourceType":"Questionnaire","url":"http://example.org/q/secret","version":"1","status":"active","item":[{"linkId":"s1","type":"boolean"}]}"#

    /// The fixture's two patients, pat-1's task asking mood|1 and pat-2's asking secret|1, both kept.
    private func fixture(_ tested: TestStore) throws -> AppServerFixture {
        let fixture = try AppServerFixture(tested)
        for (patient, json) in [("Patient/pat-1", Self.mood), ("Patient/pat-2", Self.secret)] {
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let url = try XCTUnwrap(object["url"] as? String)
            _ = try fixture.store.keep(StoredQuestionnaire(
                url: url, version: "1", sourceSystem: "default", resourceID: nil, contentHash: ContentHash.of(json), json: Data(json.utf8)))
            var task = try XCTUnwrap(fixture.tasks[patient])
            let next = CareTask(
                id: task.id, title: task.title, schedule: task.schedule, carePlanUUID: task.carePlanUUID,
                metadata: EntityMetadata(effectiveDate: AppServerFixture.day0.addingTimeInterval(86_400), tags: ["survey"],
                                         userInfo: ["questionnaire": url + "|1"], timezone: AppServerFixture.utc))
            task = next
            var batch = StoreBatch()
            batch.update(task)
            try fixture.store.apply(batch)
        }
        return fixture
    }

    func testThePatientGetsTheQuestionnaireTheirTaskAsks() async throws {
        try await forEachStore { tested in
            let fixture = try fixture(tested)
            let token = try fixture.token("Patient/pat-1")
            try await fixture.test { client in
                for uri in ["/carekit/v1/questionnaires?url=http://example.org/q/mood&version=1", "/carekit/v1/questionnaires?url=http://example.org/q/mood"] {
                    try await client.execute(uri: uri, method: .get, headers: fixture.bearer(token)) { response in
                        XCTAssertEqual(response.status, .ok, uri)
                        XCTAssertEqual(response.headers[.contentType], "application/fhir+json")
                        let body = response.json as? [String: Any]
                        XCTAssertEqual(body?["resourceType"] as? String, "Questionnaire")
                        XCTAssertEqual(body?["url"] as? String, "http://example.org/q/mood")
                    }
                }
            }
        }
    }

    func testAnotherPatientsQuestionnaireIsTheSame404AsAnUnknownOne() async throws {
        try await forEachStore { tested in
            let fixture = try fixture(tested)
            let token = try fixture.token("Patient/pat-1")
            try await fixture.test { client in
                var bodies: [String] = []
                for uri in [
                    "/carekit/v1/questionnaires?url=http://example.org/q/secret&version=1",  // pat-2's
                    "/carekit/v1/questionnaires?url=http://example.org/q/secret",
                    "/carekit/v1/questionnaires?url=http://example.org/q/unknown&version=1",  // nobody's
                    "/carekit/v1/questionnaires?url=http://example.org/q/mood&version=2",  // a version pat-1 is not asked
                ] {
                    try await client.execute(uri: uri, method: .get, headers: fixture.bearer(token)) { response in
                        XCTAssertEqual(response.status, .notFound, uri)
                        XCTAssertFalse(response.text.contains("secret"), response.text)
                        bodies.append(response.text)
                    }
                }
                XCTAssertEqual(Set(bodies).count, 1, "one body for all: \(bodies)")
                try await client.execute(uri: "/carekit/v1/questionnaires?url=http://example.org/q/secret&version=1", method: .get,
                                         headers: fixture.bearer(try fixture.token("Patient/pat-2"))) { response in
                    XCTAssertEqual(response.status, .ok, "pat-2's own task asks it")
                }
            }
        }
    }

    /// A push of a survey outcome that does not fit the Questionnaire its task asks is 422 naming the
    /// linkId, and nothing is stored; one that fits is stored.
    func testAPushThatDoesNotFitTheQuestionnaireIsRefusedWithTheLinkId() async throws {
        try await forEachStore { tested in
            let fixture = try fixture(tested)
            let token = try fixture.token("Patient/pat-1")
            let store = fixture.store
            try await fixture.test { client in
                let transport = SyncTransport(client: client, headers: fixture.bearer(token))
                var knowledge = KnowledgeVector()
                var task: CareTask?
                for record in try await transport.pull(knowledge) {
                    knowledge.merge(with: record.knowledgeVector)
                    for item in record.entities { if case .task(let found) = item.entity, found.metadata.tags?.contains("survey") ?? false { task = found } }
                }
                let survey = try XCTUnwrap(task)
                func push(_ values: [OutcomeValue]) throws -> Data {
                    let outcome = Outcome(taskUUID: survey.uuid, taskOccurrenceIndex: 2, values: values,
                                          metadata: EntityMetadata(effectiveDate: AppServerFixture.day0.addingTimeInterval(2 * 86_400), timezone: .gmt))
                    return try SyncTransport.pushBody([CareKitRevisionRecord(entities: [CareKitEntity(.outcome(outcome))], knowledgeVector: knowledge)], knowledge)
                }
                for (values, linkId) in [([OutcomeValue(.integer(3), kind: "zz")], "zz"), ([OutcomeValue(.text("three"), kind: "q1")], "q1")] {
                    try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: fixture.bearer(token), body: ByteBuffer(bytes: try push(values))) { response in
                        XCTAssertEqual(response.status, .unprocessableContent, response.text)
                        XCTAssertTrue(response.text.contains(linkId), response.text)
                    }
                }
                XCTAssertEqual(try store.outcomes(.current).count, 0, "nothing stored")
                try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: fixture.bearer(token),
                                         body: ByteBuffer(bytes: try push([OutcomeValue(.integer(3), kind: "q1")]))) { response in
                    XCTAssertEqual(response.status, .ok, response.text)
                }
            }
        }
    }

    func testAURLIsRequiredAndBounded() async throws {
        try await forEachStore { tested in
            let fixture = try fixture(tested)
            let token = try fixture.token("Patient/pat-1")
            try await fixture.test { client in
                for uri in ["/carekit/v1/questionnaires", "/carekit/v1/questionnaires?url=", "/carekit/v1/questionnaires?url=" + String(repeating: "a", count: 3000)] {
                    try await client.execute(uri: uri, method: .get, headers: fixture.bearer(token)) { response in
                        XCTAssertEqual(response.status, .badRequest, String(uri.prefix(60)))
                    }
                }
            }
        }
    }
}
