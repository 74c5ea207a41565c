import Foundation

/// What a patient decided about a version of the operator's consent terms.
public enum ConsentChoice: String, CaseIterable, Codable, Sendable {
    /// The patient agreed (signed): FHIR Consent `active`.
    case agree
    /// The patient declined: FHIR Consent `rejected`.
    case decline
    /// The patient withdrew an earlier agreement: FHIR Consent `inactive`.
    case withdraw
}

/// One consent decision as the store keeps it: every decision of a patient on a set of terms is kept,
/// numbered in the order recorded (``sequence``), never changed; the latest one is the patient's
/// standing. The signed document and the signature image are kept with it (``ConsentStore/consentAttachments(uuid:)``):
/// a later decision's Consent keeps the signed document, and carries the signatures of earlier decisions
/// not yet written back; the lists of decisions do not read them.
///
/// A decision the app recorded has ``source`` `app`; one read from the provider's server (a Consent it
/// holds for the patient, imported by the sync job) has `provider`.
public struct ConsentDecision: Sendable, Equatable {
    /// The decision's own id: the outbox entry that writes it back has it as its version uuid.
    public var uuid: UUID
    public var patientID: String
    public var termsID: String
    public var termsVersion: String
    public var choice: ConsentChoice
    /// When the patient decided (the signature's date, or the submission's).
    public var date: Date
    /// The name the patient signed with, when they signed.
    public var signerName: String?
    /// The signed PDF's size in bytes and SHA-1 (base64, as FHIR `Attachment.hash`), when there is one.
    public var documentSize: Int?
    public var documentHash: String?
    /// The SHA-256 of the submission as received: the same submission again is told apart from a new one.
    public var submissionHash: String
    /// `app` (recorded through `POST /carekit/v1/consents`) or `provider` (a Consent held by the server).
    public var source: String
    /// The decision's number among the patient's decisions on these terms (1, 2, ...), set by the store.
    public var sequence: Int
    /// When the store recorded it.
    public var recordedDate: Date
    /// The signed PDF and the signature PNG, when recorded with them (nil in the lists of decisions).
    public var document: Data?
    public var signatureImage: Data?

    public static let appSource = "app"
    public static let providerSource = "provider"

    public init(
        uuid: UUID, patientID: String, termsID: String, termsVersion: String, choice: ConsentChoice, date: Date, signerName: String? = nil,
        documentSize: Int? = nil, documentHash: String? = nil, submissionHash: String, source: String = ConsentDecision.appSource,
        sequence: Int = 0, recordedDate: Date = Date(), document: Data? = nil, signatureImage: Data? = nil
    ) {
        self.document = document
        self.signatureImage = signatureImage
        self.uuid = uuid
        self.patientID = patientID
        self.termsID = termsID
        self.termsVersion = termsVersion
        self.choice = choice
        self.date = date
        self.signerName = signerName
        self.documentSize = documentSize
        self.documentHash = documentHash
        self.submissionHash = submissionHash
        self.source = source
        self.sequence = sequence
        self.recordedDate = recordedDate
    }
}

/// The consent decisions of a store (``ConsentDecision``), written through ``StoreBatch/recordConsent(_:)``.
///
/// A store that keeps consent conforms (``SQLiteStore`` does); reach it from any store with ``Store/consents``.
public protocol ConsentStore: AnyObject, Sendable {
    /// Every decision of `patientID`, on any terms, in the order recorded.
    func consentDecisions(patientID: String) throws -> [ConsentDecision]
    /// The latest decision of `patientID` on the terms `termsID` (any version), if any.
    func latestConsentDecision(patientID: String, termsID: String) throws -> ConsentDecision?
    /// The decision `uuid`, if recorded.
    func consentDecision(uuid: UUID) throws -> ConsentDecision?
    /// The signed PDF and signature PNG recorded with decision `uuid`.
    func consentAttachments(uuid: UUID) throws -> (document: Data?, signatureImage: Data?)
}

extension Store {
    /// This store's consent decisions, when it keeps them.
    public var consents: (any ConsentStore)? { self as? any ConsentStore }
}
