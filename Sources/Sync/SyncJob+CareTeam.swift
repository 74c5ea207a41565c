import FHIR
import Foundation
import Mapping
import Pipeline
import Store

/// What a patient's care team is computed from, kept whole in an incremental pull.
///
/// The Patient mapping's `members:` rules (Docs/care-team.md) compute a patient's care team, when the
/// Patient is imported, from what the same import holds: the patient's Encounters, CareTeams, CarePlans,
/// MedicationRequests and the practitioners they name. An incremental pull holds only what changed since
/// the cursors: a Patient pulled again without its Encounters would lose the practitioners who saw them.
/// So, for each patient an incremental run touches (its Patient, or a resource of those types naming it,
/// was pulled), the run also pulls that patient's Patient, their resources of those types and the
/// Practitioners and PractitionerRoles these name and the roles of those practitioners, in full, leaving
/// out what the pages hold already.
struct CareTeamScope {
    /// `Type/id` of every resource the pages hold.
    var held: Set<String> = []
    /// The patients (ids) whose care team the import recomputes.
    var patients: Set<String> = []
    /// `Practitioner/id` and `PractitionerRole/id` the pages name.
    var practitioners: Set<String> = []

    /// Notes what `resource`, a resource of `type` just pulled, touches; `teamTypes` are the types the
    /// care team is read from.
    mutating func note(_ resource: Element, type: String, teamTypes: Set<String>) {
        guard let id = resource.childValue("id") else { return }
        held.insert("\(type)/\(id)")
        if type == "Patient" {
            patients.insert(id)
        } else if teamTypes.contains(type) {
            for name in ["subject", "patient"] {
                if let reference = resource.child(named: name)?.childValue("reference"), let patient = SyncJob.patientID(inReference: reference) {
                    patients.insert(patient)
                }
            }
        }
        if type == "Patient" || teamTypes.contains(type) { Self.practitionerReferences(in: resource, into: &practitioners) }
    }

    /// Every `Practitioner/id` and `PractitionerRole/id` reference in `element`, relative or absolute.
    static func practitionerReferences(in element: Element, into found: inout Set<String>) {
        for child in element.children {
            if child.name == "reference", let text = child.value {
                let parts = text.split(separator: "/")
                if parts.count >= 2, ["Practitioner", "PractitionerRole"].contains(String(parts[parts.count - 2])), !text.contains("?") {
                    found.insert("\(parts[parts.count - 2])/\(parts[parts.count - 1])")
                }
            } else if child.resourceType == nil {
                practitionerReferences(in: child, into: &found)
            }
        }
    }
}

extension SyncJob {
    /// The types the Patient mapping's care-team rules read (`reverse:`), which a patient search reaches.
    func careTeamTypes() throws -> Set<String> {
        let rules = try gateway.mappings().mapping(for: "Patient")?.entities.flatMap(\.members) ?? []
        return Set(rules.compactMap(\.reverseType)).filter { PatientSearchTypes.all.contains($0) }
    }

    /// The pages that complete `scope` for its patients' care teams: their Patient, their resources of
    /// `types`, then the practitioners all of these name and their roles, each pulled in full, less what
    /// the scope holds.
    /// Only types the configuration pulls are pulled.
    func careTeamPages(_ scope: CareTeamScope, types: Set<String>) throws -> [FHIRInput.Source] {
        var scope = scope
        var pages: [FHIRInput.Source] = []
        let configured = Set(configuration.resources)
        let patients = scope.patients.sorted()
        func add(_ type: String, _ parameters: [(String, String)]) throws {
            var resources: [Element] = []
            try client.search(type, parameters + [("_count", String(configuration.pageSize))]) { page in
                for entry in page.children(named: "entry") {
                    guard let resource = entry.child(named: "resource"), resource.resourceType == type, let id = resource.childValue("id"),
                          scope.held.insert("\(type)/\(id)").inserted else { continue }
                    scope.note(resource, type: type, teamTypes: types)
                    resources.append(resource)
                }
                return true
            }
            guard !resources.isEmpty else { return }
            let bundle = FHIRJSON.write(Element.resource("Bundle", children: [Element(name: "type", value: "collection")]
                + resources.map { Element(name: "entry", children: [Element(name: "resource", resourceType: type, children: $0.children)]) }))
            pages.append(.memory(name: "care team \(type) page \(pages.count + 1)", bytes: bundle))
        }
        for start in stride(from: 0, to: patients.count, by: CohortMembers.idsPerSearch) {
            let chunk = Array(patients[start..<min(start + CohortMembers.idsPerSearch, patients.count)])
            let missing = chunk.filter { !scope.held.contains("Patient/\($0)") }
            if !missing.isEmpty, configured.contains("Patient") { try add("Patient", [("_id", missing.joined(separator: ","))]) }
            for type in types.sorted() where configured.contains(type) {
                try add(type, [("patient", chunk.map { "Patient/\($0)" }.joined(separator: ","))])
            }
        }
        // A practitioner's roles count though nothing references them (the rules' `%roles`): searched by
        // `practitioner`, then what is still missing by id.
        if configured.contains("PractitionerRole") {
            let named = scope.practitioners.filter { $0.hasPrefix("Practitioner/") }.sorted()
            for start in stride(from: 0, to: named.count, by: CohortMembers.idsPerSearch) {
                try add("PractitionerRole", [("practitioner", named[start..<min(start + CohortMembers.idsPerSearch, named.count)].joined(separator: ","))])
            }
        }
        for type in ["PractitionerRole", "Practitioner"] where configured.contains(type) {
            let ids = scope.practitioners.filter { $0.hasPrefix(type + "/") && !scope.held.contains($0) }.map { String($0.dropFirst(type.count + 1)) }.sorted()
            for start in stride(from: 0, to: ids.count, by: CohortMembers.idsPerSearch) {
                try add(type, [("_id", ids[start..<min(start + CohortMembers.idsPerSearch, ids.count)].joined(separator: ","))])
            }
        }
        return pages
    }
}
