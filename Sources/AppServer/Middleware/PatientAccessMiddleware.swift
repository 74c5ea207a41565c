import Foundation
import Hummingbird
import Logging
import Store

/// Guards every route of patient data: the request must carry `Authorization: Bearer <JWT>` that
/// ``TokenVerifier`` accepts, and the patient the token is bound to must be in the store; the handler then
/// reads and writes that patient's data only (the patient comes from the token, never from the request).
///
/// Every request that reaches it is written to the audit trail, answered or refused: who (the token's
/// subject and patient), what (method and path), when, and the status, with the handler's note. The
/// answer waits for its entry's commit (``AuditTrailWriter``, group commit): an answer that cannot be
/// audited is not given.
///
/// Tokens already verified are taken from ``VerifiedTokenCache``; the patient check is one indexed read,
/// run on the request's task (``StoreWork``).
struct PatientAccessMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let verifier: any AccessTokenVerifier
    let store: any AppSyncStore
    let tokens: VerifiedTokenCache
    let trail: AuditTrailWriter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let action = "\(request.method.rawValue) \(request.uri.path)"
        var response: Response
        var detail: String?
        do {
            let token = try await verify(request)
            context.token = token
            let (store, patientID) = (store, token.patientID)
            guard try StoreWork.read({ try store.patientExists(patientID) }) else {
                // A token for a patient the store no longer (or never) had: refused like another's data.
                throw APIError.forbidden
            }
            response = try await next(request, context)
            detail = context.auditNote.value
        } catch {
            let answer = APIError.from(error)
            detail = answer.code + (context.auditNote.value.map { ": " + $0 } ?? "")
            if answer.status == .internalServerError {
                context.logger.error("request failed", metadata: ["error.type": "\(type(of: error))"])
                context.logger.debug("request failed", metadata: ["error": "\(error)"])
            }
            response = try answer.response(from: request, context: context)
        }
        let entry = AuditEntry(
            date: Date(), subject: context.token?.subject, patientID: context.token?.patientID, action: action,
            status: Int(response.status.code), detail: detail)
        do {
            try await trail.record(entry)
        } catch {
            // An answer that cannot be audited is not given.
            context.logger.error("audit trail not written", metadata: ["error.type": "\(type(of: error))"])
            return try APIError.unavailable.response(from: request, context: context)
        }
        return response
    }

    /// The request's token, verified (or taken from the tokens verified before).
    private func verify(_ request: Request) async throws -> VerifiedToken {
        guard let header = request.headers[.authorization] else { throw TokenError.missing }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw TokenError.missing }
        // RFC 9110 allows spaces and tabs around a field's value and RFC 6750 one space after the scheme;
        // trimmed on the UTF-8 view (Foundation's trimming bridges to NSString: 4% of a pull's CPU).
        let text = String(parts[1].trimmingSpacesAndTabs)
        let access = TokenAccess(request.method)
        if let known = tokens.token(for: text, access: access) { return known }
        let verified = try await verifier.verify(text, access: access)
        tokens.remember(verified, for: text, access: access)
        return verified
    }
}

extension Substring {
    /// This text without leading and trailing spaces and horizontal tabs.
    fileprivate var trimmingSpacesAndTabs: Substring {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else { return "" }
        return self[first...last]
    }
}
