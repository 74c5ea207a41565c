import FHIRCore
import FHIRPath
/// The Bundle rules structural validation checks beyond the element definitions: entry `fullUrl`s are
/// absolute, a link relation occurs once, and an entry whose `fullUrl` names a type and id
/// (`.../Patient/1`) holds a resource of that type with that id.
extension ValidationWalk {
    mutating func checkBundle(_ bundle: Element, path: String) {
        var relations: Set<String> = []
        for link in bundle.children(named: "link") {
            guard let relation = link.childValue("relation") else { continue }
            if !relations.insert(relation).inserted {
                report(.error, .invariant, "the link relation '\(relation)' can only occur once", at: path + ".link")
            }
        }
        for (index, entry) in bundle.children(named: "entry").enumerated() {
            let entryPath = "\(path).entry[\(index)]"
            guard let fullUrl = entry.childValue("fullUrl") else { continue }
            if !ReferenceFormat.hasScheme(fullUrl) {
                report(.error, .invalid, "the fullUrl must be an absolute URL (not '\(fullUrl)')", at: entryPath + ".fullUrl")
                continue
            }
            guard let resource = entry.child(named: "resource"), let type = resource.resourceType,
                  !fullUrl.hasPrefix("urn:")
            else { continue }
            if let restful = ReferenceScope.restfulBase(of: fullUrl, metadata: metadata), restful.type == type {
                if let id = resource.childValue("id") {
                    if id != restful.id {
                        report(.error, .invalid, "the fullUrl '\(fullUrl)' does not match the resource id '\(id)'", at: entryPath + ".fullUrl")
                    }
                } else {
                    report(.error, .invalid, "the fullUrl '\(fullUrl)' looks like a RESTful server URL, but the resource has no id",
                           at: entryPath + ".fullUrl")
                }
            }
            let parts = fullUrl.split(separator: "/")
            let named: Substring?
            if parts.count >= 4, parts[parts.count - 2] == "_history" {
                named = parts[parts.count - 4]
            } else if parts.count >= 2 {
                named = parts[parts.count - 2]
            } else {
                named = nil
            }
            if let named, metadata.isResourceType(String(named)), named != type {
                report(.error, .invalid,
                       "the fullUrl '\(fullUrl)' names a \(named), but the entry holds a \(type)", at: entryPath + ".fullUrl")
            }
        }
    }
}
