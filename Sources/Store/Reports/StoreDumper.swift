import CareModel
import Foundation

/// Writes the care entities of a store out, either as CareKit JSON or as one readable line each.
///
/// CareKit JSON is one object with an array per kind (`patients`, `carePlans`, `contacts`, `tasks`,
/// `outcomes`), each entity encoded as CareKitStore's Codable types encode it (``CareKitJSON``), one per
/// line. Entities are read in chunks and written as they come, so a store of millions of outcomes is
/// dumped in constant memory.
public struct StoreDumper {
    public enum Format: String, CaseIterable, Sendable {
        case text
        case carekitJSON = "carekit-json"
    }

    private static let sections: [(EntityKind, String)] = [
        (.patient, "patients"), (.carePlan, "carePlans"), (.contact, "contacts"), (.task, "tasks"), (.outcome, "outcomes"),
    ]

    public let store: any Store
    public let format: Format
    /// Every version (tombstones included) rather than the current ones.
    public let allVersions: Bool

    public init(store: any Store, format: Format, allVersions: Bool = false) {
        self.store = store
        self.format = format
        self.allVersions = allVersions
    }

    /// Writes the dump to `write`, piece by piece.
    public func dump(to write: (Data) throws -> Void) throws {
        if format == .carekitJSON { try write(Data("{\n".utf8)) }
        for (index, (kind, name)) in Self.sections.enumerated() {
            if format == .carekitJSON { try write(Data("\"\(name)\": [\n".utf8)) }
            var first = true
            try forEach(kind) { entity in
                switch format {
                case .carekitJSON:
                    var line = first ? Data() : Data(",\n".utf8)
                    line.append(try CareKitJSON.encode(entity))
                    try write(line)
                case .text:
                    try write(Data((Self.line(entity) + "\n").utf8))
                }
                first = false
            }
            if format == .carekitJSON {
                let close = (first ? "]" : "\n]") + (index == Self.sections.count - 1 ? "\n}\n" : ",\n")
                try write(Data(close.utf8))
            }
        }
    }

    private func forEach(_ kind: EntityKind, _ body: (CareEntity) throws -> Void) throws {
        if allVersions {
            try store.forEachVersion(kind, body)
        } else {
            try store.forEachEntity(kind, .current, body)
        }
    }

    /// One readable line for an entity: kind, id, version and the fields that tell it apart.
    static func line(_ entity: CareEntity) -> String {
        let metadata = entity.metadata
        var parts = ["\(entity.kind)", entity.id, "uuid=\(metadata.uuid.uuidString)", "effective=\(metadata.effectiveDate.formatted(.iso8601))"]
        if let deleted = metadata.deletedDate { parts.append("deleted=\(deleted.formatted(.iso8601))") }
        switch entity {
        case .patient(let patient):
            let name = [patient.name.givenName, patient.name.familyName].compactMap { $0 }.joined(separator: " ")
            if !name.isEmpty { parts.append("name=\"\(name)\"") }
        case .carePlan(let plan):
            parts.append("title=\"\(plan.title)\"")
            if let patient = plan.patientID { parts.append("patient=\(patient)") }
        case .contact(let contact):
            if let plan = contact.carePlanID { parts.append("carePlan=\(plan)") }
        case .task(let task):
            if let title = task.title { parts.append("title=\"\(title)\"") }
            if let plan = task.carePlanID { parts.append("carePlan=\(plan)") }
        case .outcome(let outcome):
            parts.append("occurrence=\(outcome.taskOccurrenceIndex)")
            if !outcome.values.isEmpty { parts.append("values=" + outcome.values.map(EventDayView.text).joined(separator: ",")) }
        }
        if let provenance = metadata.provenance { parts.append("from=\(provenance.fhirType)/\(provenance.fhirID)") }
        return parts.joined(separator: " ")
    }
}
