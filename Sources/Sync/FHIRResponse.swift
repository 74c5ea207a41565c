import FHIR
import Foundation

/// One answer of a FHIR server.
public struct FHIRResponse: Sendable {
    /// `METHOD url`, for messages.
    public let request: String
    public let status: Int
    /// Header fields, names in lower case.
    public let headers: [String: String]
    public let body: Data

    /// `Location` (or `Content-Location`): where a created or updated resource lives.
    public var location: String? { headers["location"] ?? headers["content-location"] }
    /// `ETag`: the version (`W/"3"`).
    public var etag: String? { headers["etag"] }
    /// Seconds from `Retry-After` (a number of seconds or an HTTP date), if the server sent it.
    public var retryAfter: TimeInterval? {
        guard let text = headers["retry-after"]?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = TimeInterval(text) { return max(0, seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text).map { max(0, $0.timeIntervalSinceNow) }
    }

    /// The body as a FHIR resource (JSON or XML, by its content type and, failing that, its first byte).
    public func resource() throws -> Element {
        let type = headers["content-type"]?.lowercased() ?? ""
        let first = body.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) })
        let isXML = type.contains("xml") || (!type.contains("json") && first == UInt8(ascii: "<"))
        if type.contains("html") || (isXML && body.prefix(512).range(of: Data("<html".utf8)) != nil) {
            throw FHIRClientError.notFHIR(request: request, reason: "the server answered with an HTML page, not FHIR")
        }
        do {
            return isXML ? try FHIRXML.read(body) : try FHIRJSON.read(body)
        } catch {
            throw FHIRClientError.notFHIR(request: request, reason: "\(error)")
        }
    }

    /// What an error answer says: its OperationOutcome's issues, else the start of its body.
    var errorDetail: String? {
        if let outcome = try? resource(), outcome.resourceType == "OperationOutcome" {
            let texts = outcome.children(named: "issue").compactMap { issue in
                issue.childValue("diagnostics") ?? issue.child(named: "details")?.childValue("text")
            }
            if !texts.isEmpty { return texts.joined(separator: "; ") }
        }
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }
}
