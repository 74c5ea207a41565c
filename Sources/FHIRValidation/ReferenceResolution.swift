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

    /// The entries and their indexes: a class, so that handing the scope around is a retain.
    final class Index {
        let entries: [Entry]
        /// Entry positions by fullUrl, and (for Parameters) the ids of each type: built once, so that
        /// resolving a reference is a lookup rather than a scan of every entry (which made a Bundle's
        /// validation quadratic in its size).
        let positionsByFullUrl: FullUrlTable
        let idsByType: [String: Set<String>]

        init(entries: [Entry], indexingIDs: Bool) {
            self.entries = entries
            var ids: [String: Set<String>] = [:]
            if indexingIDs {
                for entry in entries { ids[entry.type, default: []].insert(entry.id ?? "") }
            }
            positionsByFullUrl = FullUrlTable(fullUrls: entries.map(\.fullUrl))
            idsByType = ids
        }
    }

    /// A text as a hash key, compared and hashed by its bytes (``Swift/String/byteHash``): fullUrls, whose
    /// `urn:uuid:` form is 45 bytes that SipHash reads slowly, and bdl-7's fullUrl-and-version texts.
    struct TextKey: Hashable {
        let text: String
        init(_ text: String) { self.text = text }
        static func == (a: TextKey, b: TextKey) -> Bool { a.text.hasSameBytes(as: b.text) }
        func hash(into hasher: inout Hasher) { hasher.combine(text.byteHash) }
    }

    let kind: Kind
    let index: Index
    var entries: [Entry] { index.entries }
    var idsByType: [String: Set<String>] { index.idsByType }
    var currentEntry: Int?
    /// What resolving the scope's references found, reported when the whole scope has been walked
    /// (after the scope's other issues, in the order the references occur).
    var resolutionIssues: [ValidationIssue] = []

    init(kind: Kind, entries: [Entry]) {
        self.kind = kind
        if case .parameters = kind {
            index = Index(entries: entries, indexingIDs: true)
        } else {
            index = Index(entries: entries, indexingIDs: false)
        }
    }

    /// The entries whose fullUrl is `fullUrl` and, when `version` is given, whose resource has that
    /// versionId or none: how many there are, and the type of the first. Counted in place rather than
    /// collected, since a Bundle resolves every reference it holds this way.
    func matches(fullUrl: String, version: String?) -> (count: Int, firstType: String?) {
        var count = 0
        var firstType: String?
        let entries = index.entries
        index.positionsByFullUrl.forEachEntry(withFullUrl: fullUrl, fullUrlAt: { entries[$0].fullUrl ?? "" }) { position in
            if let version, let versionId = entries[position].versionId, versionId != version { return true }
            count += 1
            if firstType == nil { firstType = entries[position].type }
            return true
        }
        return (count, firstType)
    }

    /// The scope of a Bundle: its entries with their fullUrl, in order.
    static func bundle(_ bundle: Element) -> ReferenceScope {
        var entries: [Entry] = []
        // Entries and their resources read in place (a copy of each was four retains and releases).
        bundle.children.withUnsafeBufferPointer { children in
            guard let first = children.baseAddress else { return }
            for index in children.indices where children[index].name.hasSameBytes(as: "entry") {
                let entry = first + index
                let resource = entry.withChild(named: "resource") { resource in
                    (type: resource.pointee.resourceType, id: resource.childValue("id"),
                     versionId: resource.withChild(named: "meta") { $0.childValue("versionId") } ?? nil)
                }
                entries.append(Entry(
                    fullUrl: entry.childValue("fullUrl"), type: resource?.type ?? "", id: resource?.id ?? nil,
                    versionId: resource?.versionId ?? nil))
            }
        }
        return ReferenceScope(kind: .bundle(type: bundle.valueInPlace(of: "type")), entries: entries)
    }

    /// `entry.resource.meta.versionId` of a Bundle entry, read in place.
    static func versionID(ofEntry entry: UnsafePointer<Element>) -> String? {
        entry.withChild(named: "resource") { resource in resource.withChild(named: "meta") { $0.childValue("versionId") } ?? nil } ?? nil
    }

    /// The scope of a Parameters: the resources of its parameters and their parts, at any depth.
    static func parameters(_ parameters: Element) -> ReferenceScope {
        var entries: [Entry] = []
        func collect(_ parameter: Element) {
            if let resource = parameter.child(named: "resource"), let type = resource.resourceType {
                entries.append(Entry(fullUrl: nil, type: type, id: resource.valueInPlace(of: "id"), versionId: nil))
            }
            parameter.children(named: "part").forEach(collect)
        }
        parameters.children(named: "parameter").forEach(collect)
        return ReferenceScope(kind: .parameters, entries: entries)
    }

    /// The base URL and type of a RESTful fullUrl (`http://server/fhir/Patient/1` -> `http://server/fhir`).
    static func restfulBase(of fullUrl: String, metadata: FHIRMetadata) -> (base: String, type: String, id: String)? {
        guard !fullUrl.hasBytePrefix("urn:") else { return nil }
        let parts = fullUrl.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 3 else { return nil }
        let type = String(parts[parts.count - 2]), id = String(parts[parts.count - 1])
        guard metadata.isResourceType(type), !id.isEmpty else { return nil }
        return (parts.dropLast(2).joined(separator: "/"), type, id)
    }
}

