import CareModel
import Crypto
import FHIR
import Foundation
import Insights

/// A share from the patient's app with a member of their care team (`POST /carekit/v1/shares`,
/// Docs/sharing.md) as FHIR R4: a Communication from the patient to that practitioner, carrying the
/// patient's message and the shared document, and the Provenance that says the patient wrote it and
/// CareGate assembled it.
///
/// The Communication: `identifier` `urn:caregate:share|<id>` (``identifierSystem``), `status` completed,
/// `category` notification (http://terminology.hl7.org/CodeSystem/communication-category), `subject`
/// and `sender` the patient, `recipient` the Practitioner or PractitionerRole the contact came from,
/// `sent`, `topic` the document's title, `payload` the message (`contentString`) and the document
/// (`contentAttachment`: `contentType`, `data`, `size`, SHA-1 `hash`, `title`, `creation`).
///
/// Its Bundle entries (``entries()``) store it once however often they are sent: `PUT Communication/<id>`
/// (the share's id), then `PUT Provenance/<id derived from the share's>`.
public struct ShareCommunication: Sendable, Equatable {
    /// The system of every share's identifier: how the care team's systems find a share again.
    public static let identifierSystem = "urn:caregate:share"
    public static let categorySystem = "http://terminology.hl7.org/CodeSystem/communication-category"

    /// The document a share carries.
    public struct Document: Sendable, Equatable {
        public var data: Data
        /// `application/pdf`, or `text/html; charset=utf-8` for a report the server could not print.
        public var contentType: String
        public var title: String

        public init(data: Data, contentType: String, title: String) {
            self.data = data
            self.contentType = contentType
            self.title = title
        }
    }

    /// The share's id (``id(patientID:contactID:content:message:)``): the Communication's identifier value.
    public var id: UUID
    /// The patient's entity id (`Patient/<id>`, or an id CareGate made).
    public var patientID: String
    /// `Practitioner/<id>` or `PractitionerRole/<id>`.
    public var recipient: String
    /// The recipient's name, as the contact shows it.
    public var recipientName: String?
    public var message: String?
    public var document: Document
    public var sent: Date
    /// Names the program in the Provenance (`CareGate 0.1.0`).
    public var generator: String

    public init(
        id: UUID, patientID: String, recipient: String, recipientName: String?, message: String?, document: Document, sent: Date, generator: String
    ) {
        self.id = id
        self.patientID = patientID
        self.recipient = recipient
        self.recipientName = recipientName
        self.message = message
        self.document = document
        self.sent = sent
        self.generator = generator
    }

    /// The id of a share: the same for the same patient, contact, content and message, so that a share
    /// sent twice (a retry after a lost answer) is one share. `content` names what is shared
    /// (`report|<from>|<to>`, or `document|<SHA-256 of the PDF>`).
    public static func id(patientID: String, contactID: String, content: String, message: String?) -> UUID {
        // Lengths first: no choice of fields can make another share's name.
        let fields = [patientID, contactID, content, message ?? ""]
        return ContentHash.uuid(named: "caregate-share|" + fields.map { "\($0.utf8.count):\($0)" }.joined(separator: "|"))
    }

    /// The outbox entry id of the share `id`: `Communication/<id>` (``PayloadOutbox/Kind/share``).
    public static func entityID(_ id: UUID) -> String {
        "Communication/\(id.canonicalString.lowercased())"
    }

    /// The Communication (with an id, for a transaction that PUTs it) and its Provenance.
    public func resources() -> (communication: Element, provenance: Element) {
        let id = id.canonicalString.lowercased()
        let patient = ReportDocumentReference.patientReference(patientID)
        let sentText = FHIRDateFormat.instant(sent)
        var recipientReference = [Element(name: "reference", value: recipient)]
        if let recipientName, !recipientName.isEmpty { recipientReference.append(Element(name: "display", value: recipientName)) }
        var payload: [Element] = []
        if let message, !message.isEmpty {
            payload.append(Element(name: "payload", children: [Element(name: "contentString", value: message)]))
        }
        payload.append(Element(name: "payload", children: [
            Element(name: "contentAttachment", children: [
                Element(name: "contentType", value: document.contentType),
                Element(name: "data", value: document.data.base64EncodedString()),
                Element(name: "size", value: String(document.data.count), valueKind: .number),
                Element(name: "hash", value: Data(Insecure.SHA1.hash(data: document.data)).base64EncodedString()),
                Element(name: "title", value: document.title),
                Element(name: "creation", value: sentText),
            ]),
        ]))
        let communication = Element.resource("Communication", children: [
            Element(name: "id", value: id),
            Element(name: "identifier", children: [
                Element(name: "system", value: Self.identifierSystem), Element(name: "value", value: id),
            ]),
            Element(name: "status", value: "completed"),
            Element(name: "category", children: [
                Self.coding(Self.categorySystem, "notification", "Notification"),
            ]),
            Element(name: "subject", children: [Element(name: "reference", value: patient)]),
            Element(name: "topic", children: [Element(name: "text", value: document.title)]),
            Element(name: "sent", value: sentText),
            Element(name: "recipient", children: recipientReference),
            Element(name: "sender", children: [Element(name: "reference", value: patient)]),
        ] + payload)
        let provenance = Element.resource("Provenance", children: [
            Element(name: "id", value: Self.provenanceID(shareID: id)),
            Element(name: "target", children: [Element(name: "reference", value: "Communication/\(id)")]),
            Element(name: "recorded", value: sentText),
            Element(name: "agent", children: [
                Element(name: "type", children: [Self.coding("http://terminology.hl7.org/CodeSystem/provenance-participant-type", "author", "Author")]),
                Element(name: "who", children: [Element(name: "reference", value: patient)]),
            ]),
            Element(name: "agent", children: [
                Element(name: "type", children: [Self.coding("http://terminology.hl7.org/CodeSystem/provenance-participant-type", "assembler", "Assembler")]),
                Element(name: "who", children: [Element(name: "display", value: generator)]),
                Element(name: "onBehalfOf", children: [Element(name: "reference", value: patient)]),
            ]),
        ])
        return (communication, provenance)
    }

    /// The Bundle entries the outbox sends: `PUT Communication/<id>` (the share's id), then `PUT
    /// Provenance/<id derived from the share's>` whose target names `Communication/<id>`. Both are
    /// updates by id, so the same share sent again (its answer lost to a kill or a dropped connection)
    /// stores nothing twice, and the Provenance's reference resolves in a batch Bundle as in a
    /// transaction: a batch does not resolve one entry's `urn:uuid` in another.
    public func entries() -> [Element] {
        let (communication, provenance) = resources()
        return [Element.updateEntry(communication), Element.updateEntry(provenance)]
    }

    public static func provenanceID(shareID: String) -> String {
        ContentHash.uuid(named: "caregate-share-provenance|\(shareID)").canonicalString.lowercased()
    }

    private static func coding(_ system: String, _ code: String, _ display: String) -> Element {
        Element(name: "coding", children: [
            Element(name: "system", value: system), Element(name: "code", value: code), Element(name: "display", value: display),
        ])
    }
}
