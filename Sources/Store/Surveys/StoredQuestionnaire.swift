import CareModel
import Foundation

/// A Questionnaire as the store keeps it: one version of it, by canonical `url` and `version`, with its
/// FHIR JSON as received.
///
/// A survey task names the exact version it asks (`url|version`, its `userInfo` key `questionnaire`);
/// versions are never removed, so the version an outcome was recorded against stays readable for as long
/// as the outcome does. Where `url` and `version` come from when the resource lacks them (its source
/// system and `Questionnaire/<id>`; `meta.versionId`, else its content hash) is decided by the import
/// (Pipeline's `QuestionnaireIdentity`) and stated in Docs/surveys-sources.md.
public struct StoredQuestionnaire: Sendable, Equatable {
    /// The canonical url (or, for one without, its source system and `Questionnaire/<id>`).
    public var url: String
    /// The business version (or `meta.versionId`, or `sha256:` and the start of its content hash).
    public var version: String
    /// The system it was read from (the import's source system).
    public var sourceSystem: String
    /// Its FHIR `id` there, when it has one.
    public var resourceID: String?
    /// The SHA-256 of ``json``: a second arrival of the same version with other content is told apart.
    public var contentHash: String
    /// The resource, as FHIR JSON.
    public var json: Data
    /// When this version was first kept.
    public var keptDate: Date

    public init(url: String, version: String, sourceSystem: String, resourceID: String?, contentHash: String, json: Data, keptDate: Date = Date()) {
        self.url = url
        self.version = version
        self.sourceSystem = sourceSystem
        self.resourceID = resourceID
        self.contentHash = contentHash
        self.json = json
        self.keptDate = keptDate
    }

    /// `url|version`: what a survey task names.
    public var canonical: String { url + "|" + version }
}

/// What keeping a Questionnaire version did.
public enum QuestionnaireKeeping: Equatable, Sendable {
    /// A version the store did not hold.
    case added
    /// The same version with the same content: nothing changed.
    case unchanged
    /// The same `url|version` with other content: the version kept first stays (outcomes were recorded
    /// against it), the new content is not kept.
    case conflicting(keptHash: String)
}

/// The Questionnaires of a store, versioned by `url` and `version`.
///
/// A store that keeps surveys conforms (``SQLiteStore`` does); reach it from any store with
/// ``Store/questionnaires``.
public protocol QuestionnaireStore: AnyObject, Sendable {
    /// Keeps `questionnaire` unless its `url|version` is kept already.
    func keep(_ questionnaire: StoredQuestionnaire) throws -> QuestionnaireKeeping
    /// The version `version` of `url`, if kept.
    func questionnaire(url: String, version: String) throws -> StoredQuestionnaire?
    /// The version of `url` kept last, if any: what a task naming `url` alone is pinned to.
    func latestQuestionnaire(url: String) throws -> StoredQuestionnaire?
    /// The version kept last of the Questionnaire with FHIR id `resourceID` from `sourceSystem` (what a
    /// `Questionnaire/<id>` reference names).
    func latestQuestionnaire(sourceSystem: String, resourceID: String) throws -> StoredQuestionnaire?
    /// The task version `uuid`, if the store has it: the survey task an outcome names, whose
    /// Questionnaire its answers are checked against.
    func taskVersion(uuid: UUID) throws -> CareTask?
}

extension Store {
    /// This store's Questionnaires, when it keeps them.
    public var questionnaires: (any QuestionnaireStore)? { self as? any QuestionnaireStore }
}
