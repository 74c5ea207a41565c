import Foundation
import Hummingbird
import Mapping
import Pipeline
import Store

/// The operator page (`/operator`), for a person running the gateway: server-rendered HTML, no script,
/// open to an operator's token only (``OperatorAccess``: 401 without one, 403 with a patient's).
///
/// - `GET /operator/login?token=`: sets the token as an HttpOnly, SameSite=Strict cookie for /operator and
///   redirects to the page (303), so that a browser can open it.
/// - `GET /operator`: the page (``OperatorPage``).
/// - `GET /operator/sync-runs/{id}`: one sync run with its report (``OperatorSyncRunPage``).
/// - `POST /operator/dead-letters/{id}/retry`: replays one dead letter with the server's mappings, as
///   `caregate store dead-letters retry ID` does (``DeadLetterReplay``).
/// - `POST /operator/outbox/{id}/retry`: puts a failed outbox entry back in the queue, as
///   `caregate outbox retry ID` does.
/// - `POST /operator/logout`: clears the cookie (Max-Age=0) and redirects (303) to
///   `GET /operator/logged-out`, a page saying so.
///
/// A POST needs the form's proof besides the token (``OperatorAccess/isSameOrigin(_:fields:token:)``)
/// and answers with the page and a notice of what it did.
///
/// Every view and action of an operator is written to the audit trail (``OperatorAudit``); requests
/// refused for want of an operator's token are counted as the app API's are.
struct OperatorRoutes: Sendable {
    let store: any AsyncAppStore
    let access: OperatorAccess
    let mappings: MappingSet?
    let trail: AuditTrailWriter

    func register(on router: Router<AppRequestContext>) {
        let group = router.group("operator")
        let audit = OperatorAudit(trail: trail)
        group.get("login") { request, context in try await login(request, context, audit) }
        group.get("logged-out") { _, _ in
            OperatorHTML.response(OperatorHTML.document(title: "CareGate operator", body: "<h1>CareGate operator</h1><p>You are logged out.</p>"))
        }
        group.get { request, context in
            try await audit.view(request, context, access: access) { granted in (.ok, try await rendered(granted), "page") }
        }
        group.get("sync-runs/:id") { request, context in
            try await audit.view(request, context, access: access) { _ in try await syncRun(context) }
        }
        group.post("dead-letters/:id/retry") { request, context in
            try await action(request, context, audit) { id in try await replay(id) }
        }
        group.post("outbox/:id/retry") { request, context in
            try await action(request, context, audit) { id in try await requeue(id) }
        }
        group.post("logout") { request, context in try await logout(request, context, audit) }
    }

    /// The page for `granted`, with `notice`: its reads of the store are one unit of ``AsyncAppStore/read(_:)``.
    private func rendered(_ granted: OperatorAccess.Granted, notice: String? = nil) async throws -> String {
        let (mappings, subject, proof) = (mappings, granted.verified.subject, OperatorAccess.formProof(for: granted.token))
        return try await store.read { store in
            try OperatorPage(store: store, mappings: mappings, subject: subject, proof: proof).render(notice: notice)
        }
    }

    /// Sets the cookie of a verified operator's token (audited: the path only, never the token).
    private func login(_ request: Request, _ context: AppRequestContext, _ audit: OperatorAudit) async throws -> Response {
        let token = request.uri.queryParameters.get("token") ?? ""
        guard token.utf8.count <= SignedToken.maximumLength else {
            return OperatorRefusal(status: .unauthorized, message: TokenError.malformed.description).response
        }
        let verified: VerifiedOperator
        do {
            verified = try await access.verifier.verify(token)
        } catch .notAnOperator {
            return OperatorRefusal(status: .forbidden, message: OperatorTokenError.notAnOperator.description).response
        } catch let error {
            return OperatorRefusal(status: .unauthorized, message: error.description).response
        }
        do {
            try await audit.record(request, context, subject: verified.subject, status: .seeOther, detail: "logged in")
        } catch {
            return OperatorAudit.unavailable
        }
        let seconds = max(0, Int(verified.expires.timeIntervalSinceNow))
        return Response(status: .seeOther, headers: [
            .location: "/operator", .cacheControl: "no-store",
            .setCookie: "\(OperatorAccess.cookieName)=\(token); Max-Age=\(seconds); Path=/operator; HttpOnly; SameSite=Strict",
        ])
    }

