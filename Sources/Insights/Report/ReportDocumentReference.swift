import CareModel
import Crypto
import FHIR
import Foundation
import Mapping

/// A care-team report as FHIR: a US Core DocumentReference carrying the PDF, and the Provenance that
/// says CareGate assembled it, as a transaction Bundle (PUT by ids derived from the patient and the
/// period, so that the same report sent twice is stored once).
///
/// The DocumentReference (US Core 6, `us-core-documentreference`): `status` current; `type` LOINC
/// 11506-3 *Progress note* (a note on how the care plan is going, from US Core's clinical-notes codes);
/// `category` clinical-note; `subject` the patient; `date` when it was generated; `author` CareGate as a
/// contained Device; `content.attachment` the PDF (`contentType`, `size`, SHA-1 `hash`, `title`,
/// `creation`); `context.period` the report's days.
public enum ReportDocumentReference {
    public static let profile = "http://hl7.org/fhir/us/core/StructureDefinition/us-core-documentreference"
    public static let typeCode = (system: "http://loinc.org", code: "11506-3", display: "Progress note")

    /// The system of the identifier every report carries (``identifierValue(patientID:from:to:)``): how
    /// the care team's systems find the report of a patient and period.
    public static let identifierSystem = "urn:caregate:report"

    /// `Patient/<id>/<from>/<to>`: one value per patient and period (the days, `YYYY-MM-DD`, inclusive).
    public static func identifierValue(patientID: String, from: String, to: String) -> String {
        "\(patientReference(patientID))/\(from)/\(to)"
    }

    /// The id of the DocumentReference of `patientID`'s report for the days `from` to `to` (inclusive):
    /// the same for every run.
    public static func id(patientID: String, from: String, to: String) -> String {
        ContentHash.uuid(named: "caregate-report|\(patientID)|\(from)|\(to)").canonicalString.lowercased()
    }

    /// The DocumentReference and its Provenance.
    public static func resources(report: CareTeamReport, pdf: Data) -> (document: Element, provenance: Element) {
        let from = report.adherence.first?.date ?? ""
        let to = report.adherence.last?.date ?? from
        let id = id(patientID: report.patientID, from: from, to: to)
        let created = FHIRDateFormat.dateTime(report.generated, in: report.timeZone)
        let title = "Care-team report \(from) to \(to)"
        let coding: (String, String, String) -> Element = { system, code, display in
            Element(name: "coding", children: [
                Element(name: "system", value: system), Element(name: "code", value: code), Element(name: "display", value: display),
            ])
        }
        let document = Element.resource("DocumentReference", children: [
            Element(name: "id", value: id),
            Element(name: "meta", children: [Element(name: "profile", value: profile)]),
            Element(name: "contained", resourceType: "Device", children: [
                Element(name: "id", value: "caregate"),
                Element(name: "deviceName", children: [Element(name: "name", value: report.generator), Element(name: "type", value: "manufacturer-name")]),
            ]),
            Element(name: "identifier", children: [Element(name: "system", value: "urn:ietf:rfc:3986"), Element(name: "value", value: "urn:uuid:\(id)")]),
            Element(name: "identifier", children: [
                Element(name: "system", value: identifierSystem),
                Element(name: "value", value: identifierValue(patientID: report.patientID, from: from, to: to)),
            ]),
            Element(name: "status", value: "current"),
            Element(name: "type", children: [coding(typeCode.system, typeCode.code, typeCode.display), Element(name: "text", value: "Care-team report")]),
            Element(name: "category", children: [
                coding("http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category", "clinical-note", "Clinical Note"),
            ]),
            Element(name: "subject", children: [Element(name: "reference", value: patientReference(report.patientID))]),
            Element(name: "date", value: created),
            Element(name: "author", children: [Element(name: "reference", value: "#caregate"), Element(name: "display", value: report.generator)]),
            Element(name: "description", value: title),
            Element(name: "content", children: [
                Element(name: "attachment", children: [
                    Element(name: "contentType", value: "application/pdf"),
                    Element(name: "language", value: "en"),
                    Element(name: "data", value: pdf.base64EncodedString()),
                    Element(name: "size", value: String(pdf.count), valueKind: .number),
                    Element(name: "hash", value: Data(Insecure.SHA1.hash(data: pdf)).base64EncodedString()),
                    Element(name: "title", value: title),
                    Element(name: "creation", value: created),
                ]),
            ]),
            Element(name: "context", children: [
                Element(name: "period", children: [Element(name: "start", value: from), Element(name: "end", value: to)]),
            ]),
        ])
        let provenance = Element.resource("Provenance", children: [
            Element(name: "id", value: provenanceID(documentID: id)),
            Element(name: "target", children: [Element(name: "reference", value: "DocumentReference/\(id)")]),
            Element(name: "recorded", value: FHIRDateFormat.instant(report.generated)),
            Element(name: "agent", children: [
                Element(name: "type", children: [coding(
                    "http://terminology.hl7.org/CodeSystem/provenance-participant-type", "assembler", "Assembler")]),
                Element(name: "who", children: [Element(name: "display", value: report.generator)]),
                Element(name: "onBehalfOf", children: [Element(name: "reference", value: patientReference(report.patientID))]),
            ]),
        ])
        return (document, provenance)
    }

    /// The patient's reference: their id as it is when it is already `Patient/<id>` (what an import
    /// from FHIR makes), else `Patient/<id>`.
    public static func patientReference(_ patientID: String) -> String {
        patientID.hasPrefix("Patient/") ? patientID : "Patient/\(patientID)"
    }

    public static func provenanceID(documentID: String) -> String {
        ContentHash.uuid(named: "caregate-report-provenance|\(documentID)").canonicalString.lowercased()
    }

    /// The Bundle entries the sync job sends: `PUT DocumentReference/<id>` (an id derived from the
    /// patient and the period), then `PUT Provenance/<id>` (derived from the report's), whose target names
    /// `DocumentReference/<id>`. Updates by id: neither a second run nor a lost answer stores a report
    /// twice, and the Provenance's reference resolves in a batch Bundle as in a transaction.
    public static func entries(report: CareTeamReport, pdf: Data) -> [Element] {
        let (document, provenance) = resources(report: report, pdf: pdf)
        return [Element.updateEntry(document), Element.updateEntry(provenance)]
    }

    /// Both as a transaction Bundle: `PUT DocumentReference/<id>`, `PUT Provenance/<id>`.
    public static func bundle(report: CareTeamReport, pdf: Data) -> Element {
        let (document, provenance) = resources(report: report, pdf: pdf)
        return Element.resource("Bundle", children: [
            Element(name: "id", value: ContentHash.uuid(named: "caregate-report-bundle|\(document.childValue("id") ?? "")").canonicalString.lowercased()),
            Element(name: "type", value: "transaction"),
            Element(name: "timestamp", value: FHIRDateFormat.instant(report.generated)),
            Element.updateEntry(document), Element.updateEntry(provenance),
        ])
    }
}
