import CareModel
import FHIR
import Foundation

/// The stable identity of a source resource (``ResourceKey``, in CareModel): its type and id (the id it
/// has, or one derived from its identifier or fullUrl when it has none), the same whether it came as JSON
/// or XML.
extension ResourceKey {
    /// The key of `resource`: its `id`; else its first identifier (`system|value`, made id-safe); else
    /// its `fullUrl` (`urn:uuid:...`); nil when it has none of them.
    public static func of(_ resource: Element, fullUrl: String?) -> ResourceKey? {
        guard let type = resource.resourceType else { return nil }
        if let id = resource.childValue("id"), !id.isEmpty { return ResourceKey(type: type, id: id) }
        if let identifier = resource.children(named: "identifier").first, let value = identifier.childValue("value") {
            return ResourceKey(type: type, id: "identifier-" + safe((identifier.childValue("system").map { $0 + "|" } ?? "") + value))
        }
        if let fullUrl, !fullUrl.isEmpty {
            let last = fullUrl.split(separator: ":").last.map(String.init) ?? fullUrl
            return ResourceKey(type: type, id: safe(last))
        }
        return nil
    }

    /// `text` with every character outside FHIR's id alphabet replaced by `-`, hashed when too long.
    static func safe(_ text: String) -> String {
        // Byte by byte: every character outside [A-Za-z0-9.-] (a multi-byte one included) becomes one "-".
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."):
                bytes.append(byte)
            case 0x80...0xBF: continue  // a continuation byte: its character has its "-" already
            default: bytes.append(UInt8(ascii: "-"))
            }
        }
        let mapped = String(decoding: bytes, as: UTF8.self)
        return bytes.count <= 64 ? mapped : String(mapped.prefix(40)) + "-" + String(ContentHash.of(text).prefix(16))
    }
}

/// Every resource of an import that references can point at, found by every form a reference takes:
/// `Type/id` (relative, or absolute with any base, or with `/_history/n`), `fullUrl`, `urn:uuid:` and
/// `urn:oid:` full URLs, and conditional references by identifier (`Practitioner?identifier=system|value`).
/// Lookups are dictionary reads: resolving is linear in the number of references, never a scan.
///
/// Build it with ``Builder``, then share it (read-only) with every mapping of the run.
// Unchecked: built by one thread (`Builder.build()`), then only read; its stored properties are never
// mutated after `init` (the compiler cannot see that a frozen dictionary of element trees is safe to share).
public final class ResourceIndex: @unchecked Sendable {
    /// Collects resources; `build()` freezes them into an index.
    public struct Builder {
        private var byKey: [ResourceKey: Held] = [:]
        private var byFullURL: [String: ResourceKey] = [:]
        private var byIdentifier: [String: [ResourceKey]] = [:]
        private var byCanonical: [String: ResourceKey] = [:]
        private var order: [ResourceKey] = []
        private var files = SourceFiles()

        public init() {}

        /// How the index keeps a resource until it is asked for.
        public enum Keeping {
            /// Its tree: nothing to redo, the most memory.
            case tree
            /// Its compact JSON, read again when asked for: a fifth of the memory of the tree.
            case json
            /// Nothing but where its text lies in a file (an NDJSON line), read again from there.
            case location(file: String, bytes: Range<Int>)
        }

        /// Adds `resource` (from a Bundle entry with `fullUrl`, or alone) and returns its key; nil when it
        /// has no id, identifier or fullUrl to be known by. Input too large to hold as trees keeps its
        /// resources as JSON or as their place in the file (`keeping`).
        @discardableResult
        public mutating func add(_ resource: Element, fullUrl: String?, keeping: Keeping = .tree) -> ResourceKey? {
            guard let key = ResourceKey.of(resource, fullUrl: fullUrl) else { return nil }
            let held: Held
            switch keeping {
            case .tree: held = .tree(resource)
            case .json: held = .json(FHIRJSON.write(resource))
            case .location(let file, let bytes): held = .located(file: files.number(of: file), bytes: bytes)
            }
            if byKey.updateValue(held, forKey: key) == nil { order.append(key) }
            if let fullUrl, !fullUrl.isEmpty { byFullURL[fullUrl] = key }
            for identifier in resource.children(named: "identifier") {
                guard let value = identifier.childValue("value") else { continue }
                let system = identifier.childValue("system") ?? ""
                byIdentifier["\(key.type)|\(system)|\(value)", default: []].append(key)
                byIdentifier["\(key.type)||\(value)", default: []].append(key)
            }
            // A canonical resource (a Questionnaire...) is also named by its `url` and `url|version`.
            if key.type == "Questionnaire", let url = resource.childValue("url"), !url.isEmpty {
                byCanonical[url] = key
                if let version = resource.childValue("version"), !version.isEmpty { byCanonical[url + "|" + version] = key }
            }
            return key
        }

        /// Makes `fullUrl` name `key` without keeping the resource (one mapped later, streamed).
        public mutating func alias(_ fullUrl: String?, to key: ResourceKey) {
            if let fullUrl, !fullUrl.isEmpty { byFullURL[fullUrl] = key }
        }

        public var count: Int { byKey.count }

