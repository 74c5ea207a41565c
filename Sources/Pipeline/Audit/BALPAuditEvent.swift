import CareModel
import FHIR
import Insights
import Foundation
import Store

/// An entry of CareGate's audit trail (`AuditEntry`) as a FHIR R4 AuditEvent after IHE's Basic Audit
/// Log Patterns (BALP, https://profiles.ihe.net/ITI/BALP/).
///
/// The app API is not FHIR REST, but each of its requests is one RESTful interaction on the patient's
/// data, and BALP's patterns are chosen by that interaction (``Pattern/of(action:)``): a read of
/// `/carekit/v1/patient` is a *PatientRead*; a read of a collection (tasks, revisions, events...) a
/// *PatientQuery*; a POST (a push of revisions, outcomes as observations) a *PatientCreate*; a PUT or
/// PATCH a *PatientUpdate*; a DELETE a *PatientDelete*. Docs/audit-events.md has the table.
///
/// Every event carries: `type` rest, `subtype` the interaction (restful-interaction), `action`
/// (E/R/C/U/D), `recorded`, `outcome` (0; 4 for a 4xx answer; 8 for a 5xx or a write never answered),
/// `outcomeDesc` the trail's detail (counts or a refusal's reason, never patient data); agents client
/// (DCM 110153 Source Role ID: the app), server (DCM 110152 Destination Role ID: CareGate) and user
/// (the token's subject as an identifier, `requestor` true; never a name); `source.observer` CareGate;
/// entities patient (`Patient/<id>`, audit-entity-type 1, object-role 1), and the query (type 2, role
/// 24, `query` the request line in base64) of a Query or the data (type 2, role 4) of the others.
///
/// Only successful events claim the BALP profile in `meta.profile` (BALP's patterns describe
/// successful interactions); a failure keeps the same shape without the claim. The id is derived from
/// the entry's id, date and action, so exporting or pushing the same entry again (`PUT AuditEvent/<id>`)
/// stores it once; an unanswered write completed later keeps its id and updates its outcome.
public enum BALPAuditEvent {
    /// The BALP pattern an app API request follows.
    public enum Pattern: String, CaseIterable, Sendable {
        case patientQuery = "PatientQuery"
        case patientRead = "PatientRead"
        case patientCreate = "PatientCreate"
        case patientUpdate = "PatientUpdate"
        case patientDelete = "PatientDelete"

        /// The pattern of a trail's action (`GET /carekit/v1/tasks`): by method, and for a read by
        /// whether the path names one resource (the patient) or a collection. Nil for a method that is
        /// not a RESTful interaction on data (OPTIONS...).
        public static func of(action: String) -> Pattern? {
            let parts = action.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            let path = parts[1].split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
            switch parts[0].uppercased() {
            case "GET", "HEAD": return path.split(separator: "/").last == "patient" ? .patientRead : .patientQuery
            case "POST": return .patientCreate
            case "PUT", "PATCH": return .patientUpdate
            case "DELETE": return .patientDelete
            default: return nil
            }
        }

        /// The BALP profile: the patient one, or its base (`Query`, `Read`...) when the entry names no patient.
        public func profile(withPatient: Bool) -> String {
            let name = withPatient ? rawValue : String(rawValue.dropFirst("Patient".count))
            return "https://profiles.ihe.net/ITI/BALP/StructureDefinition/IHE.BasicAudit.\(name)"
        }

        /// The R4 restful-interaction code (`subtype`).
        public var interaction: String {
            switch self {
            case .patientQuery: return "search-type"
            case .patientRead: return "read"
            case .patientCreate: return "create"
            case .patientUpdate: return "update"
            case .patientDelete: return "delete"
            }
        }

        /// The user agent's `type` (v3-ParticipationType), the code BALP's pattern fixes or binds: the
        /// information recipient of a read or query, the author of a create or update, the custodian
        /// (of BALP's data sources) of a delete.
        public var userType: (code: String, display: String) {
            switch self {
            case .patientQuery, .patientRead: return ("IRCP", "information recipient")
            case .patientCreate, .patientUpdate: return ("AUT", "author")
            case .patientDelete: return ("CST", "custodian")
            }
        }

