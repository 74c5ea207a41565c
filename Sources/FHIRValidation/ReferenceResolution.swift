import FHIRCore
import FHIRPath
/// References between the resources of one Bundle or Parameters, resolved by the R4 Bundle rules
/// (https://hl7.org/fhir/R4/bundle.html#references): an absolute reference or `urn:` matches an entry's
/// `fullUrl`; a relative `Type/id` is made absolute against the base of the referring entry's RESTful
/// `fullUrl`; `/_history/vid` picks the entry with that `meta.versionId`.
///
/// Reported: a reference matching several entries, or an entry of another type; in a document Bundle,
/// a relative or `urn:` reference that matches nothing (a document must be complete); in Parameters,
/// a relative reference to a type the Parameters holds, but not with that id.
struct ReferenceScope {
    enum Kind { case bundle(type: String?), parameters }

    /// One resource of the scope.
    struct Entry {
        let fullUrl: String?
        let type: String
        let id: String?
        let versionId: String?
    }

    /// A reference found inside the scope, with the entry it was found in.
    struct Found {
        let reference: String
        /// Where it was found: the walk's steps to the Reference, made into text only when reported.
        let location: [(name: String, index: Int)]
        let entryIndex: Int?
    }

    let kind: Kind
    let entries: [Entry]
    /// Entry positions by fullUrl, and the ids of each type: built once, so that resolving a
    /// reference is a lookup rather than a scan of every entry (which made a Bundle's validation
    /// quadratic in its size).
    let positionsByFullUrl: [String: [Int]]
    let idsByType: [String: Set<String>]
    var currentEntry: Int?
    var references: [Found] = []

    init(kind: Kind, entries: [Entry]) {
        self.kind = kind
        self.entries = entries
        var positions: [String: [Int]] = [:]
        var ids: [String: Set<String>] = [:]
        for (position, entry) in entries.enumerated() {
            if let fullUrl = entry.fullUrl { positions[fullUrl, default: []].append(position) }
            ids[entry.type, default: []].insert(entry.id ?? "")
        }
        positionsByFullUrl = positions
        idsByType = ids
    }

    /// The entries whose fullUrl is `fullUrl`, in order.
    func entries(withFullUrl fullUrl: String) -> [Entry] {
        (positionsByFullUrl[fullUrl] ?? []).map { entries[$0] }
    }

    /// The scope of a Bundle: its entries with their fullUrl, in order.
    static func bundle(_ bundle: Element) -> ReferenceScope {
        let entries = bundle.children(named: "entry").map { entry in
            let resource = entry.child(named: "resource")
            return Entry(
                fullUrl: entry.childValue("fullUrl"), type: resource?.resourceType ?? "",
                id: resource?.childValue("id"), versionId: resource?.child(named: "meta")?.childValue("versionId"))
        }
        return ReferenceScope(kind: .bundle(type: bundle.childValue("type")), entries: entries)
    }

    /// The scope of a Parameters: the resources of its parameters and their parts, at any depth.
    static func parameters(_ parameters: Element) -> ReferenceScope {
        var entries: [Entry] = []
        func collect(_ parameter: Element) {
            if let resource = parameter.child(named: "resource"), let type = resource.resourceType {
                entries.append(Entry(fullUrl: nil, type: type, id: resource.childValue("id"), versionId: nil))
            }
            parameter.children(named: "part").forEach(collect)
        }
        parameters.children(named: "parameter").forEach(collect)
        return ReferenceScope(kind: .parameters, entries: entries)
    }

    /// The base URL and type of a RESTful fullUrl (`http://server/fhir/Patient/1` -> `http://server/fhir`).
    static func restfulBase(of fullUrl: String, metadata: FHIRMetadata) -> (base: String, type: String, id: String)? {
        guard !fullUrl.hasPrefix("urn:") else { return nil }
        let parts = fullUrl.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 3 else { return nil }
        let type = String(parts[parts.count - 2]), id = String(parts[parts.count - 1])
        guard metadata.isResourceType(type), !id.isEmpty else { return nil }
        return (parts.dropLast(2).joined(separator: "/"), type, id)
    }
}

extension ValidationWalk {
    /// Checks the references collected in a Bundle or Parameters scope once all of it has been walked.
    mutating func resolveReferences(in scope: ReferenceScope) {
        for found in scope.references {
            guard case .success(let format) = ReferenceFormat.parse(found.reference, metadata: metadata) else { continue }
            switch scope.kind {
            case .bundle(let bundleType):
                resolveInBundle(found, format: format, scope: scope, isDocument: bundleType == "document")
            case .parameters:
                guard case .relative(let type, let id, _) = format else { continue }
                if let ids = scope.idsByType[type], !ids.contains(id) {
                    report(.error, .structure, "unable to resolve the reference '\(found.reference)' among the resources of the Parameters",
                           at: path(of: found))
                }
            }
        }
    }

    private mutating func resolveInBundle(_ found: ReferenceScope.Found, format: ReferenceFormat, scope: ReferenceScope, isDocument: Bool) {
        var target: String?
        var expectedType: String?
        var version: String?
        switch format {
        case .fragment, .conditional:
            return
        case .uuid(let urn), .oid(let urn):
            target = urn
        case .absolute(let url):
            if let range = url.range(of: "/_history/") {
                target = String(url[..<range.lowerBound])
                version = String(url[range.upperBound...])
            } else {
                target = url
            }
            expectedType = target.flatMap { ReferenceScope.restfulBase(of: $0, metadata: metadata)?.type }
        case .relative(let type, let id, let vid):
            expectedType = type
            version = vid
            if let index = found.entryIndex, scope.entries.indices.contains(index), let fullUrl = scope.entries[index].fullUrl,
               let base = ReferenceScope.restfulBase(of: fullUrl, metadata: metadata)?.base {
                target = base + "/" + type + "/" + id
            }
        }
        var candidates = target.map(scope.entries(withFullUrl:)) ?? []
        if let version {
            candidates = candidates.filter { $0.versionId == nil || $0.versionId == version }
        }
        if candidates.count > 1 {
            report(.error, .structure, "multiple entries of the bundle match the reference '\(found.reference)'", at: path(of: found))
            return
        }
        if let match = candidates.first {
            if let expectedType, match.type != expectedType {
                report(.error, .structure, "the reference '\(found.reference)' resolves to a \(match.type), not a \(expectedType)",
                       at: path(of: found))
            }
            return
        }
        // No match by the Bundle rules. An entry named urn:uuid:<id> holding another type is a mix-up.
        if case .relative(let type, let id, _) = format,
           let other = scope.entries(withFullUrl: "urn:uuid:" + id).first, other.type != type {
            report(.error, .structure, "the reference '\(found.reference)' matches the entry urn:uuid:\(id), which holds a \(other.type)",
                   at: path(of: found))
            return
        }
        switch format {
        case .relative, .uuid:
            if isDocument {
                report(.error, .notFound, "can't find '\(found.reference)' in the document bundle", at: path(of: found))
            } else if case .uuid = format {
                report(.warning, .notFound, "the urn:uuid: reference '\(found.reference)' is not in the bundle", at: path(of: found))
            }
        default:
            break
        }
    }
}
