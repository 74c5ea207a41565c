import CareModel
import FHIR
import Foundation
import Mapping

/// The first stage of an import: the resources of the input, one at a time, in order.
///
/// Files, folders, standard input and bytes are read through ``FHIRInput`` (parsed on worker threads
/// ahead of the import), Bundles unpacked into their entries (with their fullUrl), entries whose
/// `request.method` is DELETE turned into deletions, and resources that cannot be known (no id, an id
/// outside FHIR's rule, not an R4 type, invalid under `--strict`) reported as failures. Only a counting
/// read (pass 1) reports; the second read of large input (pass 2) only hands resources on.
struct InputReader {
    let ledger: ImportLedger
    /// Set under `--strict`: a resource with structural errors fails instead of being mapped.
    let validator: StructureValidator?
    /// The deletions the input asks for (Bundle entries with `request.method` DELETE), in input order.
    private(set) var deletions: [(key: ResourceKey, origin: ImportOrigin)] = []

    init(ledger: ImportLedger, strict: Bool) {
        self.ledger = ledger
        validator = strict ? StructureValidator(options: ValidationOptions(strict: true)) : nil
    }

    /// A large Bundle found unreadable after pass 1 took its first entries.
    struct UnreadableStreamedBundle: Error {
        let source: FHIRInput.Source
        let error: FHIRSyntaxError
    }

    /// The total size of the sources' files, or nil when one is not a file: standard input cannot be read
    /// twice, and bytes in memory are held anyway, so their resources are held too.
    static func size(of sources: [FHIRInput.Source]) -> Int? {
        var total = 0
        for source in sources {
            guard case .file(let path) = source else { return nil }
            total += (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        }
        return total
    }

    /// How the index keeps a resource: held input as trees; larger input its NDJSON lines as their
    /// place in the file, other resources (in Bundles) as JSON.
    static func keeping(_ origin: ImportOrigin, holds: Bool) -> ResourceIndex.Builder.Keeping {
        if holds { return .tree }
        guard let bytes = origin.bytes else { return .json }
        return .location(file: origin.file, bytes: bytes)
    }

    /// Calls `body` with every resource of `sources` (Bundle entries unpacked, with their fullUrl), in
    /// order, parsed on worker threads ahead of it, and reports what cannot be read.
    ///
    /// - Throws: ``UnreadableStreamedBundle`` when, while counting, a large Bundle whose first entries
    ///   were handed to `body` turns out unreadable.
    mutating func read(_ sources: [FHIRInput.Source], countingResources: Bool = true, _ body: (Element, String?, ImportOrigin) -> Void) throws {
        var streamed: FHIRInput.Source?
        try FHIRInput.forEachEntry(of: sources, streamingBundles: true) { event in
            switch event {
            case .entry(let source, let entry, _):
                switch entry.result {
                case .failure(let error):
                    if countingResources, streamed == source { throw UnreadableStreamedBundle(source: source, error: error) }
                    if countingResources { ledger.failUnreadable(source, error) }
                case .success(let resource):
                    unpack(resource, origin: ImportOrigin(file: source.description, line: entry.line, bytes: entry.bytes), counting: countingResources, body)
                }
            case .bundleEntries(let source, let entries, let first):
                streamed = source
                let file = source.description
                for (offset, entry) in entries.enumerated() {
                    unpackEntry(entry, origin: ImportOrigin(file: file, entry: first + offset), counting: countingResources, body)
                }
            case .unreadable(let source, let error):
                if countingResources { ledger.fail(type: "(unreadable)", origin: ImportOrigin(file: source.description), key: nil, path: nil, "cannot read the file: \(error)") }
            }
        }
    }

    private mutating func unpack(_ resource: Element, origin: ImportOrigin, counting: Bool, _ body: (Element, String?, ImportOrigin) -> Void) {
        let type = resource.resourceType ?? ""
        guard FHIRMetadata.r4.isResourceType(type) else {
            if counting { ledger.fail(type: type.isEmpty ? "(unknown)" : type, origin: origin, key: nil, path: nil, "'\(type)' is not an R4 resource type") }
            return
        }
        guard type == "Bundle" else {
            accept(resource, fullUrl: nil, origin: origin, counting: counting, body)
            return
        }
        for (position, entry) in resource.children(named: "entry").enumerated() {
            unpackEntry(entry, origin: ImportOrigin(file: origin.file, line: origin.line, entry: position), counting: counting, body)
        }
    }

    /// What makes `id` no FHIR resource id (`[A-Za-z0-9\-\.]{1,64}`), or nil.
    private static func idProblem(_ id: String) -> String? {
        PrimitiveValidator.problem(with: id, kind: nil, as: .id)
    }

    /// One entry of a Bundle: its resource, or the deletion its request asks for.
    private mutating func unpackEntry(_ entry: Element, origin: ImportOrigin, counting: Bool, _ body: (Element, String?, ImportOrigin) -> Void) {
        if let inner = entry.child(named: "resource") {
            accept(inner, fullUrl: entry.childValue("fullUrl"), origin: origin, counting: counting, body)
        } else if counting, let request = entry.child(named: "request"), request.childValue("method") == "DELETE",
                  let url = request.childValue("url") {
            let parts = url.split(separator: "?")[0].split(separator: "/").map(String.init)
            if parts.count >= 2, FHIRMetadata.r4.isResourceType(parts[parts.count - 2]) {
                if let problem = Self.idProblem(parts[parts.count - 1]) {
                    ledger.fail(type: "Bundle", origin: origin, key: nil, path: "Bundle.entry[\(origin.entry ?? 0)].request.url", "cannot delete '\(url)': invalid resource id: \(problem)")
                } else {
                    deletions.append((ResourceKey(type: parts[parts.count - 2], id: parts[parts.count - 1]), origin))
                }
            } else {
                ledger.fail(type: "Bundle", origin: origin, key: nil, path: "Bundle.entry[\(origin.entry ?? 0)].request.url", "cannot delete '\(url)': not Type/id")
            }
        }
    }

    private func accept(_ resource: Element, fullUrl: String?, origin: ImportOrigin, counting: Bool, _ body: (Element, String?, ImportOrigin) -> Void) {
        let type = resource.resourceType ?? ""
        if counting { ledger.readResource() }
        // An id outside FHIR's rule would be a CareKit id no URL or reference can name exactly (a '/', a
        // space, a letter Unicode writes two ways): refused in either pass, reported in the counting one.
        if let id = resource.childValue("id"), let problem = Self.idProblem(id) {
            if counting { ledger.fail(type: type, origin: origin, key: nil, path: "\(type).id", "invalid resource id: \(problem)") }
            return
        }
        if counting {
            guard ResourceKey.of(resource, fullUrl: fullUrl) != nil else {
                ledger.fail(type: type, origin: origin, key: nil, path: type, "the resource has no id, identifier or fullUrl to be known by")
                return
            }
        }
        if let validator {
            let issues = validator.validate(resource).errors
            if let first = issues.first {
                if counting { ledger.fail(type: type, origin: origin, key: ResourceKey.of(resource, fullUrl: fullUrl), path: first.expression, "invalid (--strict): \(first.diagnostics)") }
                return
            }
        }
        body(resource, fullUrl, origin)
    }
}