        /// The AuditEvent `action` (audit-event-action): Execute, Read, Create, Update, Delete.
        public var action: String {
            switch self {
            case .patientQuery: return "E"
            case .patientRead: return "R"
            case .patientCreate: return "C"
            case .patientUpdate: return "U"
            case .patientDelete: return "D"
            }
        }
    }

    static let entityTypeSystem = "http://terminology.hl7.org/CodeSystem/audit-entity-type"
    static let objectRoleSystem = "http://terminology.hl7.org/CodeSystem/object-role"
    static let dicomSystem = "http://dicom.nema.org/resources/ontology/DCM"
    /// The system of the user agent's identifier: the subject of the app token.
    public static let subjectSystem = "urn:caregate:token-subject"
    static let observer = "CareGate app API"

    /// The AuditEvent's id: the same for the same entry on every export.
    public static func id(of entry: AuditEntry) -> String {
        let name = "caregate-audit|\(entry.id.map(String.init) ?? "-")|\(FHIRDateFormat.instant(entry.date))|\(entry.action)"
        return ContentHash.uuid(named: name).canonicalString.lowercased()
    }

    /// The R4 outcome of an answer's HTTP status: 0 success, 4 (minor failure, a 4xx), 8 (serious
    /// failure, a 5xx, or a write whose answer never came).
    public static func outcome(status: Int) -> String {
        switch status {
        case 100..<400: return "0"
        case 400..<500: return "4"
        default: return "8"
        }
    }

    /// The host name of the machine the events are made on, the server agent's network address (the
    /// store, and so its trail, is on the machine that serves it).
    public static var hostName: String { ProcessInfo.processInfo.hostName }

    /// The AuditEvent of `entry`; nil when its action is no RESTful interaction (``Pattern/of(action:)``).
    /// `host` is the server agent's network address (a machine name).
    public static func resource(_ entry: AuditEntry) -> Element? {
        resource(entry, host: hostName)
    }

    public static func resource(_ entry: AuditEntry, host: String) -> Element? {
        guard let pattern = Pattern.of(action: entry.action) else { return nil }
        let outcome = outcome(status: entry.status)
        let patient = entry.patientID.flatMap { $0.isEmpty ? nil : ReportDocumentReference.patientReference($0) }
        var children = [Element(name: "id", value: id(of: entry))]
        if outcome == "0" {
            children.append(Element(name: "meta", children: [Element(name: "profile", value: pattern.profile(withPatient: patient != nil))]))
        }
        children += [
            coding("type", "http://terminology.hl7.org/CodeSystem/audit-event-type", "rest", "Restful Operation"),
            coding("subtype", "http://hl7.org/fhir/restful-interaction", pattern.interaction, nil),
            Element(name: "action", value: pattern.action),
            Element(name: "recorded", value: FHIRDateFormat.instant(entry.date)),
            Element(name: "outcome", value: outcome),
        ]
        let detail = entry.detail.map { String($0.prefix(1_000)) }
        if let detail, !detail.isEmpty { children.append(Element(name: "outcomeDesc", value: detail)) }
        // The trail keeps no client address: the client agent has no network (Docs/audit-events.md).
        children.append(agent(code: "110153", display: "Source Role ID", who: "CareKit app", network: nil))
        children.append(agent(code: "110152", display: "Destination Role ID", who: observer, network: host.isEmpty ? nil : host))
        if let subject = entry.subject, !subject.isEmpty {
            let type = pattern.userType
            children.append(Element(name: "agent", children: [
                Element(name: "type", children: [codingElement("http://terminology.hl7.org/CodeSystem/v3-ParticipationType", type.code, type.display)]),
                Element(name: "who", children: [Element(name: "identifier", children: [
                    Element(name: "system", value: subjectSystem), Element(name: "value", value: subject),
                ])]),
                Element(name: "requestor", value: "true", valueKind: .boolean),
            ]))
        }
        children.append(Element(name: "source", children: [
            Element(name: "observer", children: [Element(name: "display", value: observer)]),
            coding("type", "http://terminology.hl7.org/CodeSystem/security-source-type", "4", "Application Server"),
        ]))
        if let patient {
            children.append(entity(type: ("1", "Person"), role: ("1", "Patient"), extra: [
                Element(name: "what", children: [Element(name: "reference", value: patient)]),
            ]))
        }
        children.append(dataEntity(pattern, entry: entry, patient: patient))
        return Element.resource("AuditEvent", children: children)
    }

