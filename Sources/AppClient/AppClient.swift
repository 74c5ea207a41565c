import CareModel
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client of CareGate's app API for app developers (and the tests): URLSession only, so it builds for
/// iOS, macOS and Linux alike, and CareKit-shaped Codable types.
///
/// ```swift
/// let client = AppClient(base: URL(string: "https://caregate.example.org")!, token: tokenFromYourLogin)
/// let tasks = try await client.tasks()
/// ```
///
/// ### Members
///
/// - ``health()``
/// - ``patient()``, ``carePlans()``, ``tasks()``, ``contacts()``, ``events(date:timeZone:)``, ``insights(from:to:timeZone:)``
/// - ``pull(knowledge:)``, ``push(revisions:knowledge:)``: CareKit's remote sync
public struct AppClient: Sendable {
    public let base: URL
    public var token: String
    private let session: URLSession

    public init(base: URL, token: String, session: URLSession = .shared) {
        self.base = base
        self.token = token
        self.session = session
    }

    /// Whether the server answers `GET /health` with `ok`.
    public func health() async throws -> Bool {
        let (data, response) = try await send(path: "health", authorized: false)
        return response.statusCode == 200 && (try? JSONDecoder().decode([String: String].self, from: data))?["status"] == "ok"
    }

    public func patient() async throws -> Patient { try await get(Patient.self, path: "carekit/v1/patient") }
    public func carePlans() async throws -> [CarePlan] { try await get([CarePlan].self, path: "carekit/v1/careplans") }
    public func tasks() async throws -> [CareTask] { try await get([CareTask].self, path: "carekit/v1/tasks") }
    public func contacts() async throws -> [Contact] { try await get([Contact].self, path: "carekit/v1/contacts") }

    /// The events of `date` (`YYYY-MM-DD`) in `timeZone` (an IANA name; the patient's by default), each
    /// with its task version and outcome.
    public func events(date: String, timeZone: String? = nil) async throws -> [DayEvent] {
        var query = [URLQueryItem(name: "date", value: date)]
        if let timeZone { query.append(URLQueryItem(name: "timeZone", value: timeZone)) }
        return try await get([DayEvent].self, path: "carekit/v1/events", query: query)
    }

    /// The Insights series from `from` to `to` (`YYYY-MM-DD`, both included, at most 366 days) in
    /// `timeZone` (the patient's by default): adherence per day and each measurement's daily mean.
    public func insights(from: String, to: String, timeZone: String? = nil) async throws -> InsightsChart {
        var query = [URLQueryItem(name: "from", value: from), URLQueryItem(name: "to", value: to)]
        if let timeZone { query.append(URLQueryItem(name: "timeZone", value: timeZone)) }
        return try await get(InsightsChart.self, path: "carekit/v1/insights", query: query)
    }

    /// CareKit's pull (`OCKRemoteSynchronizable.pullRevisions`): the revision records the device with
    /// `knowledge` has not seen, every page of them, the last one a record with no entities and the
    /// server's vector. An outcome is kept only in the last record that has a version of it, so that
    /// CareKit never merges an outcome and a later version of itself at once.
    public func pull(knowledge: KnowledgeVector) async throws -> [CareKitRevisionRecord] {
        let vector = String(decoding: try CareKitJSON.makeEncoder().encode(knowledge), as: UTF8.self)
        var query = [URLQueryItem(name: "knowledgeVector", value: vector)]
        var records: [CareKitRevisionRecord] = []
        for _ in 0..<100_000 {
            let (data, response) = try await send(path: "carekit/v1/revisions", query: query)
            try Self.check(response, data)
            do {
                records += try CareKitJSON.makeDecoder().decode([CareKitRevisionRecord].self, from: data)
            } catch {
                throw AppClientError.unexpectedBody
            }
            guard let next = Self.nextLink(response.value(forHTTPHeaderField: "Link")) else { return Self.lastVersionsOnly(records) }
            query = next
        }
        throw AppClientError.unexpectedBody
    }

    /// CareKit's push (`OCKRemoteSynchronizable.pushRevisions`): the device's revisions and knowledge. A
    /// `refused(status: 409, code: "pull first", ...)` means: pull, then push again.
    @discardableResult
    public func push(revisions: [CareKitRevisionRecord], knowledge: KnowledgeVector) async throws -> PushResult {
        let body = try CareKitJSON.makeEncoder().encode(PushRequest(deviceRevisions: revisions, deviceKnowledge: knowledge))
        let (data, response) = try await send(path: "carekit/v1/revisions", method: "POST", body: body)
        try Self.check(response, data)
        do {
            return try CareKitJSON.makeDecoder().decode(PushResult.self, from: data)
        } catch {
            throw AppClientError.unexpectedBody
        }
    }