extension ValidationWalk {
    /// Resolves a reference of the Reference being visited against the innermost Bundle or Parameters
    /// being walked (whose entries are indexed before their content is walked), holding what it finds
    /// until the scope ends.
    mutating func resolveInScope(_ reference: String, format: ReferenceFormat) {
        guard let last = scopes.indices.last else { return }
        let scope = scopes[last]
        let problem: (ValidationIssue.Severity, ValidationIssue.Code, String)?
        switch scope.kind {
        case .bundle(let bundleType):
            problem = Self.resolveInBundle(reference, format: format, scope: scope, isDocument: bundleType == "document", metadata: metadata)
        case .parameters:
            guard case .relative(let type, let id, _) = format, let ids = scope.idsByType[type], !ids.contains(id) else { return }
            problem = (.error, .structure, "unable to resolve the reference '\(reference)' among the resources of the Parameters")
        }
        if let (severity, code, message) = problem {
            scopes[last].resolutionIssues.append(issue(severity, code, message, at: currentPath + ".reference"))
        }
    }

    /// What is wrong with `reference`, found in the current entry of a Bundle, by the Bundle rules; nil when nothing is.
    private static func resolveInBundle(_ reference: String, format: ReferenceFormat, scope: ReferenceScope, isDocument: Bool,
                                        metadata: FHIRMetadata) -> (ValidationIssue.Severity, ValidationIssue.Code, String)? {
        var target: String?
        var expectedType: String?
        var version: String?
        switch format {
        case .fragment, .conditional:
            return nil
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
            if let index = scope.currentEntry, scope.entries.indices.contains(index), let fullUrl = scope.entries[index].fullUrl,
               let base = ReferenceScope.restfulBase(of: fullUrl, metadata: metadata)?.base {
                target = base + "/" + type + "/" + id
            }
        }
        let candidates = target.map { scope.matches(fullUrl: $0, version: version) } ?? (count: 0, firstType: nil)
        if candidates.count > 1 {
            return (.error, .structure, "multiple entries of the bundle match the reference '\(reference)'")
        }
        if let matchType = candidates.firstType {
            if let expectedType, matchType != expectedType {
                return (.error, .structure, "the reference '\(reference)' resolves to a \(matchType), not a \(expectedType)")
            }
            return nil
        }
        // No match by the Bundle rules. An entry named urn:uuid:<id> holding another type is a mix-up.
        if case .relative(let type, let id, _) = format,
           let otherType = scope.matches(fullUrl: "urn:uuid:" + id, version: nil).firstType, otherType != type {
            return (.error, .structure, "the reference '\(reference)' matches the entry urn:uuid:\(id), which holds a \(otherType)")
        }
        switch format {
        case .relative, .uuid:
            if isDocument {
                return (.error, .notFound, "can't find '\(reference)' in the document bundle")
            } else if case .uuid = format {
                return (.warning, .notFound, "the urn:uuid: reference '\(reference)' is not in the bundle")
            }
            return nil
        default:
            return nil
        }
    }
}
