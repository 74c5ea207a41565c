import CareModel
import Foundation

/// Writes the care entities of a store out, either as CareKit JSON or as one readable line each.
///
/// CareKit JSON is CareKit 4.0's wire shape (``CareKitWireObject``), grouped by patient, since a CareKit
/// store holds one patient:
/// - with a patient (`--patient ID`): one object with an array per kind (`patients`, `carePlans`,
///   `contacts`, `tasks`, `outcomes`), one entity per line: that patient, its care plans, their tasks
///   and contacts, and the outcomes of those tasks. It decodes into one CareKit store;
/// - without: JSON Lines, one such object per patient on one line each, in the order the patients were
///   stored; the entities that belong to no patient (a care plan without a patient, a task or contact
///   without a care plan whose linkage names no patient, and their outcomes) follow on a last line whose
///   `patients` array is empty.
///
/// A task without a care plan (a log task, for Observations no plan asked for) belongs to the patient
/// ``taskPatient`` names: the store links tasks to patients only through care plans, and which user info
/// key names a task's patient is the mappings' business, not the store's.
///
/// Links are by version UUID, set to the versions in the dump (``CareKitLinks``): a care plan's
/// `patientUUID` is its patient's, a task's or contact's `carePlanUUID` its care plan's. Outcomes name
/// the task version they were recorded against (`taskUUID`); in CareKit JSON an earlier version of a
/// task that an outcome was recorded against is written too (before the task's current one), so that
/// each object holds every version its outcomes name, as a CareKit store does (a log that got a new
/// version keeps its readings on the old one).
///
/// Patients, care plans, contacts and tasks are read into memory; outcomes, the bulk of a store, are read
/// a patient at a time by id.
public struct StoreDumper {
    public enum Format: String, CaseIterable, Sendable {
        case text
        case carekitJSON = "carekit-json"
    }

    /// Why a dump cannot be written.
    public enum DumpError: Error, CustomStringConvertible, Equatable {
        /// `--patient` names no patient of the store (no current one, without `--all-versions`).
        case unknownPatient(String)

        public var description: String {
            switch self {
            case .unknownPatient(let id): return "the store has no patient '\(id)'"
            }
        }
    }

    private static let sections: [(EntityKind, String)] = [
        (.patient, "patients"), (.carePlan, "carePlans"), (.contact, "contacts"), (.task, "tasks"), (.outcome, "outcomes"),
    ]

    public let store: any Store
    public let format: Format
    /// Every version (tombstones included) rather than the current ones.
    public let allVersions: Bool
    /// Only this patient's entities.
    public let patientID: String?
    /// The patient id of a task that has no care plan, if it names one.
    public let taskPatient: @Sendable (CareTask) -> String?

    public init(
        store: any Store, format: Format, allVersions: Bool = false, patientID: String? = nil,
        taskPatient: @escaping @Sendable (CareTask) -> String? = { _ in nil }
    ) {
        self.store = store
        self.format = format
        self.allVersions = allVersions
        self.patientID = patientID
        self.taskPatient = taskPatient
    }

    /// Writes the dump to `write`, piece by piece.
    public func dump(to write: (Data) throws -> Void) throws {
        if format == .text, patientID == nil {
            for (kind, _) in Self.sections {
                try forEach(kind) { try write(Data((Self.line($0) + "\n").utf8)) }
            }
            return
        }
        let groups = try PatientGroups(dumper: self)
        if let patientID {
            guard let group = groups.group(ofPatient: patientID) else { throw DumpError.unknownPatient(patientID) }
            let outcomes = try self.outcomes(ids: groups.outcomeIDs[group] ?? [])
            switch format {
            case .text:
                for entity in groups.members[group] + outcomes { try write(Data((Self.line(entity) + "\n").utf8)) }
            case .carekitJSON:
                let earlier = try earlierTaskVersions(namedBy: outcomes, besides: groups.members[group])
                try writeObject(earlier + groups.members[group] + outcomes, links: groups.links, lines: true, to: write)
            }
            return
        }
        for group in groups.members.indices where !groups.members[group].isEmpty || groups.outcomeIDs[group] != nil {
            let outcomes = try self.outcomes(ids: groups.outcomeIDs[group] ?? [])
            let earlier = try earlierTaskVersions(namedBy: outcomes, besides: groups.members[group])
            try writeObject(earlier + groups.members[group] + outcomes, links: groups.links, lines: false, to: write)
        }
    }

    /// The task versions `outcomes` were recorded against that `members` does not hold (earlier versions
    /// of their tasks), oldest first; none when every version is dumped anyway (`allVersions`).
    private func earlierTaskVersions(namedBy outcomes: [CareEntity], besides members: [CareEntity]) throws -> [CareEntity] {
        guard !allVersions else { return [] }
        let dumped = Set(members.lazy.filter { $0.kind == .task }.map(\.metadata.uuid))
        var missing: Set<UUID> = []
        var taskIDs: [String] = []
        for case .outcome(let outcome) in outcomes where !dumped.contains(outcome.taskUUID) {
            if missing.insert(outcome.taskUUID).inserted, let id = outcome.taskID { taskIDs.append(id) }
        }
        guard !missing.isEmpty else { return [] }
        return try store.histories(.task, ids: Array(Set(taskIDs))).filter { missing.contains($0.metadata.uuid) }
    }

