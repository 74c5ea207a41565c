import FHIRCore

/// The R4 rules for contained resources that structural validation checks itself
/// (https://hl7.org/fhir/R4/references.html#contained):
///
/// - dom-3: a contained resource is referred to from elsewhere in the resource (`#id` in a Reference,
///   or as a canonical, uri or url value), or refers to its container (`#`);
/// - a contained resource has an id (it is only reachable through it).
///
/// dom-2 (no nested contained resources) is checked as a contained resource is visited; dom-4 and
/// dom-5 (no version, last updated or security labels of their own) are evaluated as invariants.
///
/// dom-3 is checked here rather than by its FHIRPath expression, which applies `as(canonical)` to all
/// the descendants at once: an error under FHIRPath N1's rules for a collection of more than one.
extension ValidationWalk {
    /// The dom-3 text as R4 states it.
    static let dom3 = "dom-3: If the resource is contained in another resource, it SHALL be referred to from elsewhere in the "
        + "resource or SHALL refer to the containing resource"

    mutating func checkContained(of resource: Element, type: String) {
        let contained = resource.children(named: "contained")
        guard !contained.isEmpty else { return }
        var referenced: Set<String> = []
        var refersToContainer = Array(repeating: false, count: contained.count)
        // The container's own elements, then each contained resource (whose reference to `#` counts for it).
        var container = LocalReferences()
        container.collect(resource, context: type, metadata: metadata, skippingContained: true)
        referenced.formUnion(container.ids)
        for (index, item) in contained.enumerated() {
            guard let containedType = item.resourceType else { continue }
            var scan = LocalReferences()
            scan.collect(item, context: containedType, metadata: metadata)
            referenced.formUnion(scan.ids)
            refersToContainer[index] = scan.refersToContainer
        }
        // A contained item that is no resource at all is reported as such, and judged no further.
        for (index, item) in contained.enumerated() where item.resourceType != nil {
            let suffix = ".contained[\(index)]"
            guard let id = item.childValue("id"), !id.isEmpty else {
                report(.error, .required, "a contained resource must have an id, by which its container refers to it", below: suffix)
                continue
            }
            if referenced.contains(id) || refersToContainer[index] { continue }
            report(.error, .invariant, Self.dom3 + " (nothing refers to '#\(id)')", below: suffix)
        }
    }
}

extension ValidationWalk {
    /// The narrative's internal references (`<a href="#id">`, `<img src="#id">`) point at something the
    /// resource holds: a contained resource, an element `id` of the resource, or an `id` inside the
    /// narrative itself (https://hl7.org/fhir/R4/narrative.html#id).
    mutating func checkNarrativeReferences(of resource: Element) {
        guard let div = resource.child(named: "text")?.childValue("div") else { return }
        let links = XHTMLChecker.internalLinks(in: div)
        let targets = links.targets.map { String($0.dropFirst()) }.filter { !$0.isEmpty }
        guard !targets.isEmpty else { return }
        var known = Set(links.ids)
        func collectIDs(_ element: Element) {
            for child in element.children {
                if child.name == "id", child.children.isEmpty, let value = child.value { known.insert(value) }
                collectIDs(child)
            }
        }
        collectIDs(resource)
        for target in Set(targets).sorted() where !known.contains(target) {
            report(.error, .structure, "the narrative refers to '#\(target)', which is no contained resource and no id in the resource",
                   below: ".text.div")
        }
    }
}

/// The local references (`#id`, and `#` for the container) found in an element tree: the `reference`
/// of every Reference, and every canonical, uri and url value, as dom-3 reads them.
private struct LocalReferences {
    var ids: Set<String> = []
    var refersToContainer = false

    /// Collects from `element`'s descendants; with `skippingContained`, not from its own contained
    /// resources (a caller that scans each of them apart).
    mutating func collect(_ element: Element, context: String, metadata: FHIRMetadata, skippingContained: Bool = false) {
        guard let children = metadata.children(of: context) else { return }
        for child in element.children {
            guard let resolved = children[child.name] else { continue }
            if resolved.type == "Resource" {
                if !skippingContained || resolved.info.name != "contained", let type = child.resourceType {
                    collect(child, context: type, metadata: metadata)
                }
                continue
            }
            // A primitive's own extensions count too (`valueset-system` on a ValueSet's include.system).
            if resolved.primitive != nil, !child.children.isEmpty {
                collect(child, context: resolved.type, metadata: metadata)
            }
            switch resolved.primitive {
            case .canonical?, .uri?, .url?:
                note(child.value)
            case .xhtml?:
                // A narrative refers to a contained resource by a link or an image: href="#id", src="#id".
                for target in XHTMLChecker.internalLinks(in: child.value ?? "").targets { note(target) }
            case nil:
                if resolved.type == "Reference" { note(child.childValue("reference")) }
                collect(child, context: resolved.type, metadata: metadata)
            default:
                break
            }
        }
    }

    private mutating func note(_ value: String?) {
        guard let value, value.hasPrefix("#") else { return }
        if value == "#" { refersToContainer = true } else { ids.insert(String(value.dropFirst())) }
    }
}
