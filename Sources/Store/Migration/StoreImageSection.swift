import CareModel
import Foundation

/// The sections of a store image, in the order they are copied (entities before what names them), and
/// the fields of each section's records.
///
/// Field names are the SQLite store's column names; the PostgreSQL store's are their snake_case forms.
public enum StoreImageSection: String, CaseIterable, Sendable {
    /// The store's own process in CareKit's knowledge vectors and its clock: one record.
    case syncClock
    case patientVersions, carePlanVersions, contactVersions, taskVersions, outcomeVersions
    case outcomeConflicts
    case sourceResources
    case resourceLinks
    case syncCheckpoints
    case outbox
    case deadLetters
    case patientKnowledge
    case revisionStamps
    /// The revision log, each row naming its version by entity kind and uuid.
    case revisions
    /// The app API's audit trail (the SQLite store's `-audit.sqlite` file and any entries of the store
    /// file's own older `audit` table), ids kept.
    case audit
    case auditRefusals
    case syncRuns
    case lastImportCoverage
    case consentDecisions
    case questionnaires
    case exportProgress
    case reportStarts
    /// The last id each numbered table gave (outbox entries, dead letters, audit entries, sync runs), so
    /// that the copy never gives again an id the source gave to a row it deleted since. Last: the rows
    /// copied before move the numbering too.
    case idSequences

    /// The entity versions section of `kind`.
    public static func versions(_ kind: EntityKind) -> StoreImageSection {
        switch kind {
        case .patient: return .patientVersions
        case .carePlan: return .carePlanVersions
        case .contact: return .contactVersions
        case .task: return .taskVersions
        case .outcome: return .outcomeVersions
        }
    }

    /// The entity kind of an entity versions section.
    public var entityKind: EntityKind? {
        switch self {
        case .patientVersions: return .patient
        case .carePlanVersions: return .carePlan
        case .contactVersions: return .contact
        case .taskVersions: return .task
        case .outcomeVersions: return .outcome
        default: return nil
        }
    }

    /// The words of a progress line or a difference ("outbox entries").
    public var title: String {
        switch self {
        case .syncClock: return "sync clock"
        case .patientVersions: return "patient versions"
        case .carePlanVersions: return "care plan versions"
        case .contactVersions: return "contact versions"
        case .taskVersions: return "task versions"
        case .outcomeVersions: return "outcome versions"
        case .outcomeConflicts: return "outcome conflicts"
        case .sourceResources: return "source resources"
        case .resourceLinks: return "resource links"
        case .syncCheckpoints: return "sync checkpoints"
        case .outbox: return "outbox entries"
        case .deadLetters: return "dead letters"
        case .patientKnowledge: return "patient knowledge"
        case .revisionStamps: return "revision stamps"
        case .revisions: return "revisions"
        case .audit: return "audit entries"
        case .auditRefusals: return "audit refusal counts"
        case .syncRuns: return "sync runs"
        case .lastImportCoverage: return "last import coverage"
        case .consentDecisions: return "consent decisions"
        case .questionnaires: return "questionnaires"
        case .exportProgress: return "export progress"
        case .reportStarts: return "report starts"
        case .idSequences: return "id sequences"
        }
    }

