import CareModel
import FHIR
import Foundation
import Insights
import Store

/// A consent decision as R4 resources: the patient's **Consent** to the operator's terms, and the
/// **Provenance** that carries the signature, as the transaction entries its outbox entry holds
/// (``PayloadOutbox``). Docs/consent.md shows both.
///
/// The Consent's id is derived from the patient and the terms' id, so every decision on the same terms
/// (agree, later withdraw, agree to a new version) is a `PUT` of the same Consent: the server keeps one,
/// in its latest state, with its history. Each decision's Provenance has an id derived from the
/// decision (`PUT` too), so sending an entry again, after a lost answer or a killed run, stores nothing
/// twice.
public enum ConsentResources {
    /// What the decision says, what it was signed with, and the PDF of the terms as signed.
    public struct Input: Sendable {
        public var decision: ConsentDecision
        public var terms: ConsentTerms
        /// The signed PDF: the decision's own, or for a withdrawal the agreement's (the Consent keeps it).
        public var document: Data?
        /// The PNG of the signature, when the patient signed.
        public var signatureImage: Data?
        /// When the resources are made (Provenance.recorded).
        public var recorded: Date

        public init(decision: ConsentDecision, terms: ConsentTerms, document: Data?, signatureImage: Data?, recorded: Date) {
            self.decision = decision
            self.terms = terms
            self.document = document
            self.signatureImage = signatureImage
            self.recorded = recorded
        }
    }

    /// Provenance.signature.type: ASTM E1762-95 *Consent Signature*.
    public static let signatureType = (system: "urn:iso-astm:E1762-95:2013", code: "1.2.840.10065.1.12.1.7", display: "Consent Signature")

    /// The Consent of `patientID` to the terms `termsID`: the same for every decision on them.
    public static func consentID(patientID: String, termsID: String) -> String {
        ContentHash.uuid(named: "caregate-consent|\(patientID)|\(termsID)").canonicalString.lowercased()
    }

    /// The Provenance of decision `uuid`.
    public static func provenanceID(decision uuid: UUID) -> String {
        ContentHash.uuid(named: "caregate-consent-provenance|\(uuid.canonicalString)").canonicalString.lowercased()
    }

    /// Consent.status of a decision.
    public static func status(_ choice: ConsentChoice) -> String {
        switch choice {
        case .agree: return "active"
        case .decline: return "rejected"
        case .withdraw: return "inactive"
        }
    }

    /// The Consent and the Provenance.
    public static func resources(_ input: Input) -> (consent: Element, provenance: Element) {
        let decision = input.decision, terms = input.terms
        let patient = ReportDocumentReference.patientReference(decision.patientID)
        let id = consentID(patientID: decision.patientID, termsID: terms.id)
        let signed = FHIRDateFormat.instant(decision.date)
        let coding: (String, String, String) -> Element = { system, code, display in
            Element(name: "coding", children: [
                Element(name: "system", value: system), Element(name: "code", value: code), Element(name: "display", value: display),
            ])
        }
        let reference: (String, String) -> Element = { name, value in Element(name: name, children: [Element(name: "reference", value: value)]) }
        var consent: [Element] = [
            Element(name: "id", value: id),
            Element(name: "identifier", children: [Element(name: "system", value: "urn:ietf:rfc:3986"), Element(name: "value", value: "urn:uuid:\(id)")]),
            Element(name: "status", value: status(decision.choice)),
            Element(name: "scope", children: [coding("http://terminology.hl7.org/CodeSystem/consentscope", terms.scope, scopeDisplay(terms.scope))]),
        ]
        consent += terms.categories.map { Element(name: "category", children: [coding($0.system, $0.code, $0.display)]) }
        consent += [reference("patient", patient), Element(name: "dateTime", value: signed), reference("performer", patient)]
        if terms.organizationReference != nil || terms.organizationName != nil {
            consent.append(Element(name: "organization", children: [
                terms.organizationReference.map { Element(name: "reference", value: $0) }, terms.organizationName.map { Element(name: "display", value: $0) },
            ].compactMap { $0 }))
        }
        if let pdf = input.document {
            consent.append(Element(name: "sourceAttachment", children: attachment(pdf, title: "\(terms.title) (version \(decision.termsVersion)), signed")))
        }
        consent.append(Element(name: "policy", children: [Element(name: "uri", value: ConsentTerms.policyPrefix + terms.id + ":" + decision.termsVersion)]))
        consent.append(Element(name: "provision", children: [Element(name: "type", value: "permit")] + terms.permits.map { permit in
            Element(name: "provision", children: [
                Element(name: "type", value: "permit"),
                Element(name: "action", children: [coding("http://terminology.hl7.org/CodeSystem/consentaction", permit.action, actionDisplay(permit.action))]),
            ] + permit.resourceTypes.map { type in
                Element(name: "class", children: [Element(name: "system", value: "http://hl7.org/fhir/resource-types"), Element(name: "code", value: type)])
            })
        }))
        var provenance: [Element] = [
            Element(name: "id", value: provenanceID(decision: decision.uuid)),
            reference("target", "Consent/\(id)"),
            Element(name: "recorded", value: FHIRDateFormat.instant(input.recorded)),
            Element(name: "agent", children: [
                Element(name: "type", children: [coding("http://terminology.hl7.org/CodeSystem/provenance-participant-type", "author", "Author")]),
                Element(name: "who", children: [Element(name: "reference", value: patient)] + (decision.signerName.map { [Element(name: "display", value: $0)] } ?? [])),
            ]),
        ]
        if let image = input.signatureImage {
            provenance.append(Element(name: "signature", children: [
                coding(signatureType.system, signatureType.code, signatureType.display).renamed("type"),
                Element(name: "when", value: signed),
                reference("who", patient),
                Element(name: "sigFormat", value: "image/png"),
                Element(name: "data", value: image.base64EncodedString()),
            ]))
        }
        return (Element.resource("Consent", children: consent), Element.resource("Provenance", children: provenance))
    }

    /// The transaction entries of the decision: `PUT Consent/<id>`, `PUT Provenance/<id>`.
    public static func entries(_ input: Input) -> [Element] {
        let (consent, provenance) = resources(input)
        return [Element.updateEntry(consent), Element.updateEntry(provenance)]
    }

    /// The signed PDF as an R4 Attachment: `contentType`, `data`, `size`, `hash` (the SHA-1 of the data,
    /// base64, as Attachment.hash is defined), `title`.
    static func attachment(_ pdf: Data, title: String) -> [Element] {
        [
            Element(name: "contentType", value: "application/pdf"),
            Element(name: "data", value: pdf.base64EncodedString()),
            Element(name: "size", value: String(pdf.count), valueKind: .number),
            Element(name: "hash", value: ConsentSubmission.sha1(pdf)),
            Element(name: "title", value: title),
        ]
    }

    static func scopeDisplay(_ code: String) -> String {
        ["patient-privacy": "Privacy Consent", "research": "Research", "treatment": "Treatment", "adr": "Advanced Care Directive"][code] ?? code
    }

    static func actionDisplay(_ code: String) -> String {
        ["access": "Access", "collect": "Collect", "disclose": "Disclose", "use": "Use", "correct": "Access and Correct"][code] ?? code
    }
}

extension Element {
    /// This element under another name (a coding as a Provenance signature's `type`, which is a Coding).
    fileprivate func renamed(_ name: String) -> Element {
        var copy = self
        copy.name = name
        return copy
    }
}