    /// The entities as CareGate stores them (each entity's own `Codable` encoding, ``CareKitJSON/encode(_:)-(CareEntity)``,
    /// links by stable id): one object with an array per kind. What mapping golden tests compare, so that
    /// their expected files do not depend on the app wire shape.
    public func dumpStoredShape(to write: (Data) throws -> Void) throws {
        try write(Data("{\n".utf8))
        for (index, (kind, name)) in Self.sections.enumerated() {
            try write(Data("\"\(name)\": [\n".utf8))
            var first = true
            try forEach(kind) { entity in
                var line = first ? Data() : Data(",\n".utf8)
                line.append(try CareKitJSON.encode(entity))
                try write(line)
                first = false
            }
            let close = (first ? "]" : "\n]") + (index == Self.sections.count - 1 ? "\n}\n" : ",\n")
            try write(Data(close.utf8))
        }
    }

    /// One object with an array per kind, in the wire shape: an entity per line (`lines`), or all on
    /// one line, ended by a newline.
    private func writeObject(_ entities: [CareEntity], links: CareKitLinks, lines: Bool, to write: (Data) throws -> Void) throws {
        let newline = lines ? "\n" : ""
        var text = Data("{\(newline)".utf8)
        for (index, (kind, name)) in Self.sections.enumerated() {
            text.append(Data("\"\(name)\":\(lines ? " " : "")[\(newline)".utf8))
            var first = true
            for entity in entities where entity.kind == kind {
                if !first { text.append(Data(",\(newline)".utf8)) }
                text.append(try CareKitJSON.encodeWire(links.resolving(entity)))
                first = false
            }
            text.append(Data(((first ? "" : newline) + "]" + (index == Self.sections.count - 1 ? "\(newline)}\n" : ",\(newline)")).utf8))
            try write(text)
            text = Data()
        }
    }

    private func outcomes(ids: [String]) throws -> [CareEntity] {
        guard !ids.isEmpty else { return [] }
        if allVersions { return try store.histories(.outcome, ids: ids) }
        return try store.outcomes(EntityQuery(ids: ids)).map(\.careEntity)
    }

    fileprivate func forEach(_ kind: EntityKind, _ body: (CareEntity) throws -> Void) throws {
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

/// The dumped entities by patient: each patient's group holds the patient, its care plans and their
/// tasks and contacts (in stored order), and the ids of its outcomes; the last group holds what belongs
/// to no patient.
private struct PatientGroups {
    /// The patients, plans, contacts and tasks of each group; the last group has no patient.
    var members: [[CareEntity]] = []
    /// The ids of each group's outcomes, in stored order.
    var outcomeIDs: [Int: [String]] = [:]
    /// The group of each patient id (ids as the store compares them: ``ByteExactID``).
    var groupOfPatient: [ByteExactID: Int] = [:]
    /// The versions links name.
    var links = CareKitLinks()

    init(dumper: StoreDumper) throws {
        var others: [CareEntity] = []
        try dumper.forEach(.patient) { patient in
            links.add(patient)
            if let group = groupOfPatient[ByteExactID(patient.id)] {
                members[group].append(patient)
            } else {
                groupOfPatient[ByteExactID(patient.id)] = members.count
                members.append([patient])
            }
        }
        let orphans = members.count
        var groupOfPlan: [ByteExactID: Int] = [:]
        try dumper.forEach(.carePlan) { entity in
            links.add(entity)
            guard case .carePlan(let plan) = entity else { return }
            let group = plan.patientID.flatMap { groupOfPatient[ByteExactID($0)] } ?? orphans
            groupOfPlan[ByteExactID(plan.id)] = group
            if group == orphans { others.append(entity) } else { members[group].append(entity) }
        }
        var groupOfTask: [ByteExactID: Int] = [:]
        for kind in [EntityKind.contact, .task] {
            try dumper.forEach(kind) { entity in
                let group: Int
                switch entity {
                case .contact(let contact):
                    // Of no care plan: the one patient its linkage names (a RelatedPerson's), as pulls file it.
                    group = contact.carePlanID.flatMap { groupOfPlan[ByteExactID($0)] } ?? contact.metadata.linkage.patientID.flatMap { groupOfPatient[ByteExactID($0)] } ?? orphans
                case .task(let task) where task.carePlanID == nil:
                    group = dumper.taskPatient(task).flatMap { groupOfPatient[ByteExactID($0)] } ?? orphans
                case .task(let task):
                    group = task.carePlanID.flatMap { groupOfPlan[ByteExactID($0)] } ?? orphans
                default:
                    group = orphans
                }
                if kind == .task { groupOfTask[ByteExactID(entity.id)] = group }
                if group == orphans { others.append(entity) } else { members[group].append(entity) }
            }
        }
        members.append(others)
        var seen: Set<ByteExactID> = []
        try dumper.forEach(.outcome) { entity in
            guard case .outcome(let outcome) = entity, seen.insert(ByteExactID(outcome.id)).inserted else { return }
            let group = outcome.taskID.flatMap { groupOfTask[ByteExactID($0)] } ?? orphans
            outcomeIDs[group, default: []].append(outcome.id)
        }
    }

    func group(ofPatient id: String) -> Int? { groupOfPatient[ByteExactID(id)] }
}
