import FHIRCore
import FHIRPath
/// The Bundle rules structural validation checks beyond the element definitions: entry `fullUrl`s are
/// absolute, a link relation occurs once, an entry whose `fullUrl` names a type and id
/// (`.../Patient/1`) holds a resource of that type with that id, a transaction entry's request agrees with
/// its resource, and a search result's entries agree with their `search.mode`; the Bundle invariants
/// checked natively run from here too, over the same entries.
extension ValidationWalk {
    mutating func checkBundle(_ bundle: Element) {
        var relations: Set<String> = []
        for link in bundle.children(named: "link") {
            guard let relation = link.valueInPlace(of: "relation") else { continue }
            if !relations.insert(relation).inserted {
                report(.error, .invariant, "the link relation '\(relation)' can only occur once", below: ".link")
            }
        }
        let type = bundle.valueInPlace(of: "type")
        // Entries are read in place, by their address in the Bundle's children (alive and unchanged for
        // the whole walk): a copy of each was four retains and releases, and this runs over every entry.
        bundle.children.withUnsafeBufferPointer { children in
            let entries: [UnsafePointer<Element>] = children.baseAddress.map { first in
                children.indices.filter { children[$0].name.hasSameBytes(as: "entry") }.map { first + $0 }
            } ?? []
            checkEntries(entries, type: type, of: bundle)
        }
    }

    /// The rules on the entries (at `entries`, in the Bundle `bundle` of type `type`); an entry's path is
    /// made into text only when an issue is reported there.
    private mutating func checkEntries(_ entries: [UnsafePointer<Element>], type: String?, of bundle: Element) {
        checkBundleInvariants(type: type, entries: entries)
        let searchedTypes = type == "searchset" ? Self.searchedTypes(of: bundle, metadata: metadata) : nil
        for index in entries.indices {
            let entry = entries[index]
            checkRequest(of: entry, bundleType: type, entry: index)
            if type == "searchset" { checkSearchResult(entry.pointee, searchedTypes: searchedTypes, path: Self.entryPath(index)) }
            guard let fullUrl = entry.childValue("fullUrl") else {
                // "The fullUrl element SHALL have a value except that fullUrl can be empty on a POST";
                // results of operations may hold unidentified resources, so this is a warning.
                let method = entry.withChild(named: "request") { $0.childValue("method") } ?? nil
                if entry.hasChild(named: "resource"), method != "POST" {
                    report(.warning, .required, "an entry with a resource should have a fullUrl (only a POST may go without)", below: Self.entryPath(index))
                }
                continue
            }
            if !ReferenceFormat.hasScheme(fullUrl) {
                report(.error, .invalid, "the fullUrl must be an absolute URL (not '\(fullUrl)')", below: Self.entryPath(index) + ".fullUrl")
                continue
            }
            guard let type = entry.withChild(named: "resource", { $0.pointee.resourceType }) ?? nil,
                  !fullUrl.hasBytePrefix("urn:")
            else { continue }
            var entryPath: String { Self.entryPath(index) }  // made only when reported
            if let restful = ReferenceScope.restfulBase(of: fullUrl, metadata: metadata), restful.type == type {
                if let id = entry.withChild(named: "resource", { $0.childValue("id") }) ?? nil {
                    if id != restful.id {
                        report(.error, .invalid, "the fullUrl '\(fullUrl)' does not match the resource id '\(id)'", below: entryPath + ".fullUrl")
                    }
                } else {
                    report(.error, .invalid, "the fullUrl '\(fullUrl)' looks like a RESTful server URL, but the resource has no id",
                           below: entryPath + ".fullUrl")
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
                       "the fullUrl '\(fullUrl)' names a \(named), but the entry holds a \(type)", below: entryPath + ".fullUrl")
            }
        }
    }

    /// The location of a Bundle entry below the Bundle (`.entry[3]`).
    static func entryPath(_ index: Int) -> String { ".entry[\(index)]" }

