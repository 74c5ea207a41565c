import CareModel
import FHIR
import FHIRValidation
import Foundation
import Insights
import Store

/// Outbox entries that carry their own FHIR transaction entries, made when they were queued: a
/// care-team report (``ReportOutbox``), a consent decision, a share with a clinician. An outcome's
/// Observation is rendered at send time from the store; these are fixed when queued (a signed PDF, a
/// report of a period), so the entry holds them, and they are sent through the same Bundles, states,
/// receipts and retries as an outcome (`OutboxBundleSender`).
///
/// Such an entry has destination `OutboxEntry/provider`, kind `EntityKind/patient` (it is about the
/// patient), an id that names what it carries and whose first path segment says what it is
/// (``Kind``), a version uuid derived from what it carries (queueing the same thing again finds it,
/// so it is sent once), and the entries as its payload.
public struct PayloadOutbox {
    /// What a payload entry carries, by the first segment of its id.
    public enum Kind: String, CaseIterable, Sendable {
        /// A care-team report (id `Patient/<id>/<from>/<to>`).
        case report
        /// A consent decision (id `Consent/...`).
        case consent
        /// A share with a member of the care team (id `Communication/...`).
        case share
        /// An entry of the audit trail as a BALP AuditEvent (id `AuditEvent/<id>`; ``AuditEventOutbox``).
        case audit

        /// The first segment of the id of an entry of this kind.
        public var idPrefix: String {
            switch self {
            case .report: return "Patient/"
            case .consent: return "Consent/"
            case .share: return "Communication/"
            case .audit: return "AuditEvent/"
            }
        }
    }

    public let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    /// Whether `entry` carries its own transaction entries (rather than an outcome's, made at send time).
    public static func carriesPayload(_ entry: OutboxEntry) -> Bool {
        entry.entityKind == .patient && entry.payload != nil
    }

    /// What a payload entry carries; nil for an entry that carries none.
    public static func kind(of entry: OutboxEntry) -> Kind? {
        guard carriesPayload(entry) else { return nil }
        return Kind.allCases.first { entry.entityID.hasPrefix($0.idPrefix) }
    }

    /// The outbox entry that sends `entries` (a transaction Bundle's entries, each with its request),
    /// after checking them as `caregate validate` checks a file: an entry that would be refused for its
    /// content is not queued. `entityID` must start with the kind's ``Kind/idPrefix``.
    public static func entry(_ kind: Kind, id entityID: String, uuid: UUID, entries: [Element], now: Date) throws -> OutboxEntry {
        try validate(entries, source: kind.rawValue)
        let stream = FHIRBundleStream(format: .json, fields: [])
        var payload = Data()
        for (position, entry) in entries.enumerated() { payload.append(stream.entry(entry, first: position == 0)) }
        return OutboxEntry(
            destination: OutboxEntry.provider, entityKind: .patient, entityID: entityID, entityUUID: uuid,
            payload: payload, createdDate: now)
    }

    /// `entries` in a transaction Bundle, checked as `caregate validate` checks a file.
    static func validate(_ entries: [Element], source: String) throws {
        let bundle = Element.resource("Bundle", children: [Element(name: "type", value: "transaction")] + entries)
        let errors = DocumentValidator().validate(FHIRJSON.write(bundle), source: source).flatMap(\.report.issues).filter(\.severity.isError)
        guard errors.isEmpty else { throw InvalidPayload(kind: source, problems: errors.map(\.description)) }
    }

    /// Entries that are not valid FHIR: a defect of the code that made them, never queued.
    public struct InvalidPayload: Error, CustomStringConvertible {
        public let kind: String
        public let problems: [String]
        public var description: String { "the \(kind)'s resources are not valid FHIR: " + problems.prefix(3).joined(separator: "; ") }
    }