        public func build() -> ResourceIndex {
            ResourceIndex(byKey: byKey, byFullURL: byFullURL, byIdentifier: byIdentifier, byCanonical: byCanonical, order: order, files: files)
        }
    }

    /// A resource as the index keeps it (see ``Builder/Keeping``).
    enum Held {
        case tree(Element)
        case json(Data)
        /// The bytes of `file` (a number in ``SourceFiles``) it was read from.
        case located(file: Int, bytes: Range<Int>)
    }

    private let byKey: [ResourceKey: Held]
    private let files: SourceFiles
    private let byFullURL: [String: ResourceKey]
    private let byIdentifier: [String: [ResourceKey]]
    /// Questionnaires of the input by `url` and by `url|version` (FHIRPath's `resolve()` of a canonical).
    private let byCanonical: [String: ResourceKey]
    /// The keys in the order the resources were added.
    public let order: [ResourceKey]
    private let byType: [String: [ResourceKey]]

    private init(
        byKey: [ResourceKey: Held], byFullURL: [String: ResourceKey], byIdentifier: [String: [ResourceKey]], byCanonical: [String: ResourceKey],
        order: [ResourceKey], files: SourceFiles
    ) {
        self.byCanonical = byCanonical
        self.byKey = byKey
        self.files = files
        self.byFullURL = byFullURL
        self.byIdentifier = byIdentifier
        self.order = order
        self.byType = Dictionary(grouping: order, by: \.type)
    }

    public var count: Int { byKey.count }

    /// The resource of `key`; nil when the input has none, or when one kept as its place in a file
    /// cannot be read there again (the file changed during the import: see ``reread(_:)``).
    public func resource(_ key: ResourceKey) -> Element? { try? reread(key) }

    /// The resource of `key`, read again when it is not kept as a tree; nil when the input has none.
    ///
    /// - Throws: why a resource kept as its place in a file cannot be read there again.
    public func reread(_ key: ResourceKey) throws -> Element? {
        switch byKey[key] {
        case nil: return nil
        case .tree(let element): return element
        case .json(let data): return try FHIRJSON.read(data)
        case .located(let file, let bytes): return try FHIRJSON.read(try files.read(bytes, of: file))
        }
    }

    /// The keys of the resources of `type`, in input order.
    public func keys(ofType type: String) -> [ResourceKey] { byType[type] ?? [] }

    /// What `reference` names.
    public enum Resolution: Equatable {
        /// A resource of the input.
        case found(ResourceKey)
        /// Not in the input, but its `Type/id` is known: it may be in the store from an earlier import.
        case outside(ResourceKey)
        /// Names nothing this import can find (a `urn:uuid:` or conditional reference with no match, a
        /// conditional reference matching several, or text that is no reference).
        case unresolved(String)
    }

    /// Resolves `reference` (a `Reference.reference` value, or a canonical `url` or `url|version` of a
    /// Questionnaire of the input).
    public func resolve(_ reference: String) -> Resolution {
        if let key = byFullURL[reference] { return .found(key) }
        if let key = byCanonical[reference] { return .found(key) }
        if reference.hasPrefix("urn:") { return .unresolved("no entry has fullUrl \(reference)") }
        if let question = reference.firstIndex(of: "?") {
            return resolveConditional(type: String(reference[..<question]), query: String(reference[reference.index(after: question)...]))
        }
        var parts = reference.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.count >= 4, parts[parts.count - 2] == "_history" { parts.removeLast(2) }
        guard parts.count >= 2, FHIRMetadata.r4.isResourceType(parts[parts.count - 2]), !parts[parts.count - 1].isEmpty else {
            return .unresolved("'\(reference)' is not a reference to a resource")
        }
        let key = ResourceKey(type: parts[parts.count - 2], id: parts[parts.count - 1])
        return byKey[key] != nil ? .found(key) : .outside(key)
    }

    private func resolveConditional(type: String, query: String) -> Resolution {
        guard FHIRMetadata.r4.isResourceType(type) else { return .unresolved("'\(type)' is not a resource type") }
        var matches: Set<ResourceKey>?
        for parameter in query.split(separator: "&") {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            guard pair.count == 2 else { return .unresolved("conditional reference '\(type)?\(query)': '\(parameter)' is not name=value") }
            let found: [ResourceKey]
            switch pair[0] {
            case "identifier":
                found = pair[1].contains("|") ? byIdentifier["\(type)|\(pair[1])"] ?? [] : byIdentifier["\(type)||\(pair[1])"] ?? []
            case "_id":
                found = byKey[ResourceKey(type: type, id: pair[1])] != nil ? [ResourceKey(type: type, id: pair[1])] : []
            default:
                return .unresolved("conditional reference '\(type)?\(query)': only identifier and _id can be searched in the input")
            }
            matches = matches.map { $0.intersection(found) } ?? Set(found)
        }
        guard let matches, !matches.isEmpty else { return .unresolved("no \(type) in the input matches \(type)?\(query)") }
        guard matches.count == 1, let only = matches.first else {
            return .unresolved("\(matches.count) resources match \(type)?\(query): a conditional reference must match one")
        }
        return .found(only)
    }

    /// The resource `reference` names in the input, for FHIRPath's `resolve()`.
    public func element(for reference: String) -> Element? {
        if case .found(let key) = resolve(reference) { return resource(key) }
        return nil
    }
}