    /// A transaction or batch entry's request agrees with its resource: a PUT to `Type/id` (the update
    /// interaction) carries a resource of that type with that id ("the request body SHALL be a Resource
    /// with an id element that has an identical value to the [id] in the URL"), and a POST to `Type`
    /// carries a resource of that type.
    private mutating func checkRequest(of entry: UnsafePointer<Element>, bundleType: String?, entry position: Int) {
        guard bundleType == "transaction" || bundleType == "batch",
              let request = entry.withChild(named: "request", { ($0.childValue("method"), $0.childValue("url")) }),
              let method = request.0, method == "PUT" || method == "POST", let url = request.1,
              let type = entry.withChild(named: "resource", { $0.pointee.resourceType }) ?? nil,
              !URIRules.containsByte(url, UInt8(ascii: "?"))
        else { return }
        var path: String { Self.entryPath(position) }  // made only when reported
        // The URL's segments, empty ones left out; a URL without a slash is its one segment (most POSTs).
        let parts = URIRules.containsByte(url, UInt8(ascii: "/"))
            ? url.utf8.split(separator: UInt8(ascii: "/")).map { String(decoding: $0, as: UTF8.self) }
            : url.isEmpty ? [] : [url]
        switch method {
        case "PUT" where parts.count == 2 && metadata.isResourceType(parts[0]):
            let id = entry.withChild(named: "resource") { $0.childValue("id") } ?? nil
            if parts[0] != type {
                report(.error, .invalid, "the request PUT \(url) holds a \(type), not a \(parts[0])", below: path + ".request.url")
            } else if id != parts[1] {
                report(.error, .invalid, "the request PUT \(url) must hold the resource with id '\(parts[1])' (it has "
                    + (id.map { "'\($0)'" } ?? "none") + ")", below: path + ".resource.id")
            }
        case "POST" where parts.count == 1 && metadata.isResourceType(parts[0]) && parts[0] != type:
            report(.error, .invalid, "the request POST \(url) holds a \(type), not a \(parts[0])", below: path + ".request.url")
        default:
            break
        }
    }

    /// A searchset entry agrees with its `search.mode` (R4 search.html, "Search Result Bundles"): a
    /// `match` is a resource of the server, so it has an id, and of a type the search was for (when the
    /// `self` link says which); an `outcome` is an OperationOutcome about the search.
    private mutating func checkSearchResult(_ entry: Element, searchedTypes: Set<String>?, path: String) {
        guard let mode = entry.child(named: "search")?.valueInPlace(of: "mode"), let resource = entry.child(named: "resource"),
              let type = resource.resourceType
        else { return }
        switch mode {
        case "match":
            if resource.valueInPlace(of: "id") == nil {
                report(.error, .required, "a search result (search.mode match) must have an id", below: path + ".resource")
            }
            if let searchedTypes, !searchedTypes.contains(type) {
                report(.error, .invalid, "a \(type) is not a match for a search of " + searchedTypes.sorted().joined(separator: ", ")
                    + " (search.mode match)", below: path + ".resource")
            }
        case "outcome" where type != "OperationOutcome":
            report(.error, .invalid, "an entry with search.mode outcome must hold an OperationOutcome, not a \(type)", below: path + ".resource")
        default:
            break
        }
    }

    /// The resource types a searchset's `self` link searched: those of its `_type` parameter, else the
    /// type its path ends with (`Patient?name=x`, `Patient/_search`); nil when it does not say.
    static func searchedTypes(of bundle: Element, metadata: FHIRMetadata) -> Set<String>? {
        guard let url = bundle.children(named: "link").first(where: { $0.valueInPlace(of: "relation") == "self" })?.valueInPlace(of: "url")
        else { return nil }
        let question = url.firstIndex(of: "?")
        if let question {
            for parameter in url[url.index(after: question)...].split(separator: "&") {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0] == "_type" else { continue }
                let value = pair[1].removingPercentEncoding ?? String(pair[1])
                let types = Set(value.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) })
                return types.allSatisfy(metadata.isResourceType) && !types.isEmpty ? types : nil
            }
        }
        var segments = url[..<(question ?? url.endIndex)].split(separator: "/")
        if segments.last == "_search" { segments.removeLast() }
        guard let last = segments.last, metadata.isResourceType(String(last)) else { return nil }
        return [String(last)]
    }
}
