import CareModel
import FHIR
import Foundation
import Store

/// Records a patient's consent decision (``ConsentSubmission``) and queues it for the provider, in one
/// transaction under the store's append lease: the decision (`StoreBatch.recordConsent(_:)`) and its
/// outbox entry (``PayloadOutbox``, kind `consent`: `PUT Consent/<id>` and `PUT Provenance/<id>`,
/// validated), or neither.
///
/// - The same submission as the patient's latest on these terms is that decision again: nothing is stored
///   (``Recorded/created`` false).
/// - A decision on terms the operator does not publish, or (to agree or decline) on a version that is
///   not the current one, or a withdrawal with no agreement to withdraw, is refused.
/// - Earlier decisions on the same terms whose entries were not sent yet are superseded: their entries
///   fail with that reason (no retry), and the new entry carries their Provenances, so that the server
///   never ends with an older state of the Consent, and every signature still reaches it.
public struct ConsentRecorder: Sendable {
    public let store: any Store
    public let terms: ConsentTerms?

    public init(store: any Store, terms: ConsentTerms?) {
        self.store = store
        self.terms = terms
    }

    /// The decision as recorded, and whether this submission recorded it.
    public struct Recorded: Sendable {
        public var decision: ConsentDecision
        public var created: Bool
    }

    public func record(_ submission: ConsentSubmission, patientID: String, now: Date = Date()) throws -> Recorded {
        guard let consents = store.consents else { throw ConsentSubmission.Refusal(kind: .unknownTerms, code: "unknown-terms", message: "no consent terms are published") }
        guard let terms, submission.termsID == terms.id else {
            throw ConsentSubmission.Refusal(kind: .unknownTerms, code: "unknown-terms", message: "no consent terms with this id are published (GET /carekit/v1/consent-terms)")
        }
        return try store.withAppendLease("caregate serve consent") {
            let latest = try consents.latestConsentDecision(patientID: patientID, termsID: terms.id)
            if let latest, latest.submissionHash == submission.hash { return Recorded(decision: latest, created: false) }
            switch submission.choice {
            case .agree, .decline:
                guard submission.termsVersion == terms.version else {
                    throw ConsentSubmission.Refusal.invalid("outdated-terms", "version \(terms.version) of these terms is the current one: agree or decline to it")
                }
            case .withdraw:
                guard let latest, latest.choice == .agree, submission.termsVersion == latest.termsVersion else {
                    throw ConsentSubmission.Refusal.invalid("nothing-to-withdraw", "there is no agreement to this version of these terms to withdraw")
                }
            }
            let sequence = (latest?.sequence ?? 0) + 1
            let uuid = ContentHash.uuid(named: "caregate-consent-decision|\(patientID)|\(terms.id)|\(sequence)|\(submission.hash)")
            let decision = ConsentDecision(
                uuid: uuid, patientID: patientID, termsID: terms.id, termsVersion: submission.termsVersion, choice: submission.choice,
                date: submission.date ?? now, signerName: submission.signerName, documentSize: submission.document?.count,
                documentHash: submission.document.map(ConsentSubmission.sha1), submissionHash: submission.hash, source: ConsentDecision.appSource,
                sequence: sequence, recordedDate: now, document: submission.document, signatureImage: submission.signatureImage)
            var batch = StoreBatch(date: now)
            batch.recordConsent(decision)
            try enqueue(decision, terms: terms, into: &batch, now: now)
            try store.apply(batch)
            return Recorded(decision: decision, created: true)
        }
    }

    /// Adds to `batch` the outbox entry of `decision` (its Consent keeps the signed document of the
    /// latest agreement when it has none of its own), and supersedes the unsent entries of the earlier
    /// decisions on the same terms, whose Provenances it carries. Used for decisions recorded here and
    /// those read from the provider's server.
    func enqueue(_ decision: ConsentDecision, terms: ConsentTerms, into batch: inout StoreBatch, now: Date) throws {
        guard let consents = store.consents else { return }
        let earlier = try consents.consentDecisions(patientID: decision.patientID).filter { $0.termsID == terms.id && $0.uuid != decision.uuid }
        var document = decision.document
        if document == nil, decision.choice != .agree {
            for agreement in earlier.reversed() where agreement.choice == .agree && agreement.documentSize != nil {
                document = try consents.consentAttachments(uuid: agreement.uuid).document
                break
            }
        }
        var entries = ConsentResources.entries(ConsentResources.Input(
            decision: decision, terms: terms, document: document, signatureImage: decision.signatureImage, recorded: now))
        let consentID = ConsentResources.consentID(patientID: decision.patientID, termsID: terms.id)
        let queued = try store.outboxEntries(destination: OutboxEntry.provider, entityUUIDs: earlier.map(\.uuid))
        // Only entries that would still be sent: pending, or failed with a retry planned (not one already
        // superseded, nor one the server refused for good), so that each signature travels once.
        for entry in queued where entry.entityID == "Consent/\(consentID)"
            && (entry.state == .pending || (entry.state == .failed && entry.nextAttemptDate != nil)) {
            guard let id = entry.id, let older = earlier.first(where: { $0.uuid == entry.entityUUID }) else { continue }
            let image = try consents.consentAttachments(uuid: older.uuid).signatureImage
            let provenance = ConsentResources.entries(ConsentResources.Input(decision: older, terms: terms, document: nil, signatureImage: image, recorded: now))[1]
            entries.append(provenance)
            batch.transition(outboxEntry: id, .failed(error: "superseded by a later consent decision, whose entry carries this one's Provenance", retryAt: nil, at: now))
        }
        batch.enqueue(try PayloadOutbox.entry(.consent, id: "Consent/\(consentID)", uuid: decision.uuid, entries: entries, now: now))
    }
}
