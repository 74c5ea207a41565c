import CareModel
import Foundation
import Hummingbird

/// The body of `POST /carekit/v1/shares`, read and checked before anything of the store is:
/// `{"contact": "<uuid>", "report": {"from": "YYYY-MM-DD", "to": "YYYY-MM-DD"}, "message": "..."}` or
/// `{"contact": "<uuid>", "document": "<base64 PDF>", "message": "..."}` (Docs/sharing.md).
///
/// Every refusal is an ``APIError`` that names the field and never echoes its value: 400 for a body that
/// is not such an object (a missing or unknown key, a wrong type, not base64), 413 for a document past
/// ``maximumDocumentBytes``, 422 for a document that is not a PDF or a message past
/// ``maximumMessageCharacters`` or with control characters. The period is checked against the patient's
/// time zone by the route (``ShareRoutes``).
struct ShareRequest: Equatable, Sendable {
    /// What is shared.
    enum Content: Equatable {
        /// The care-team report of the days `from` to `to` (inclusive), as the text gave them.
        case report(from: String, to: String)
        /// A PDF the app made.
        case document(Data)
    }

    /// The contact's version uuid, as the app's pull gave it.
    var contact: UUID
    var content: Content
    /// Nil when absent or empty.
    var message: String?

    /// The largest PDF a share carries (decoded): 4 MiB, well within the body limit once in base64.
    static let maximumDocumentBytes = 4 << 20
    /// The longest message, in characters.
    static let maximumMessageCharacters = 4_000
    /// The longest period a report covers, in days.
    static let maximumReportDays = 366
    static let keys: Set<String> = ["contact", "report", "document", "message"]

    /// Reads `body` (at most the route's body limit, already bounded).
    static func read(_ body: Data) throws -> ShareRequest {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
            throw APIError.badRequest("the body must be a JSON object with contact, report or document, and message")
        }
        if let unknown = object.keys.filter({ !keys.contains($0) }).sorted().first {
            throw APIError.badRequest("unknown key '\(unknown.prefix(40))' (a share has contact, report or document, and message)")
        }
        guard let contactText = object["contact"] as? String else { throw APIError.badRequest("contact (the contact's uuid) is required") }
        guard let contact = UUID(uuidString: contactText) else { throw APIError.badRequest("contact must be a contact's uuid") }
        let content: Content
        switch (object["report"], object["document"]) {
        case (nil, nil), (.some, .some):
            throw APIError.badRequest("a share has either report (a period) or document (a base64 PDF), not both")
        case (let report?, nil):
            guard let period = report as? [String: Any], let from = period["from"] as? String, let to = period["to"] as? String,
                  period.count == 2
            else { throw APIError.badRequest("report must be {\"from\": \"YYYY-MM-DD\", \"to\": \"YYYY-MM-DD\"}") }
            content = .report(from: from, to: to)
        case (nil, let document?):
            guard let text = document as? String else { throw APIError.badRequest("document must be a base64 PDF") }
            content = .document(try pdf(text))
        }
        var message: String?
        if let value = object["message"] {
            guard let text = value as? String else { throw APIError.badRequest("message must be a string") }
            message = try checked(message: text)
        }
        return ShareRequest(contact: contact, content: content, message: message)
    }

    /// The PDF of a base64 text: refused past the limit before it is decoded, and unless it starts as
    /// every PDF does (`%PDF-`, ISO 32000-1 §7.5.2).
    static func pdf(_ text: String) throws -> Data {
        // Base64 takes 4 characters per 3 bytes (padding included).
        guard text.utf8.count <= (maximumDocumentBytes + 2) / 3 * 4 else { throw tooLarge }
        guard let data = Data(base64Encoded: text) else { throw APIError.badRequest("document is not base64 (RFC 4648, with padding)") }
        guard data.count <= maximumDocumentBytes else { throw tooLarge }
        guard data.starts(with: Array("%PDF-".utf8)) else {
            throw APIError(.unprocessableContent, code: "not-a-pdf", message: "document is not a PDF (it must start with %PDF-)")
        }
        return data
    }

    static var tooLarge: APIError {
        APIError(.contentTooLarge, code: "document-too-large", message: "document is at most \(maximumDocumentBytes) bytes (before base64)")
    }

    /// `text` as a FHIR string can hold it (no control characters but tab, CR and LF), at most
    /// ``maximumMessageCharacters``; nil when empty.
    static func checked(message text: String) throws -> String? {
        guard text.count <= maximumMessageCharacters else {
            throw APIError(.unprocessableContent, code: "message-too-long", message: "message is at most \(maximumMessageCharacters) characters")
        }
        let allowed: Set<Unicode.Scalar> = ["\t", "\n", "\r"]
        guard !text.unicodeScalars.contains(where: { ($0.properties.generalCategory == .control && !allowed.contains($0)) }) else {
            throw APIError(.unprocessableContent, code: "bad-message", message: "message holds control characters (only tab and line breaks are kept)")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : text
    }

    /// The days of a report share, `from` to `to` inclusive, in `zone`: each a calendar date, in order,
    /// at most ``maximumReportDays`` days, none past the last day a schedule has events.
    static func period(from: String, to: String, in zone: TimeZone) throws -> DateInterval {
        let refused = { (message: String) in APIError(.unprocessableContent, code: "bad-period", message: message) }
        guard let first = DayText.interval(from, in: zone) else { throw refused("report.from must be a calendar date, YYYY-MM-DD") }
        guard let last = DayText.interval(to, in: zone) else { throw refused("report.to must be a calendar date, YYYY-MM-DD") }
        guard last.start >= first.start else { throw refused("report.to is before report.from") }
        guard last.end <= Schedule.horizon else { throw refused("report.to is past the last day a schedule has events") }
        let interval = DateInterval(start: first.start, end: last.end)
        guard (interval.duration / 86_400).rounded() <= Double(maximumReportDays) else {
            throw refused("a report covers at most \(maximumReportDays) days")
        }
        return interval
    }
}
