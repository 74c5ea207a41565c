import FHIRCore
import Foundation
import Hummingbird
import Pipeline
import Store

/// The consent routes (Docs/consent.md), open to a patient whatever their consent:
///
/// - `GET /carekit/v1/consent-terms`: the operator's terms (`id`, `version`, `title`, `format`,
///   `document`, `permits`, `required`), so that the app shows exactly the text agreed to; 404 when the
///   server publishes none.
/// - `POST /carekit/v1/consents`: the token's patient's decision (``ConsentSubmission``), recorded and
///   queued for the provider (``ConsentRecorder``): 201 with the decision as recorded, 200 when the same
///   submission was recorded already; 400, 403, 413 or 422 with the reason, nothing stored.
/// - `GET /carekit/v1/consents`: the patient's decisions, oldest first.
///
/// Each answer's audit note names the decision and terms, never the document or the signature.
struct ConsentRoutes {
    let store: any AsyncAppStore
    let terms: ConsentTerms?

    static let termsPath = "consent-terms"
    static let consentsPath = "consents"

    func register(on group: RouterGroup<AppRequestContext>) {
        group.get(.init(stringLiteral: Self.termsPath)) { _, context -> Response in
            _ = try context.patientID()
            guard let terms else { throw APIError(.notFound, code: "no-terms", message: "this server publishes no consent terms") }
            context.auditNote.set("consent terms \(terms.id) version \(terms.version)")
            return JSONResponse.make(try Self.json(Self.termsObject(terms)))
        }
        group.get(.init(stringLiteral: Self.consentsPath)) { _, context -> Response in
            let patientID = try context.patientID()
            let decisions = try await store.consentDecisions(patientID: patientID)
            let sent = try await writtenBack(decisions.map(\.uuid))
            context.auditNote.set("\(decisions.count) consent decisions")
            return JSONResponse.make(try Self.json(["consents": decisions.map { Self.decisionObject($0, writtenBack: sent.contains($0.uuid)) }]))
        }
        group.post(.init(stringLiteral: Self.consentsPath)) { request, context -> Response in
            let patientID = try context.patientID()
            var buffer = ByteBuffer()
            for try await chunk in request.body {
                guard buffer.readableBytes + chunk.readableBytes <= context.maxUploadSize else {
                    throw APIError(.contentTooLarge, code: "too-large", message: "a consent is at most \(context.maxUploadSize) bytes")
                }
                buffer.writeImmutableBuffer(chunk)
            }
            let terms = terms
            let recorded: ConsentRecorder.Recorded
            do {
                let submission = try ConsentSubmission.read(Data(buffer: buffer), patientID: patientID)
                context.auditNote.set("consent \(submission.choice.rawValue) to \(submission.termsID.prefix(64)) version \(submission.termsVersion.prefix(64))")
                recorded = try await store.write { try ConsentRecorder(store: $0, terms: terms).record(submission, patientID: patientID) }
            } catch let refusal as ConsentSubmission.Refusal {
                throw Self.apiError(refusal)
            } catch let error as StoreError {
                throw SyncRoutes.refusal(error)
            } catch is PayloadOutbox.InvalidPayload {
                // What the submission carried would not make a valid Consent (a character FHIR refuses):
                // nothing was stored.
                throw APIError(.unprocessableContent, code: "invalid-consent", message: "the decision cannot be written as a valid FHIR Consent; nothing was stored")
            }
            let decision = recorded.decision
            context.auditNote.set(
                "consent \(decision.choice.rawValue) to \(decision.termsID) version \(decision.termsVersion): \(recorded.created ? "recorded" : "recorded before")")
            let sent = try await writtenBack([decision.uuid])
            return JSONResponse.make(
                try Self.json(Self.decisionObject(decision, writtenBack: sent.contains(decision.uuid))), status: recorded.created ? .created : .ok)
        }
    }

    /// The decisions among `uuids` the provider acknowledged.
    private func writtenBack(_ uuids: [UUID]) async throws -> Set<UUID> {
        Set(try await store.outboxEntries(destination: OutboxEntry.provider, entityUUIDs: uuids).filter { $0.state == .acknowledged }.map(\.entityUUID))
    }

    static func apiError(_ refusal: ConsentSubmission.Refusal) -> APIError {
        switch refusal.kind {
        case .malformed: return APIError(.badRequest, code: refusal.code, message: refusal.message)
        case .tooLarge: return APIError(.contentTooLarge, code: refusal.code, message: refusal.message)
        case .otherPatient: return APIError(.forbidden, code: refusal.code, message: refusal.message)
        case .invalid, .unknownTerms: return APIError(.unprocessableContent, code: refusal.code, message: refusal.message)
        }
    }

    static func termsObject(_ terms: ConsentTerms) -> [String: Any] {
        [
            "id": terms.id, "version": terms.version, "title": terms.title, "format": terms.format, "document": terms.document,
            "permits": terms.permits.map(\.rawValue), "required": terms.required, "scope": terms.scope,
        ]
    }

    static func decisionObject(_ decision: ConsentDecision, writtenBack: Bool) -> [String: Any] {
        var object: [String: Any] = [
            "id": decision.uuid.canonicalString.lowercased(),
            "terms": ["id": decision.termsID, "version": decision.termsVersion],
            "decision": decision.choice.rawValue,
            "date": FHIRDateFormat.instant(decision.date),
            "recorded": FHIRDateFormat.instant(decision.recordedDate),
            "source": decision.source,
            "writtenBack": writtenBack,
        ]
        if let size = decision.documentSize, let hash = decision.documentHash { object["document"] = ["size": size, "sha1": hash] }
        return object
    }

    static func json(_ object: Any) throws -> Data {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    }
}
