import FHIR
import Foundation
import Store

/// The patients a sync pulls for (``SyncConfiguration/Cohort``): who is in the cohort now, and who was
/// at the last run. A patient new to it is pulled in full; the others from the cursors on.
struct CohortMembers: Equatable {
    /// Patient ids, in the order the cohort gives them.
    var current: [String]
    /// The ids that were members at the last run.
    var known: Set<String>

    /// Ids per search request: `_id` and `patient` take several, comma-separated (an OR), and a URL
    /// stays short enough for any server.
    static let idsPerSearch = 50

    /// The searches that pull `type` for `members`: one unrestricted search without a cohort, or for a
    /// type no patient search parameter reaches (Practitioner, Organization...); else `_id=` (Patient)
    /// or `patient=` searches, those for known members incremental, those for new members not.
    static func searches(for type: String, members: CohortMembers?) -> [(parameters: [(String, String)], incremental: Bool)] {
        guard let members, type == "Patient" || PatientSearchTypes.all.contains(type) else { return [([], true)] }
        let known = members.current.filter { members.known.contains($0) }
        let new = members.current.filter { !members.known.contains($0) }
        var searches: [(parameters: [(String, String)], incremental: Bool)] = []
        for (ids, incremental) in [(known, true), (new, false)] {
            for start in stride(from: 0, to: ids.count, by: idsPerSearch) {
                let chunk = ids[start..<min(start + idsPerSearch, ids.count)]
                searches.append(type == "Patient"
                    ? ([("_id", chunk.joined(separator: ","))], incremental)
                    : ([("patient", chunk.map { "Patient/\($0)" }.joined(separator: ","))], incremental))
            }
        }
        return searches
    }
}

extension SyncJob {
    /// The cohort's members now (from the configuration, the Group, or a Patient search) and at the
    /// last run; nil when the sync pulls everyone.
    func cohortMembers() throws -> CohortMembers? {
        guard let cohort = configuration.cohort else { return nil }
        var ids: [String] = []
        switch cohort {
        case .ids(let list):
            ids = list
        case .group(let id):
            // An inactive member (R4 Group.member.inactive) has left the group.
            let group = try client.read("Group", id)
            ids = group.children(named: "member").filter { $0.childValue("inactive") != "true" }
                .compactMap { $0.child(named: "entity")?.childValue("reference") }
                .compactMap(Self.patientID(inReference:))
        case .search(let query):
            let parameters = query.split(separator: "&").map { pair -> (String, String) in
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                return (parts[0], parts.count > 1 ? parts[1] : "")
            }
            try client.search("Patient", parameters + [("_count", String(configuration.pageSize))]) { page in
                ids += page.children(named: "entry").compactMap { $0.child(named: "resource") }
                    .filter { $0.resourceType == "Patient" }.compactMap { $0.childValue("id") }
                return true
            }
        }
        var seen: Set<String> = []
        ids = ids.filter { seen.insert($0).inserted }
        let last = try store.checkpoint(server: checkpointServer, resourceType: Self.cohortCheckpoint)?.cursor ?? ""
        return CohortMembers(current: ids, known: Set(last.split(separator: ",").map(String.init)))
    }

    /// `Patient/123`, `http://server/fhir/Patient/123` or `Patient/123/_history/2` -> `123`.
    static func patientID(inReference reference: String) -> String? {
        var parts = reference.split(separator: "/").map(String.init)
        if parts.count >= 2, parts[parts.count - 2] == "_history" { parts.removeLast(2) }
        guard parts.count >= 2, parts[parts.count - 2] == "Patient", let id = parts.last, !id.isEmpty else { return nil }
        return id
    }
}
