import FHIR
import Foundation
import Sync

/// Puts FHIR files on a test's server as the provider's EHR would hold them, under the ids the files
/// give: each file as one transaction of PUTs (a Bundle's entries, or the file's one resource), so that
/// the server keeps the ids (a POST would have it make up new ones) and turns the `urn:uuid:`
/// references between entries into `Type/id`.
func loadKeepingIDs(_ paths: [String], into base: URL) throws {
    let client = FHIRClient(base: base, timeout: 120)
    for source in FHIRInput.sources(for: paths) {
        guard case .file(let path) = source else { continue }
        let resource = try FHIRDocument.read(try Data(contentsOf: URL(fileURLWithPath: path))).singleResource()
        let resources = resource.resourceType == "Bundle"
            ? resource.children(named: "entry").map { ($0.childValue("fullUrl"), $0.child(named: "resource")) }
            : [(nil, resource)]
        var entries: [Element] = []
        for (fullUrl, resource) in resources {
            guard let resource, let type = resource.resourceType, let id = resource.childValue("id") else { continue }
            entries.append(Element(name: "entry", children: (fullUrl.map { [Element(name: "fullUrl", value: $0)] } ?? []) + [
                Element(name: "resource", resourceType: type, children: resource.children),
                Element(name: "request", children: [Element(name: "method", value: "PUT"), Element(name: "url", value: "\(type)/\(id)")]),
            ]))
        }
        _ = try client.submit(Element.resource("Bundle", children: [Element(name: "type", value: "transaction")] + entries))
    }
}

/// Every `type` resource on the server at `client` (searched in pages of 200, every page followed).
func allResources(_ type: String, on client: FHIRClient) throws -> [Element] {
    var found: [Element] = []
    try client.search(type, [("_count", "200")]) { page in
        found += page.children(named: "entry").compactMap { $0.child(named: "resource") }
        return true
    }
    return found
}