    /// The fields of the section's records, in order.
    public var fields: [StoreImageField] {
        if entityKind != nil { return Self.versionFields }
        switch self {
        case .syncClock: return [.init("processUUID", .uuid), .init("clock", .integer)]
        case .outcomeConflicts: return [.init("outcomeID", .text), .init("since", .real)]
        case .sourceResources:
            return [
                .init("sourceSystem", .text), .init("resourceType", .text), .init("resourceID", .text), .init("versionID", .text),
                .init("lastUpdated", .text), .init("contentHash", .text), .init("format", .text), .init("body", .blob),
                .init("receivedDate", .real), .init("activitiesWithDetail", .text),
            ]
        case .resourceLinks:
            return [.init("resourceType", .text), .init("resourceID", .text), .init("sourceSystem", .text), .init("entityKind", .text), .init("entityID", .text)]
        case .syncCheckpoints: return [.init("server", .text), .init("resourceType", .text), .init("cursor", .text), .init("updatedDate", .real)]
        case .outbox:
            return [
                .init("id", .integer), .init("destination", .text), .init("entityKind", .text), .init("entityID", .text),
                .init("entityUUID", .uuid), .init("payload", .blob), .init("state", .text), .init("attempts", .integer),
                .init("lastError", .text), .init("nextAttemptDate", .real), .init("createdDate", .real),
                .init("updatedDate", .real), .init("serverID", .text), .init("serverVersion", .text),
            ]
        case .deadLetters:
            return [
                .init("id", .integer), .init("system", .text), .init("resourceType", .text), .init("resourceID", .text),
                .init("outboxEntryID", .integer), .init("reason", .text), .init("detail", .text), .init("payload", .blob),
                .init("createdDate", .real), .init("replayedDate", .real), .init("resolvedDate", .real), .init("resolution", .text),
            ]
        case .patientKnowledge: return [.init("patientID", .text), .init("processID", .text), .init("clock", .integer), .init("served", .integer)]
        case .revisionStamps: return [.init("patientID", .text), .init("serverClock", .integer), .init("processes", .text)]
        case .revisions: return [.init("patientID", .text), .init("serverClock", .integer), .init("entityKind", .text), .init("entityUUID", .uuid)]
        case .audit:
            return [
                .init("id", .integer), .init("date", .real), .init("subject", .text), .init("patientID", .text), .init("action", .text),
                .init("status", .integer), .init("detail", .text), .init("clientAddress", .text),
            ]
        case .auditRefusals:
            return [.init("minute", .integer), .init("action", .text), .init("status", .integer), .init("reason", .text), .init("count", .integer)]
        case .syncRuns:
            return [.init("id", .integer), .init("runID", .text), .init("server", .text), .init("started", .real), .init("ended", .real), .init("result", .text)]
                + Self.syncRunCounts.map { .init($0, .integer) } + [.init("report", .text), .init("error", .text)]
        case .lastImportCoverage: return [.init("slot", .integer), .init("recordedDate", .real), .init("record", .text)]
        case .consentDecisions:
            return [
                .init("uuid", .text), .init("patientID", .text), .init("termsID", .text), .init("termsVersion", .text), .init("choice", .text),
                .init("date", .real), .init("signerName", .text), .init("documentSize", .integer), .init("documentHash", .text),
                .init("submissionHash", .text), .init("source", .text), .init("sequence", .integer), .init("recordedDate", .real),
                .init("document", .blob), .init("signatureImage", .blob),
            ]
        case .questionnaires:
            return [
                .init("url", .text), .init("version", .text), .init("sourceSystem", .text), .init("resourceID", .text),
                .init("contentHash", .text), .init("resource", .blob), .init("keptDate", .real),
            ]
        case .exportProgress: return [.init("target", .text), .init("exportID", .text), .init("file", .text), .init("committedDate", .real)]
        case .reportStarts: return [.init("frequency", .text), .init("firstDay", .text), .init("recordedDate", .real)]
        case .idSequences: return [.init("section", .text), .init("lastID", .integer)]
        default: return []
        }
    }

    /// The fields of every entity versions section; the last two are an outcome's only (null otherwise).
    public static let versionFields: [StoreImageField] = [
        .init("version", .entity), .init("nextEffectiveDate", .real), .init("eventStart", .real), .init("versionNumber", .integer),
    ]

    /// The sections whose records carry ids a table numbers, in the order of their ``idSequences``
    /// records (by name, byte by byte).
    public static let numbered: [StoreImageSection] = [.audit, .deadLetters, .outbox, .syncRuns]

    /// The counts of a sync run, in order.
    public static let syncRunCounts = ["pulled", "imported", "failed", "pushed", "acknowledged", "refused", "deadLetters", "problems"]

    /// The fields that order the section's records, when it is ordered by key rather than stored order
    /// (text compared byte by byte, as SQLite's BINARY and PostgreSQL's "C" collations do).
    public var orderKey: [Int]? {
        switch self {
        case .syncClock, .outcomeConflicts, .exportProgress, .reportStarts, .idSequences: return [0]
        case .resourceLinks: return [0, 1, 2, 3, 4]
        case .syncCheckpoints, .patientKnowledge, .revisionStamps, .questionnaires: return [0, 1]
        case .auditRefusals: return [0, 1, 2, 3]
        case .lastImportCoverage: return [0]
        default: return nil
        }
    }

    /// The name of a field in a PostgreSQL table: the field's name in snake_case, an initialism one word
    /// (`processUUID`: `process_uuid`, `outboxEntryID`: `outbox_entry_id`).
    public static func snakeCase(_ name: String) -> String {
        let characters = Array(name)
        var out = ""
        for (index, character) in characters.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = characters[index - 1]
                let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) { out.append("_") }
            }
            out.append(contentsOf: character.lowercased())
        }
        return out
    }
}
