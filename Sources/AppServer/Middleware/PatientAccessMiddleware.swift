import Foundation
import Hummingbird
import Logging
import Store

/// Guards every route of patient data: the request must carry `Authorization: Bearer <JWT>` that
/// ``TokenVerifier`` accepts, and the patient the token is bound to must be in the store; the handler then
/// reads and writes that patient's data only (the patient comes from the token, never from the request).
///
/// Every request with a valid token is written to the audit trail, answered or refused: who (the token's
/// subject and patient), what (method and path), when, and the status, with the handler's note. The
/// answer waits for its entry's commit (``AuditTrailWriter``, group commit): an answer that cannot be
/// audited is not given. A write (a push) has its entry written before it is carried out, as
/// ``AuditEntry/unanswered``, and completed with its answer: a server killed in between leaves a stored
/// push with its entry, never without one.
///
/// Requests refused without a valid token are counted per minute, route pattern, status and reason
/// (``AuditTrailWriter/countRefusal(action:status:reason:at:)``), not written one entry each: anyone can
/// send them, and one row each would let anyone fill the disk (issue 41, item 8).
///
/// A client that hangs up before its request is read (``ClientHangUp``) is audited as 499 `client
/// closed` and logged at debug level: nothing failed on the server's side.
///
/// Tokens already verified are taken from ``VerifiedTokenCache``; the patient check is one indexed read
/// (``AsyncAppStore/patientExists(_:)``: the task waits for it holding no thread). A pull (`GET /carekit/v1/revisions` without a body) and
/// a day view (`GET /carekit/v1/events`) make that check themselves, in the same snapshot as their read
/// (the revision log; the patient, events and care plans), one read instead of two (the second read was a
/// tenth of an up-to-date pull's CPU), and first of all, as here: the answer is the same 403. Not when a
/// consent gate is active (``routesCheckPatient`` false), which reads the store before the route.
struct PatientAccessMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let verifier: any AccessTokenVerifier
    let store: any AsyncAppStore
    let tokens: VerifiedTokenCache
    let trail: AuditTrailWriter
    /// Whether a pull and a day view check their own patient (no middleware between this one and the
    /// route reads the store).
    var routesCheckPatient = true

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let action = "\(request.method.rawValue) \(request.uri.path)"
        do {
            context.token = try await verify(request)
        } catch {
            // No valid token: counted, not written (the route's pattern, never the path the client sent).
            let answer = APIError.from(error)
            let route = "\(request.method.rawValue) \(context.endpointPath ?? "(unmatched)")"
            trail.countRefusal(action: route, status: Int(answer.status.code), reason: (error as? TokenError)?.description ?? answer.code)
            return try answer.response(from: request, context: context)
        }
        var response: Response
        var detail: String?
        var intent: Int64?
        do {
            let patientID = context.token?.patientID ?? ""
            if routeChecksPatient(request, context) {
                context.patientCheckLeftToRoute = true
            } else {
                guard try await store.patientExists(patientID) else {
                    // A token for a patient the store no longer (or never) had: refused like another's data.
                    throw APIError.forbidden
                }
            }
            if request.method != .get, request.method != .head {
                // Durable before the write is: a server killed after the write's commit leaves this entry.
                intent = try await audited(request, context, status: AuditEntry.unansweredStatus, detail: AuditEntry.unansweredDetail, action: action)
            }
            response = try await next(request, context)
            detail = context.auditNote.value
        } catch AuditTrailFailure.notWritten {
            return try APIError.unavailable.response(from: request, context: context)
        } catch {
            var answer = APIError.from(error)
            if ClientHangUp.matches(error) {
                answer = ClientHangUp.answer
                context.logger.debug("client closed the connection mid-request", metadata: ["error.type": "\(type(of: error))"])
            } else if answer.status == .internalServerError {
                context.logger.error("request failed", metadata: ["error.type": "\(type(of: error))"])
                context.logger.debug("request failed", metadata: ["error": "\(error)"])
            }
            detail = answer.code + (context.auditNote.value.map { ": " + $0 } ?? "")
            response = try answer.response(from: request, context: context)
        }
        do {
            var entry = AuditEntry(
                date: Date(), subject: context.token?.subject, patientID: context.token?.patientID, action: action,
                status: Int(response.status.code), detail: detail, clientAddress: context.clientAddress)
            entry.id = intent
            try await trail.record(entry)
        } catch {
            // An answer that cannot be audited is not given.
            context.logger.error("audit trail not written", metadata: ["error.type": "\(type(of: error))"])
            return try APIError.unavailable.response(from: request, context: context)
        }
        return response
    }

    /// Writes an entry of the request (status and detail given) and returns its id; throws
    /// ``AuditTrailFailure/notWritten`` when it cannot be written.
    private func audited(_ request: Request, _ context: Context, status: Int, detail: String, action: String) async throws -> Int64 {
        do {
            return try await trail.record(AuditEntry(
                date: Date(), subject: context.token?.subject, patientID: context.token?.patientID, action: action, status: status, detail: detail,
                clientAddress: context.clientAddress))
        } catch {
            context.logger.error("audit trail not written", metadata: ["error.type": "\(type(of: error))"])
            throw AuditTrailFailure.notWritten
        }
    }

    /// Whether the route makes the patient check itself, before anything else it does (a pull, a day view).
    private func routeChecksPatient(_ request: Request, _ context: Context) -> Bool {
        guard routesCheckPatient, request.method == .get, !UploadLimitMiddleware.carriesBody(request) else { return false }
        return context.endpointPath == SyncRoutes.pullRoute || context.endpointPath == ViewRoutes.dayViewRoute
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

/// The audit trail could not be written before a write: the write is not carried out (503).
enum AuditTrailFailure: Error {
    case notWritten
}

extension Substring {
    /// This text without leading and trailing spaces and horizontal tabs.
    fileprivate var trimmingSpacesAndTabs: Substring {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else { return "" }
        return self[first...last]
    }
}
