import AppClient
import CareModel
import DeviceSimulation
import Foundation
import Hummingbird
import HummingbirdTesting
import XCTest

/// Pull and push over the in-memory router, as AppClient does over HTTP.
struct SyncTransport: RevisionTransport {
    let client: any TestClientProtocol
    let headers: HTTPFields

    func pull(_ knowledge: KnowledgeVector) async throws -> [CareKitRevisionRecord] {
        try await pull(knowledge, limit: nil)
    }

    func pull(_ knowledge: KnowledgeVector, limit: Int?) async throws -> [CareKitRevisionRecord] {
        var uri = try Self.pullURI(knowledge) + (limit.map { "&limit=\($0)" } ?? "")
        var records: [CareKitRevisionRecord] = []
        for _ in 0..<10_000 {
            let response = try await client.execute(uri: uri, method: .get, headers: headers, body: nil)
            XCTAssertEqual(response.status, .ok, String(buffer: response.body))
            records += try CareKitJSON.makeDecoder().decode([CareKitRevisionRecord].self, from: Data(buffer: response.body))
            guard let link = response.headers[HTTPFields.Element.Name("Link")!],
                  let open = link.firstIndex(of: "<"), let close = link.firstIndex(of: ">")
            else { break }
            uri = String(link[link.index(after: open)..<close])
        }
        return AppClient.lastVersionsOnly(records)
    }

    static func pullURI(_ knowledge: KnowledgeVector) throws -> String {
        let json = String(decoding: try CareKitJSON.makeEncoder().encode(knowledge), as: UTF8.self)
        var components = URLComponents()
        components.queryItems = [URLQueryItem(name: "knowledgeVector", value: json)]
        return "/carekit/v1/revisions?" + (components.percentEncodedQuery ?? "")
    }

    /// The status of the push.
    func push(_ revisions: [CareKitRevisionRecord], _ knowledge: KnowledgeVector) async throws -> Int {
        let body = try Self.pushBody(revisions, knowledge)
        let response = try await client.execute(uri: "/carekit/v1/revisions", method: .post, headers: headers, body: ByteBuffer(bytes: body))
        return Int(response.status.code)
    }

    static func pushBody(_ revisions: [CareKitRevisionRecord], _ knowledge: KnowledgeVector) throws -> Data {
        struct Body: Encodable {
            let deviceRevisions: [CareKitRevisionRecord]
            let deviceKnowledge: KnowledgeVector
        }
        return try CareKitJSON.makeEncoder().encode(Body(deviceRevisions: revisions, deviceKnowledge: knowledge))
    }
}