    /// The Query's query entity, or the data entity of a read or write.
    private static func dataEntity(_ pattern: Pattern, entry: AuditEntry, patient: String?) -> Element {
        let line = entry.action.split(separator: "?", maxSplits: 1).first.map(String.init) ?? entry.action
        switch pattern {
        case .patientQuery:
            return entity(type: ("2", "System Object"), role: ("24", "Query"), extra: [
                Element(name: "description", value: line),
                Element(name: "query", value: Data(line.utf8).base64EncodedString()),
            ])
        case .patientRead where patient != nil:
            return entity(type: ("2", "System Object"), role: ("4", "Domain Resource"), extra: [
                Element(name: "what", children: [Element(name: "reference", value: patient ?? "")]),
                Element(name: "description", value: line),
            ])
        default:
            // CareKit data has no FHIR id on the server: the entity names the route it went through.
            return entity(type: ("2", "System Object"), role: ("4", "Domain Resource"), extra: [
                Element(name: "what", children: [Element(name: "display", value: line)]),
                Element(name: "description", value: line),
            ])
        }
    }

    private static func agent(code: String, display: String, who: String, network: String?) -> Element {
        var children = [
            Element(name: "type", children: [codingElement(dicomSystem, code, display)]),
            Element(name: "who", children: [Element(name: "display", value: who)]),
            Element(name: "requestor", value: "false", valueKind: .boolean),
        ]
        if let network {
            // network-type 1: a machine name.
            children.append(Element(name: "network", children: [Element(name: "address", value: network), Element(name: "type", value: "1")]))
        }
        return Element(name: "agent", children: children)
    }

    private static func entity(type: (String, String), role: (String, String), extra: [Element]) -> Element {
        // R4's order: what, type, role, then description and query.
        var children = extra.filter { $0.name == "what" }
        children.append(Element(name: "type", children: codingElement(entityTypeSystem, type.0, type.1).children))
        children.append(Element(name: "role", children: codingElement(objectRoleSystem, role.0, role.1).children))
        children += extra.filter { $0.name != "what" }
        return Element(name: "entity", children: children)
    }

    private static func coding(_ name: String, _ system: String, _ code: String, _ display: String?) -> Element {
        Element(name: name, children: codingElement(system, code, display).children)
    }

    private static func codingElement(_ system: String, _ code: String, _ display: String?) -> Element {
        var children = [Element(name: "system", value: system), Element(name: "code", value: code)]
        if let display { children.append(Element(name: "display", value: display)) }
        return Element(name: "coding", children: children)
    }

    /// The events of `entries` (those of no RESTful interaction left out) as a `collection` Bundle.
    public static func bundle(_ entries: [AuditEntry], now: Date = Date(), host: String = hostName) -> Element {
        let events = entries.compactMap { resource($0, host: host) }
        return Element.resource("Bundle", children: [
            Element(name: "type", value: "collection"),
            Element(name: "timestamp", value: FHIRDateFormat.instant(now)),
        ] + events.map { event in
            Element(name: "entry", children: [
                Element(name: "fullUrl", value: "urn:uuid:\(event.childValue("id") ?? "")"),
                Element(name: "resource", resourceType: "AuditEvent", children: event.children),
            ])
        })
    }

    /// `PUT AuditEvent/<id>` transaction entries of `entries`: what the sync job pushes, idempotently.
    public static func transactionEntries(_ entries: [AuditEntry], host: String = hostName) -> [Element] {
        entries.compactMap { resource($0, host: host) }.map { event in
            let id = event.childValue("id") ?? ""
            return Element(name: "entry", children: [
                Element(name: "fullUrl", value: "urn:uuid:\(id)"),
                Element(name: "resource", resourceType: "AuditEvent", children: event.children),
                Element(name: "request", children: [Element(name: "method", value: "PUT"), Element(name: "url", value: "AuditEvent/\(id)")]),
            ])
        }
    }
}
