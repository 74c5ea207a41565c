import Foundation
import Hummingbird
import Store

/// The operator page's entries in the audit trail: every page an operator views and every action they
/// take, written through the server's ``AuditTrailWriter`` (subject `operator:NAME`, action the method
/// and path, e.g. `POST /operator/dead-letters/12/retry`, the status answered, the notice as detail, the
/// client's address). Requests refused for want of an operator's token are counted, not written, as the
/// app API's are.
///
/// As for the app API, what cannot be audited is not done: an action's entry is written (as
/// ``AuditEntry/unansweredStatus``) before the action and completed after it, and a page whose entry
/// cannot be written is not shown (503).
struct OperatorAudit: Sendable {
    /// The longest action (method and path) kept.
    static let maximumActionLength = 512
    let trail: AuditTrailWriter

    /// A page view: the token checked, the page rendered by `render` (status, HTML, detail for the trail),
    /// audited, then answered.
    func view(
        _ request: Request, _ context: AppRequestContext, access: OperatorAccess,
        _ render: (OperatorAccess.Granted) async throws -> (HTTPResponse.Status, String, String)
    ) async throws -> Response {
        switch await access.check(request) {
        case .failure(let refusal):
            countRefusal(request, context, refusal)
            return refusal.response
        case .success(let granted):
            let (status, text, detail) = try await render(granted)
            do {
                try await record(request, context, subject: granted.verified.subject, status: status, detail: detail)
            } catch {
                return Self.unavailable
            }
            return OperatorHTML.response(text, status: status)
        }
    }

    /// Writes the entry of `request` (`id` completes an entry written before); returns its id.
    @discardableResult
    func record(
        _ request: Request, _ context: AppRequestContext, subject: String, status: HTTPResponse.Status, detail: String, id: Int64? = nil
    ) async throws -> Int64 {
        try await record(request, context, subject: subject, status: Int(status.code), detail: detail, id: id)
    }

    @discardableResult
    func record(_ request: Request, _ context: AppRequestContext, subject: String, status: Int, detail: String, id: Int64? = nil) async throws -> Int64 {
        let action = String("\(request.method.rawValue) \(request.uri.path)".prefix(Self.maximumActionLength))
        do {
            return try await trail.record(AuditEntry(
                id: id, date: Date(), subject: subject, patientID: nil, action: action, status: status, detail: String(detail.prefix(1_000)),
                clientAddress: context.clientAddress))
        } catch {
            context.logger.error("audit trail not written", metadata: ["error.type": "\(type(of: error))"])
            throw AuditTrailFailure.notWritten
        }
    }

    /// Counts a request refused for want of an operator's token (the route's pattern, never the path sent).
    func countRefusal(_ request: Request, _ context: AppRequestContext, _ refusal: OperatorRefusal) {
        trail.countRefusal(
            action: "\(request.method.rawValue) \(context.endpointPath ?? "(unmatched)")", status: Int(refusal.status.code), reason: refusal.message)
    }

    /// The answer when the trail cannot be written: nothing shown, nothing done.
    static var unavailable: Response {
        OperatorRefusal(status: .serviceUnavailable, message: "the audit trail cannot be written: nothing was shown or done; try again later").response
    }
}
