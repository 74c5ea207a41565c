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
/// ## Topics
///
/// - ``health()``
/// - ``patient()``, ``carePlans()``, ``tasks()``, ``contacts()``, ``events(date:timeZone:)``
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

    /// The events of `date` (`YYYY-MM-DD`), as JSON objects (`taskID`, `occurrence`, `start`, `end`, `outcome`).
    public func events(date: String, timeZone: String? = nil) async throws -> [[String: Any]] {
        var query = [URLQueryItem(name: "date", value: date)]
        if let timeZone { query.append(URLQueryItem(name: "timeZone", value: timeZone)) }
        let (data, response) = try await send(path: "carekit/v1/events", query: query)
        try Self.check(response, data)
        guard let events = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] else { throw AppClientError.unexpectedBody }
        return events
    }

    func get<Value: Decodable>(_ type: Value.Type, path: String) async throws -> Value {
        let (data, response) = try await send(path: path)
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
            let body = try? JSONDecoder().decode([String: String].self, from: data)
            throw AppClientError.refused(status: response.statusCode, code: body?["error"] ?? "", message: body?["message"] ?? "")
        }
    }
}

/// Why a call of ``AppClient`` failed.
public enum AppClientError: Error, Equatable {
    /// The server answered with an error status (`pull-first` on 409 means: pull, then push again).
    case refused(status: Int, code: String, message: String)
    case unexpectedBody
    case badURL
}
