import CareModel
import Crypto
import FHIR
import Foundation

/// A file result of an active task (a `Data` outcome value: a voice recording, a camera recording) as an
/// R4 DocumentReference (https://hl7.org/fhir/R4/documentreference.html).
///
/// - `status` `current` (`entered-in-error` for a deleted outcome); `type` and `category` from the
///   mapping; `subject` and `author` the patient; `date` when the value was recorded (an instant);
/// - `content.attachment`: `contentType` (the value's `units` when it is a MIME type, as ResearchKit's
///   `ORKFileResult.contentType` is, else the mapping's `content-type`, by default
///   `application/octet-stream`), `data` base64, `size` in bytes before base64, `hash` the base64 SHA-1
///   of the data (R4 Attachment.hash), `title`, `creation`;
/// - `context.related`: what the task was made from (the CarePlan or ServiceRequest), so the provider
///   finds the recording beside the order that asked for it.
///
/// Its id and identifier are set by ``ActiveTaskResultExporter``. A recording is bounded by the app API's
/// push limit (8 MiB a push, so about 6 MiB of data once base64 in JSON); an empty one is refused.
enum ResultDocumentReference {
    static func resource(
        _ document: ActiveTaskMapping.Document, data: Data, units: String?, status: String, patient: String, basedOn: String?, date: Date,
        outcomeID: String
    ) throws -> Element {
        guard !data.isEmpty else {
            throw ExportRefusal(outcomeID: outcomeID, reason: "the file result '\(document.kind)' is empty: an attachment needs data")
        }
        // R4 Attachment.size is an unsignedInt.
        guard data.count <= Int(Int32.max) else {
            throw ExportRefusal(outcomeID: outcomeID, reason: "the file result '\(document.kind)' is \(data.count) bytes, more than an R4 Attachment's size can say")
        }
        let contentType = units.flatMap { ActiveTaskMappingParser.isMIMEType($0) ? $0 : nil } ?? document.contentType
        let created = FHIRDateFormat.instant(date)
        var children: [Element] = [
            Element(name: "status", value: status),
            Element(name: "type", children: [OutcomeExporter.coding(document.type)] + (document.type.display.map { [Element(name: "text", value: $0)] } ?? [])),
        ]
        children += document.categories.map { Element(name: "category", children: [OutcomeExporter.coding($0)]) }
        children += [
            Element(name: "subject", children: [Element(name: "reference", value: patient)]),
            Element(name: "date", value: created),
            Element(name: "author", children: [Element(name: "reference", value: patient)]),
        ]
        if let title = document.title { children.append(Element(name: "description", value: title)) }
        var attachment = [
            Element(name: "contentType", value: contentType),
            Element(name: "data", value: data.base64EncodedString()),
            Element(name: "size", value: String(data.count), valueKind: .number),
            Element(name: "hash", value: Data(Insecure.SHA1.hash(data: data)).base64EncodedString()),
        ]
        if let title = document.title { attachment.append(Element(name: "title", value: title)) }
        attachment.append(Element(name: "creation", value: created))
        children.append(Element(name: "content", children: [Element(name: "attachment", children: attachment)]))
        if let basedOn {
            children.append(Element(name: "context", children: [Element(name: "related", children: [Element(name: "reference", value: basedOn)])]))
        }
        return Element.resource("DocumentReference", children: children)
    }
}