    /// Run `{id}`'s page: 404 when the store has no such run.
    private func syncRun(_ context: AppRequestContext) async throws -> (HTTPResponse.Status, String, String) {
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            return (.badRequest, OperatorRefusal.page("the id must be a positive number"), "bad id")
        }
        guard let run = try await store.read({ try $0.syncRunHistory?.syncRun(id: id) }) else {
            return (.notFound, OperatorRefusal.page("no sync run #\(id)"), "no sync run #\(id)")
        }
        return (.ok, OperatorSyncRunPage(run: run).render(), "sync run #\(id)")
    }

    /// What the check of a POST came to: access granted, or the refusal with the operator it refused
    /// (nil when the token itself was refused).
    private enum FormCheck {
        case granted(OperatorAccess.Granted)
        case refused(OperatorRefusal, subject: String?)
    }

    /// Checks the token and the form's proof of a POST; a request refused for its token is counted.
    private func checkForm(_ request: Request, _ context: AppRequestContext, _ audit: OperatorAudit) async -> FormCheck {
        switch await access.check(request) {
        case .failure(let refusal):
            audit.countRefusal(request, context, refusal)
            return .refused(refusal, subject: nil)
        case .success(let granted):
            let fields = (try? await OperatorAccess.formFields(request)) ?? [:]
            guard OperatorAccess.isSameOrigin(request, fields: fields, token: granted.token) else {
                let refusal = OperatorRefusal(status: .forbidden, message: "the form's proof is missing or wrong: reload the operator page and try again")
                return .refused(refusal, subject: granted.verified.subject)
            }
            return .granted(granted)
        }
    }

    /// An action on the thing `{id}` names: checked (token, form proof, id), audited before it is done
    /// and completed after, and answered with the page and its notice.
    private func action(
        _ request: Request, _ context: AppRequestContext, _ audit: OperatorAudit,
        _ work: @escaping (Int64) async throws -> (HTTPResponse.Status, String)
    ) async throws -> Response {
        let granted: OperatorAccess.Granted
        switch await checkForm(request, context, audit) {
        case .refused(let refusal, let subject):
            // A refusal of an operator's request (no proof) is theirs: audited.
            if let subject { try? await audit.record(request, context, subject: subject, status: refusal.status, detail: refusal.message) }
            return refusal.response
        case .granted(let value): granted = value
        }
        let subject = granted.verified.subject
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            let refusal = OperatorRefusal(status: .badRequest, message: "the id must be a positive number")
            try? await audit.record(request, context, subject: subject, status: refusal.status, detail: refusal.message)
            return refusal.response
        }
        let intent: Int64
        do {
            intent = try await audit.record(request, context, subject: subject, status: AuditEntry.unansweredStatus, detail: AuditEntry.unansweredDetail)
        } catch {
            return OperatorAudit.unavailable
        }
        let (status, notice) = try await work(id)
        // Completed before the page is rendered: the page's trail shows the action as it ended.
        try? await audit.record(request, context, subject: subject, status: status, detail: notice, id: intent)
        return OperatorHTML.response(try await rendered(granted, notice: notice), status: status)
    }

    /// Clears the cookie and redirects to the page that says so.
    private func logout(_ request: Request, _ context: AppRequestContext, _ audit: OperatorAudit) async throws -> Response {
        switch await checkForm(request, context, audit) {
        case .refused(let refusal, let subject):
            if let subject { try? await audit.record(request, context, subject: subject, status: refusal.status, detail: refusal.message) }
            return refusal.response
        case .granted(let granted):
            do {
                try await audit.record(request, context, subject: granted.verified.subject, status: .seeOther, detail: "logged out")
            } catch {
                return OperatorAudit.unavailable
            }
            return Response(status: .seeOther, headers: [
                .location: "/operator/logged-out", .cacheControl: "no-store",
                .setCookie: "\(OperatorAccess.cookieName)=; Max-Age=0; Path=/operator; HttpOnly; SameSite=Strict",
            ])
        }
    }

    private func replay(_ id: Int64) async throws -> (HTTPResponse.Status, String) {
        guard let mappings else { return (.conflict, "this server was started without mappings: replay with caregate store dead-letters retry") }
        let outcome = try await store.write { store -> DeadLetterReplay.Report.Outcome? in
            guard try store.deadLetter(id: id) != nil else { return nil }
            let replay = DeadLetterReplay(gateway: Gateway(store: store, mappings: mappings))
            return try replay.retry(ids: [id]).letters.first?.outcome
        }
        guard let outcome else { return (.notFound, "no dead letter #\(id)") }
        switch outcome {
        case .imported, .superseded, .requeued: return (.ok, "dead letter #\(id) replayed: resolved")
        case .alreadyResolved: return (.ok, "dead letter #\(id) was already resolved")
        case .failedAgain(let reason): return (.ok, "dead letter #\(id) failed again: \(reason)")
        case .notReplayable(let why): return (.ok, "dead letter #\(id) cannot be replayed: \(why)")
        }
    }

    private func requeue(_ id: Int64) async throws -> (HTTPResponse.Status, String) {
        return try await store.write { store -> (HTTPResponse.Status, String) in
            guard let entry = try store.outboxEntry(id: id) else { return (.notFound, "no outbox entry #\(id)") }
            guard entry.state == .failed else { return (.conflict, "outbox entry #\(id) is \(entry.state), not failed: there is nothing to retry") }
            var batch = StoreBatch()
            batch.requeue(entry, at: Date())
            try store.apply(batch)
            return (.ok, "outbox entry #\(id) requeued")
        }
    }
}
