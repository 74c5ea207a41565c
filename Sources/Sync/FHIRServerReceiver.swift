import FHIR
import Foundation
import Pipeline

/// Sends export Bundles to a FHIR server (`POST [base]`) and reads each outcome's receipt from the
/// response Bundle, whose entries answer the request's in order.
///
/// An outcome is stored when every one of its entries answered 2xx; refused (for good) when one
/// answered 4xx, with the status and the OperationOutcome's text; sent again later when one answered
/// 429 or 5xx. A transaction that fails as a whole (the server refuses the Bundle with a 4xx) refuses
/// every outcome in it, since nothing of it was stored; no answer, a timeout or a 5xx for the whole
/// Bundle is thrown, for the caller to try again later.
public struct FHIRServerReceiver: ExportReceiver {
    public let client: FHIRClient
    /// Whether a Bundle may be sent again after a failure a retry can mend: true for PUT requests
    /// (``ExportOptions/Request/put``); with conditional requests each Provenance is a plain create.
    public let idempotent: Bool

    public init(client: FHIRClient, idempotent: Bool = true) {
        self.client = client
        self.idempotent = idempotent
    }

    public func receive(bundle: Data, entryCounts: [Int]) throws -> [ExportReceipt] {
        let response: Element
        do {
            // Every entry of an export Bundle is a PUT by a derived id or a conditional write (its
            // Provenance too, by the outcome version's uuid), so sending it again stores nothing twice.
            let answer = try client.send(
                "POST", path: "", body: bundle, contentType: client.format == .json ? "application/fhir+json" : "application/fhir+xml",
                idempotent: idempotent)
            response = try answer.resource()
        } catch let error as FHIRClientError {
            if case .status(_, let code, _, let detail) = error, (400..<500).contains(code), code != 429 {
                let reason = "the server refused the Bundle (\(code))" + (detail.map { ": \($0)" } ?? "")
                return entryCounts.map { _ in .refused(reason: reason) }
            }
            throw error
        }
        guard response.resourceType == "Bundle" else {
            throw FHIRClientError.notFHIR(request: "POST \(client.base.absoluteString)", reason: "expected a response Bundle, got a \(response.resourceType ?? "document")")
        }
        let answers = response.children(named: "entry").map { $0.child(named: "response") }
        var receipts: [ExportReceipt] = []
        var position = 0
        for count in entryCounts {
            let own = answers[min(position, answers.count)..<min(position + count, answers.count)]
            position += count
            receipts.append(Self.receipt(Array(own), expected: count))
        }
        return receipts
    }

    /// One outcome's receipt from the responses to its entries.
    private static func receipt(_ responses: [Element?], expected: Int) -> ExportReceipt {
        guard responses.count == expected else {
            return .retryLater(reason: "the server's answer has no response for some of its entries", after: 60)
        }
        var location: String?
        for response in responses {
            let status = response?.childValue("status") ?? ""
            let code = Int(status.prefix(3)) ?? 0
            let detail = response?.child(named: "outcome")?.children(named: "issue").compactMap { $0.childValue("diagnostics") }.joined(separator: "; ")
            let reason = "the server answered \(status)" + ((detail?.isEmpty == false) ? ": \(detail ?? "")" : "")
            switch code {
            case 200..<300: location = location ?? response?.childValue("location")
            case 429, 500..<600: return .retryLater(reason: reason, after: 60)
            default: return .refused(reason: reason)
            }
        }
        return .stored(location: location)
    }
}
