import FHIR
import Foundation
import Pipeline
import Store

extension SyncJob {
    /// The pages of `type` changed since `cursor` (all of them without one, or for a patient new to the cohort), each
    /// as a Bundle of its `type` resources in memory; the counts, the newest `meta.lastUpdated` seen, the
    /// pages, and how many entries of other types the pages held (by type). Included resources
    /// (`search.mode` include) and OperationOutcomes are the search's own and are not counted.
    /// With `claims`, the claims are renewed as the pages come; a page after the claim of `type` was
    /// lost ends its pull.
    func pull(
        _ type: String, from cursor: String?, members: CohortMembers?, scope: inout CareTeamScope, teamTypes: Set<String>, claims: PullClaims?
    ) throws -> (SyncReport.Pulled, String?, [FHIRInput.Source], [String: Int]) {
        let partition = PullPartition.name(server: checkpointServer, resourceType: type)
        var pulled = SyncReport.Pulled()
        var newest: String?
        var pages: [FHIRInput.Source] = []
        var foreign: [String: Int] = [:]
        for search in CohortMembers.searches(for: type, members: members) {
            var parameters = search.parameters + [("_count", String(configuration.pageSize)), ("_sort", "_lastUpdated")]
            // `ge`, not `gt`: resources sharing the last instant are read again (and found unchanged)
            // rather than missed.
            if search.incremental, let cursor { parameters.append(("_lastUpdated", "ge\(cursor)")) }
            try client.search(type, parameters) { page in
                try claims?.renewIfDue()
                if let claims, !claims.holds(partition) { return false }
                var resources: [Element] = []
                for entry in page.children(named: "entry") {
                    guard let resource = entry.child(named: "resource") else { continue }
                    let found = resource.resourceType ?? "a resource without a type"
                    if found == type {
                        resources.append(resource)
                    } else if found != "OperationOutcome", entry.child(named: "search")?.childValue("mode") != "include" {
                        foreign[found, default: 0] += 1
                    }
                }
                guard !resources.isEmpty else { return true }
                for resource in resources { scope.note(resource, type: type, teamTypes: teamTypes) }
                let bundle = FHIRJSON.write(Element.resource("Bundle", children: [Element(name: "type", value: "collection")]
                    + resources.map { Element(name: "entry", children: [Element(name: "resource", resourceType: type, children: $0.children)]) }))
                pages.append(.memory(name: "\(type) page \(pages.count + 1)", bytes: bundle))
                pulled.pages += 1
                pulled.resources += resources.count
                for stamp in resources.compactMap({ $0.child(named: "meta")?.childValue("lastUpdated") }) where stamp > (newest ?? "") { newest = stamp }
                progress?("pulled \(type): \(pulled.resources)")
                return true
            }
        }
        return (pulled, newest, pages, foreign)
    }
}
