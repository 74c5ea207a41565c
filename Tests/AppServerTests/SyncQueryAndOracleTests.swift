import AppServer
import CareModel
import DeviceSimulation
import Foundation
import Hummingbird
import HummingbirdTesting
import Store
import StoreTestSupport
import XCTest

/// Two smaller items of issue 41 (9): a `knowledgeVector` written with `+` for spaces, as form encoding
/// writes it, is read; a push naming another patient's outcome uuid is answered as one naming a uuid that
/// does not exist (no existence oracle).
final class SyncQueryAndOracleTests: XCTestCase {
    /// application/x-www-form-urlencoded, as HTML forms and Python's `urlencode`/`requests` write a value:
    /// a space as `+`, every byte but letters, digits and `-._~` percent-encoded.
    private static func formEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: " "): out += "+"
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out += String(UnicodeScalar(byte))
            default: out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// A vector's JSON as Python's `json.dumps` writes it: a space after each `:` and `,`.
    private static func spacedJSON(_ vector: KnowledgeVector) -> String {
        "{\"processes\": [" + vector.uuids.map { "{\"id\": \"\($0.uuidString)\", \"clock\": \(vector.clock(for: $0))}" }.joined(separator: ", ") + "]}"
    }

    func testPlusForSpacesInTheVectorIsRead() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let headers = fixture.bearer(try fixture.token())
            let task = try XCTUnwrap(fixture.tasks["Patient/pat-1"])
            try await fixture.test { client in
                let transport = SyncTransport(client: client, headers: headers)
                let phone = SimulatedDevice(name: "phone", start: AppServerFixture.day0)
                try await phone.synchronize(transport)
                phone.record(task, occurrence: 0, value: 1)
                try await phone.synchronize(transport)
                for vector in [phone.knowledge, KnowledgeVector()] {
                    let form = Self.formEncoded(Self.spacedJSON(vector))
                    XCTAssertTrue(form.contains("+"), form)
                    let plus = try await client.execute(uri: "/carekit/v1/revisions?knowledgeVector=" + form, method: .get, headers: headers, body: nil)
                    XCTAssertEqual(plus.status, .ok, plus.text)
                    let usual = try await client.execute(uri: try SyncTransport.pullURI(vector), method: .get, headers: headers, body: nil)
                    XCTAssertEqual(plus.text, usual.text)
                }
                // Paged: the next page's link carries the vector, read again.
                let first = try await client.execute(
                    uri: "/carekit/v1/revisions?limit=1&knowledgeVector=" + Self.formEncoded(Self.spacedJSON(KnowledgeVector())), method: .get, headers: headers,
                    body: nil)
                let link = try XCTUnwrap(first.headers[HTTPFields.Element.Name("Link")!])
                let next = String(link[link.index(after: link.firstIndex(of: "<")!)..<link.firstIndex(of: ">")!])
                let second = try await client.execute(uri: next, method: .get, headers: headers, body: nil)
                XCTAssertEqual(second.status, .ok, second.text)
                // A `+` that reads as sent is kept: in a string of a member CareKit does not know, in an exponent.
                for sent in [#"{"processes":[],"note":"a+b"}"#, #"{"processes":[{"id":"00000000-0000-0000-0000-000000000001","clock":1e+2}]}"#] {
                    let literal = try await client.execute(
                        uri: "/carekit/v1/revisions?knowledgeVector=" + sent.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!,
                        method: .get, headers: headers, body: nil)
                    XCTAssertEqual(literal.status, .ok, literal.text)
                }
                // What is no vector either way is still a 400 with the path.
                for bad in [#"{"processes":+[{"id":+"x+y",+"clock":+1}]}"#, "+", #"{"processes":[{"id":+"x"}]}"#] {
                    let refused = try await client.execute(
                        uri: "/carekit/v1/revisions?knowledgeVector=" + bad.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "{", with: "%7B")
                            .replacingOccurrences(of: "}", with: "%7D").replacingOccurrences(of: "[", with: "%5B").replacingOccurrences(of: "]", with: "%5D"),
                        method: .get, headers: headers, body: nil)
                    XCTAssertEqual(refused.status, .badRequest, bad)
                    XCTAssertTrue(refused.text.contains("knowledgeVector"), refused.text)
                }
            }
        }
    }

    /// What a push of pat-1 answers, with `uuid` for its outcome's uuid and `named` for the version it names.
    private struct Answer: Equatable {
        var status: Int
        var stored: Int?
        var unchanged: Int?
        var clockMoved: Bool
        var error: String?
    }

    private static func answer(
        _ client: some TestClientProtocol, _ headers: HTTPFields, _ store: AnyTestStore, task: CareTask, occurrence: Int, uuid: UUID, named: [UUID] = []
    ) async throws -> Answer {
        let transport = SyncTransport(client: client, headers: headers)
        var knowledge = KnowledgeVector()
        for record in try await transport.pull(knowledge) { knowledge.merge(with: record.knowledgeVector) }
        var outcome = Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: occurrence, values: [OutcomeValue(.double(7))],
                              metadata: EntityMetadata(effectiveDate: AppServerFixture.day0, previousVersionUUIDs: named, timezone: .gmt))
        outcome.metadata.uuid = uuid
        let before = try store.serverClock().clock
        let body = try SyncTransport.pushBody([CareKitRevisionRecord(entities: [CareKitEntity(.outcome(outcome))], knowledgeVector: knowledge)], knowledge)
        let response = try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: headers, body: ByteBuffer(bytes: body))
        let json = response.json as? [String: Any]
        let vector = (json?["knowledgeVector"] as? [String: Any])?["processes"] as? [[String: Any]]
        let server = try store.serverClock()
        let served = vector?.first { ($0["id"] as? String) == server.processUUID.uuidString }?["clock"] as? Int
        return Answer(
            status: response.status.code, stored: json?["stored"] as? Int, unchanged: json?["unchanged"] as? Int,
            clockMoved: served.map { $0 == before + 1 } ?? false, error: json?["error"] as? String)
    }

    /// Another patient's outcome uuid, sent as a version of pat-1's own task or named as its previous
    /// version, is answered exactly as a uuid that does not exist; with another patient's task, the refusal
    /// is the same for both. Nothing of pat-2's changes.
    func testAnotherPatientsOutcomeUUIDIsAnsweredAsAnUnknownOne() async throws {
        try await forEachStore { tested in
            let fixture = try AppServerFixture(tested)
            let own = try XCTUnwrap(fixture.tasks["Patient/pat-1"])
            let foreignTask = try XCTUnwrap(fixture.tasks["Patient/pat-2"])
            let store = fixture.store
            let pat1 = fixture.bearer(try fixture.token())
            let pat2 = fixture.bearer(try fixture.token("Patient/pat-2"))
            try await fixture.test { client in
                let pat2Device = SimulatedDevice(name: "pat-2", start: AppServerFixture.day0)
                let pat2Transport = SyncTransport(client: client, headers: pat2)
                try await pat2Device.synchronize(pat2Transport)
                let foreign = pat2Device.record(foreignTask, occurrence: 0, value: 99)
                try await pat2Device.synchronize(pat2Transport)
                let pat2History = try store.history(.outcome, id: Outcome.id(taskUUID: foreignTask.uuid, occurrence: 0))
                XCTAssertEqual(pat2History.map(\.metadata.uuid), [foreign])

                let existing = try await Self.answer(client, pat1, store, task: own, occurrence: 1, uuid: foreign)
                let unknown = try await Self.answer(client, pat1, store, task: own, occurrence: 2, uuid: UUID())
                XCTAssertEqual(existing, unknown)
                XCTAssertEqual(existing, Answer(status: 200, stored: 1, unchanged: 0, clockMoved: true, error: nil))
                // The same push again stores nothing twice, either way.
                let again = try await Self.answer(client, pat1, store, task: own, occurrence: 1, uuid: foreign)
                XCTAssertEqual(again, Answer(status: 200, stored: 0, unchanged: 1, clockMoved: false, error: nil))
                // A later version naming the sent uuid follows the version stored for it: one tip.
                let next = try await Self.answer(client, pat1, store, task: own, occurrence: 1, uuid: UUID(), named: [foreign])
                XCTAssertEqual(next.stored, 1)
                let versions = try store.history(.outcome, id: Outcome.id(taskUUID: own.uuid, occurrence: 1))
                XCTAssertEqual(versions.count, 2)
                XCTAssertNotEqual(versions.first?.metadata.uuid, foreign, "pat-2's uuid stays pat-2's")
                XCTAssertEqual(versions.last?.metadata.previousVersionUUIDs, versions.first.map { [$0.metadata.uuid] })
                // Named as the previous version: left out either way.
                let namedExisting = try await Self.answer(client, pat1, store, task: own, occurrence: 3, uuid: UUID(), named: [foreign])
                let namedUnknown = try await Self.answer(client, pat1, store, task: own, occurrence: 4, uuid: UUID(), named: [UUID()])
                XCTAssertEqual(namedExisting, namedUnknown)
                XCTAssertEqual(namedExisting.status, 200)

                // With the other patient's task, the same refusal, word for word.
                func refusal(_ uuid: UUID) async throws -> (Int, String) {
                    let transport = SyncTransport(client: client, headers: pat1)
                    var knowledge = KnowledgeVector()
                    for record in try await transport.pull(knowledge) { knowledge.merge(with: record.knowledgeVector) }
                    var outcome = Outcome(taskUUID: foreignTask.uuid, taskOccurrenceIndex: 0, values: [],
                                          metadata: EntityMetadata(effectiveDate: AppServerFixture.day0, timezone: .gmt))
                    outcome.metadata.uuid = uuid
                    let body = try SyncTransport.pushBody([CareKitRevisionRecord(entities: [CareKitEntity(.outcome(outcome))], knowledgeVector: knowledge)], knowledge)
                    let response = try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: pat1, body: ByteBuffer(bytes: body))
                    return (response.status.code, response.text)
                }
                let (foreignStatus, foreignBody) = try await refusal(foreign)
                let (unknownStatus, unknownBody) = try await refusal(UUID())
                XCTAssertEqual(foreignStatus, 403)
                XCTAssertEqual(foreignStatus, unknownStatus)
                XCTAssertEqual(foreignBody, unknownBody)

                XCTAssertEqual(try store.history(.outcome, id: Outcome.id(taskUUID: foreignTask.uuid, occurrence: 0)).map(\.metadata.uuid), [foreign])
                let pulled = try await pat2Transport.pull(KnowledgeVector())
                XCTAssertEqual(pulled.flatMap(\.entities).filter { $0.type == .outcome }.map(\.entity.metadata.uuid), [foreign])
            }
        }
    }
}