    /// Readings the phone took (`POST /carekit/v1/observations`): `body` is one FHIR Observation, an array
    /// of them or a Bundle, as HealthKitOnFHIR writes HealthKit samples (Docs/readings.md). A batch the
    /// server refuses throws `refused(status: 422, code: "refused", ...)`, its message naming each refused
    /// reading's index and reason; nothing of it is stored.
    public func sendReadings(_ body: Data) async throws -> ReadingsResult {
        let (data, response) = try await send(path: "carekit/v1/observations", method: "POST", body: body)
        if response.statusCode == 422, let refusal = try? JSONDecoder().decode(ReadingsRefusal.self, from: data) {
            let reasons = refusal.refused.prefix(10).map { "reading \($0.index): \($0.reason)" }
            throw AppClientError.refused(status: 422, code: refusal.error, message: reasons.joined(separator: "; "))
        }
        try Self.check(response, data)
        do {
            return try JSONDecoder().decode(ReadingsResult.self, from: data)
        } catch {
            throw AppClientError.unexpectedBody
        }
    }

    /// The query of a `Link: <...>; rel="next"` header.
    static func nextLink(_ header: String?) -> [URLQueryItem]? {
        guard let header else { return nil }
        for part in header.split(separator: ",") where part.contains("rel=\"next\"") {
            guard let open = part.firstIndex(of: "<"), let close = part.firstIndex(of: ">"), open < close,
                  let components = URLComponents(string: String(part[part.index(after: open)..<close]))
            else { continue }
            return components.queryItems
        }
        return nil
    }

    /// `records` (the pages of one pull) without the outcome versions a later version of the pull
    /// descends from (`OutcomeVersionGraph`): the tips of a conflict all stay, for the device to resolve.
    public static func lastVersionsOnly(_ records: [CareKitRevisionRecord]) -> [CareKitRevisionRecord] {
        OutcomeVersionGraph.select(records)
    }

    func get<Value: Decodable>(_ type: Value.Type, path: String, query: [URLQueryItem] = []) async throws -> Value {
        let (data, response) = try await send(path: path, query: query)
        try Self.check(response, data)
        do {
            return try CareKitJSON.makeDecoder().decode(type, from: data)
        } catch {
            throw AppClientError.unexpectedBody
        }
    }

    /// Sends a request and returns the body and the response, whatever its status.
    func send(
        path: String, method: String = "GET", query: [URLQueryItem] = [], body: Data? = nil, authorized: Bool = true
    ) async throws -> (Data, HTTPURLResponse) {
        guard var components = URLComponents(url: base.appendingPathComponent(path), resolvingAgainstBaseURL: false) else {
            throw AppClientError.badURL
        }
        if !query.isEmpty { components.queryItems = query }
        guard let url = components.url else { throw AppClientError.badURL }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if authorized { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let session = self.session
        return try await withCheckedThrowingContinuation { continuation in
            // The callback form: FoundationNetworking's async `data(for:)` is not on every Linux toolchain.
            session.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(throwing: error)
                } else if let http = response as? HTTPURLResponse {
                    continuation.resume(returning: (data ?? Data(), http))
                } else {
                    continuation.resume(throwing: AppClientError.unexpectedBody)
                }
            }.resume()
        }
    }

    static func check(_ response: HTTPURLResponse, _ data: Data) throws {
        guard (200..<300).contains(response.statusCode) else {
            // Read as any JSON object: an error body may carry more than texts (consent-required names the terms).
            let body = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            throw AppClientError.refused(status: response.statusCode, code: body?["error"] as? String ?? "", message: body?["message"] as? String ?? "")
        }
    }
}

/// The body of a push.
struct PushRequest: Encodable {
    let deviceRevisions: [CareKitRevisionRecord]
    let deviceKnowledge: KnowledgeVector
}

/// What the server answers a push: versions stored, versions it had already, and its vector now.
public struct PushResult: Sendable, Codable, Equatable {
    public var stored: Int
    public var unchanged: Int
    public var knowledgeVector: KnowledgeVector
}

/// What the server answers readings: how many it stored, and how many it already had (the same samples
/// sent before).
public struct ReadingsResult: Sendable, Codable, Equatable {
    public var stored: Int
    public var known: Int
}

/// A refused batch of readings: each refused reading's index in the batch and why.
struct ReadingsRefusal: Decodable {
    struct Refused: Decodable {
        let index: Int
        let reason: String
    }
    let error: String
    let refused: [Refused]
}

/// Why a call of ``AppClient`` failed.
public enum AppClientError: Error, Equatable {
    /// The server answered with an error status (`pull first` on 409 means: pull, then push again).
    case refused(status: Int, code: String, message: String)
    case unexpectedBody
    case badURL
}
