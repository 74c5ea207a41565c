import Foundation

extension AppClient {
    /// What a share carries: the care-team report of a period (days `YYYY-MM-DD`, both included), or a
    /// PDF the app made.
    public enum ShareContent: Sendable, Equatable {
        case report(from: String, to: String)
        case document(Data)
    }

    /// Shares a report or PDF with a member of the patient's care team (`POST /carekit/v1/shares`,
    /// Docs/sharing.md): `contact` is the contact's uuid as a pull gave it. The same share sent again is
    /// found, not queued twice (``ShareResult/created`` false). A refusal throws
    /// ``AppClientError/refused(status:code:message:)`` (`not-care-team` for a friend or family member).
    public func share(contact: UUID, _ content: ShareContent, message: String? = nil) async throws -> ShareResult {
        var body: [String: Any] = ["contact": contact.uuidString.lowercased()]
        switch content {
        case .report(let from, let to): body["report"] = ["from": from, "to": to]
        case .document(let data): body["document"] = data.base64EncodedString()
        }
        if let message { body["message"] = message }
        let (data, response) = try await send(path: "carekit/v1/shares", method: "POST", body: try JSONSerialization.data(withJSONObject: body))
        try Self.check(response, data)
        do {
            var result = try JSONDecoder().decode(ShareResult.self, from: data)
            result.created = response.statusCode == 201
            return result
        } catch {
            throw AppClientError.unexpectedBody
        }
    }
}

/// What the server answers a share.
public struct ShareResult: Sendable, Codable, Equatable {
    /// The share's id (the Communication's `urn:caregate:share` identifier).
    public var id: String
    /// `Practitioner/<id>` or `PractitionerRole/<id>`.
    public var recipient: String
    /// Its outbox state: pending, sent, acknowledged or failed.
    public var state: String
    /// Whether the FHIR server has taken it.
    public var writtenBack: Bool
    /// Whether this call queued it (201), rather than finding it queued (200).
    public var created = false

    enum CodingKeys: String, CodingKey { case id, recipient, state, writtenBack }
}
