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
/// - `POST /operator/dead-letters/{id}/retry`: replays one dead letter with the server's mappings, as
///   `caregate store dead-letters retry ID` does (``DeadLetterReplay``).
/// - `POST /operator/outbox/{id}/retry`: puts a failed outbox entry back in the queue, as
///   `caregate outbox retry ID` does.
///
/// A POST needs the form's proof besides the token (``OperatorAccess/isSameOrigin(_:fields:token:)``)
/// and answers with the page and a notice of what it did.
struct OperatorRoutes: Sendable {
    let store: any AppSyncStore
    let access: OperatorAccess
    let mappings: MappingSet?

    func register(on router: Router<AppRequestContext>) {
        let group = router.group("operator")
        group.get("login") { request, _ in try await login(request) }
        group.get { request, _ in
            switch await access.check(request) {
            case .failure(let refusal): return refusal.response
            case .success(let granted): return try html(page(granted).render())
            }
        }
        group.post("dead-letters/:id/retry") { request, context in
            try await action(request, context) { id in try await replay(id) }
        }
        group.post("outbox/:id/retry") { request, context in
            try await action(request, context) { id in try await requeue(id) }
        }
    }

    private func page(_ granted: OperatorAccess.Granted) -> OperatorPage {
        OperatorPage(store: store, mappings: mappings, subject: granted.verified.subject, proof: OperatorAccess.formProof(for: granted.token))
    }

    private func login(_ request: Request) async throws -> Response {
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
        let seconds = max(0, Int(verified.expires.timeIntervalSinceNow))
        return Response(status: .seeOther, headers: [
            .location: "/operator", .cacheControl: "no-store",
            .setCookie: "\(OperatorAccess.cookieName)=\(token); Max-Age=\(seconds); Path=/operator; HttpOnly; SameSite=Strict",
        ])
    }

    /// An action on the thing `{id}` names: checked (token, form proof, id), done, and answered with the
    /// page and its notice.
    private func action(
        _ request: Request, _ context: AppRequestContext, _ work: @escaping (Int64) async throws -> (HTTPResponse.Status, String)
    ) async throws -> Response {
        let granted: OperatorAccess.Granted
        switch await access.check(request) {
        case .failure(let refusal): return refusal.response
        case .success(let value): granted = value
        }
        let fields = (try? await OperatorAccess.formFields(request)) ?? [:]
        guard OperatorAccess.isSameOrigin(request, fields: fields, token: granted.token) else {
            return OperatorRefusal(status: .forbidden, message: "the form's proof is missing or wrong: reload the operator page and try again").response
        }
        guard let text = context.parameters.get("id"), let id = Int64(text), id > 0 else {
            return OperatorRefusal(status: .badRequest, message: "the id must be a positive number").response
        }
        let (status, notice) = try await work(id)
        return try html(page(granted).render(notice: notice), status: status)
    }

    private func replay(_ id: Int64) async throws -> (HTTPResponse.Status, String) {
        guard let mappings else { return (.conflict, "this server was started without mappings: replay with caregate store dead-letters retry") }
        let store = store
        let outcome = try await StoreWork.write { () -> DeadLetterReplay.Report.Outcome? in
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
        let store = store
        return try await StoreWork.write { () -> (HTTPResponse.Status, String) in
            guard let entry = try store.outboxEntry(id: id) else { return (.notFound, "no outbox entry #\(id)") }
            guard entry.state == .failed else { return (.conflict, "outbox entry #\(id) is \(entry.state), not failed: there is nothing to retry") }
            var batch = StoreBatch()
            batch.requeue(entry, at: Date())
            try store.apply(batch)
            return (.ok, "outbox entry #\(id) requeued")
        }
    }

    private func html(_ text: String, status: HTTPResponse.Status = .ok) throws -> Response {
        Response(
            status: status,
            headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store", .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