    /// Sends the due payload entries that `selected` keeps to `receiver` in Bundles of `batchSize`
    /// entries (they may carry PDFs: a few to a Bundle), under the store's writer lease.
    /// With `audit`, each Bundle writes the audit trail's entries of the patients whose data it carries
    /// (``PushAudit``); AuditEvents are not audited again.
    public func push(
        to receiver: any ExportReceiver, batchSize: Int = 10, bundleType: ExportOptions.BundleType = .transaction, now: Date = Date(),
        audit: PushAudit? = nil, selecting selected: (OutboxEntry) -> Bool = { _ in true }
    ) throws -> ExportReport {
        try store.withWriterLease("caregate outbox push") {
            let due = try store.dueOutboxEntries(at: now, limit: .max).filter { Self.carriesPayload($0) && selected($0) }
            var options = ExportOptions()
            options.bundleType = bundleType
            let rendering = ExportRendering(
                options: options, identifierSystem: ReportDocumentReference.identifierSystem, exportID: UUID().canonicalString.lowercased(), now: now)
            let sender = OutboxBundleSender(store: store, receiver: receiver, rendering: rendering, batchSize: batchSize, now: now, audit: audit)
            do {
                for entry in due {
                    guard let payload = entry.payload else { continue }
                    sender.report.observations += 1
                    try sender.add(
                        entry, rendered: ExportRendering.Rendered(bytes: payload, entries: Self.entryCount(payload)), with: [entry],
                        audited: Self.auditedItem(entry))
                }
                try sender.send()
            } catch is OutboxBundleSender.ReceiverDown {
                // What was not sent stays due: the next run sends it.
            }
            return sender.report
        }
    }

    /// The patient (`Patient/<id>`) a payload entry's first resource is about (its `subject` or
    /// `patient`, or an AuditEvent's entity), read from the payload; nil when none names one. What a
    /// consent hold asks of a share or an AuditEvent.
    public static func patientReference(of entry: OutboxEntry) -> String? {
        guard let payload = entry.payload, let entries = bundleEntries(payload) as? [[String: Any]] else { return nil }
        for item in entries {
            guard let resource = item["resource"] as? [String: Any] else { continue }
            for field in ["subject", "patient"] {
                if let reference = (resource[field] as? [String: Any])?["reference"] as? String, reference.hasPrefix("Patient/") {
                    return reference
                }
            }
            // An AuditEvent names its patient as an entity.
            for entity in resource["entity"] as? [[String: Any]] ?? [] {
                if let reference = (entity["what"] as? [String: Any])?["reference"] as? String, reference.hasPrefix("Patient/") {
                    return reference
                }
            }
        }
        return nil
    }

    /// Whose data a payload entry carries and what it is, for the audit trail of its push; nil for an
    /// AuditEvent (auditing its push would make an entry for the next run to push, without end).
    public static func auditedItem(_ entry: OutboxEntry) -> PushAudit.Item? {
        switch kind(of: entry) {
        case .audit, nil: return nil
        case .report:
            // `Patient/<id>/<from>/<to>`: the patient's entity id is `Patient/<id>`.
            let parts = entry.entityID.split(separator: "/")
            return PushAudit.Item(patientID: parts.count >= 2 ? "Patient/\(parts[1])" : nil, what: "report")
        case .consent:
            return PushAudit.Item(patientID: patientReference(of: entry), what: "consent decision")
        case .share:
            return PushAudit.Item(patientID: patientReference(of: entry), what: "share")
        }
    }

    /// How many Bundle entries a payload holds (each answered by one entry of the server's response).
    public static func entryCount(_ payload: Data) -> Int {
        max(1, bundleEntries(payload)?.count ?? 1)
    }

    /// A payload's Bundle entries as JSON values: the payload is the entries of a Bundle's `entry`
    /// array, comma-separated, so it reads as that array once bracketed. Nil for one that does not parse.
    private static func bundleEntries(_ payload: Data) -> [Any]? {
        var wrapped = Data("[".utf8)
        wrapped.append(payload)
        wrapped.append(contentsOf: Array("]".utf8))
        return (try? JSONSerialization.jsonObject(with: wrapped)) as? [Any]
    }
}
