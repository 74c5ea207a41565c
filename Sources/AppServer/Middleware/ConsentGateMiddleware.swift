import Foundation
import Hummingbird
import Pipeline
import Store

/// Consent as a gate (``ConsentGate``): under terms that say `required: true`, a patient without an
/// agreement to their current version is answered 403 `{"error": "consent-required", "terms": {"id",
/// "version"}}` by every route of the app API but the terms and the consents themselves, reads and
/// pushes alike, before the route runs (nothing read, nothing stored). The refusal is in the audit trail
/// (the access middleware writes it, with the note `consent-required`).
struct ConsentGateMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let gate: ConsentGate
    let store: any AsyncAppStore

    /// The routes open without consent.
    static let openPaths: Set<String> = ["/carekit/v1/\(ConsentRoutes.termsPath)", "/carekit/v1/\(ConsentRoutes.consentsPath)"]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard gate.isActive, let terms = gate.terms, !Self.openPaths.contains(Self.trimmed(request.uri.path)) else {
            return try await next(request, context)
        }
        let gate = gate
        let patientID = try context.patientID()
        guard try await store.read({ try gate.allows(patientID, in: $0) }) else {
            context.auditNote.set("consent-required")
            let body: [String: Any] = [
                "error": "consent-required", "message": "agree to the consent terms first (GET /carekit/v1/consent-terms, POST /carekit/v1/consents)",
                "terms": ["id": terms.id, "version": terms.version],
            ]
            return JSONResponse.make(try ConsentRoutes.json(body), status: .forbidden)
        }
        return try await next(request, context)
    }

    private static func trimmed(_ path: String) -> String {
        path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }
}
