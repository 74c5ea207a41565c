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
        /// Patient data written out of CareGate by the command line (`caregate export`, `caregate store
        /// dump`, `caregate patients report`): the shape of BALP's Privacy Disclosure at Source (type DCM
        /// 110106 Export, subtype ISO 21089 `disclose`), without claiming its profile (the command line
        /// knows no recipient or purpose of use, which it requires).
        case export = "Export"

        /// The pattern of a trail's action (`GET /carekit/v1/tasks`): by method, and for a read by
        /// whether the path names one resource (the patient) or a collection. Nil for a method that is
        /// not a RESTful interaction on data (OPTIONS...). A command line's action (`AuditEntry`s of
        /// `caregate ...`) is a Query of the patient's data, or an Export (``ofCommand(_:)``).
        public static func of(action: String) -> Pattern? {
            if action.hasPrefix(commandPrefix) { return ofCommand(action) }
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

        /// What starts the action of a command line's entry.
        public static let commandPrefix = AuditEntry.commandPrefix

        /// The pattern of a command line (`caregate patients events`): an Export when it writes patient
        /// data out (`export`, `store dump`, `patients report`, the sync job's `sync push`), else a Query (it reads the data of one
        /// patient and prints what it found).
        public static func ofCommand(_ command: String) -> Pattern {
            let words = command.split(separator: " ").dropFirst().map(String.init)
            switch words.first {
            case "export": return .export
            // The sync job's pushes to the provider's server (``PushAudit``).
            case "sync" where words.dropFirst().first == "push": return .export
            case "store" where words.dropFirst().first == "dump": return .export
            case "patients" where words.dropFirst().first == "report": return .export
            default: return .patientQuery
            }
        }

        /// Whether a successful event of this pattern claims a BALP profile (``profile(withPatient:)``).
        public var claimsProfile: Bool { self != .export }

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
            case .export: return "disclose"
            }
        }

        /// The user agent's `type` (v3-ParticipationType), the code BALP's pattern fixes or binds: the
        /// information recipient of a read or query, the author of a create or update, the custodian
        /// (of BALP's data sources) of a delete.
        public var userType: (code: String, display: String) {
            switch self {
            case .patientQuery, .patientRead, .export: return ("IRCP", "information recipient")
            case .patientCreate, .patientUpdate: return ("AUT", "author")
            case .patientDelete: return ("CST", "custodian")
            }
        }

        /// The AuditEvent `action` (audit-event-action): Execute, Read, Create, Update, Delete.
        public var action: String {
            switch self {
            case .patientQuery: return "E"
            case .patientRead, .export: return "R"
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
    /// The subject prefix of the operator page's entries (`operator:NAME`) and the command line's (`cli:USER`).
    static let operatorPrefix = "operator:"

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
        // A command line's status is its exit status: 0 done, else a minor failure (it said what failed).
        let outcome = entry.isCommandLine ? (entry.status == 0 ? "0" : "4") : outcome(status: entry.status)
        let patient = entry.patientID.flatMap { $0.isEmpty ? nil : ReportDocumentReference.patientReference($0) }
        var children = [Element(name: "id", value: id(of: entry))]
        if outcome == "0", pattern.claimsProfile {
            children.append(Element(name: "meta", children: [Element(name: "profile", value: pattern.profile(withPatient: patient != nil))]))
        }
        if pattern == .export {
            children += [
                coding("type", dicomSystem, "110106", "Export"),
                coding("subtype", "http://terminology.hl7.org/CodeSystem/iso-21089-lifecycle", pattern.interaction, "Disclose Record Lifecycle Event"),
            ]
        } else {
            children += [
                coding("type", "http://terminology.hl7.org/CodeSystem/audit-event-type", "rest", "Restful Operation"),
                coding("subtype", "http://hl7.org/fhir/restful-interaction", pattern.interaction, nil),
            ]
        }
        children += [
            Element(name: "action", value: pattern.action),
            Element(name: "recorded", value: FHIRDateFormat.instant(entry.date)),
            Element(name: "outcome", value: outcome),
        ]
        let detail = entry.detail.map { String($0.prefix(1_000)) }
        if let detail, !detail.isEmpty { children.append(Element(name: "outcomeDesc", value: detail)) }
        // The client's IP address when the trail has it (network-type 2); entries of the command line and
        // of trails older than the column have none (Docs/audit-events.md).
        let address = entry.clientAddress.flatMap { $0.isEmpty ? nil : (address: $0, type: "2") }
        children.append(agent(code: "110153", display: "Source Role ID", who: client(of: entry), network: address))
        children.append(agent(code: "110152", display: "Destination Role ID", who: observer, network: host.isEmpty ? nil : (host, "1")))
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

    /// Who the client agent is: the command line, an operator's browser, or a patient's app.
    private static func client(of entry: AuditEntry) -> String {
        if entry.action.hasPrefix(Pattern.commandPrefix + "sync ") { return "CareGate sync job" }
        if entry.action.hasPrefix(Pattern.commandPrefix) { return "CareGate command line" }
        if entry.subject?.hasPrefix(operatorPrefix) == true { return "CareGate operator page (browser)" }
        return "CareKit app"
    }

    private static func agent(code: String, display: String, who: String, network: (address: String, type: String)?) -> Element {
        var children = [
            Element(name: "type", children: [codingElement(dicomSystem, code, display)]),
            Element(name: "who", children: [Element(name: "display", value: who)]),
            Element(name: "requestor", value: "false", valueKind: .boolean),
        ]
        if let network {
            // network-type 1: a machine name; 2: an IP address.
            children.append(Element(name: "network", children: [Element(name: "address", value: network.address), Element(name: "type", value: network.type)]))
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
        entries.compactMap { resource($0, host: host) }.map(Element.updateEntry)
    }
}
