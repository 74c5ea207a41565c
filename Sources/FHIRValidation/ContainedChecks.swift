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

    mutating func checkContained(of resource: Element, references: LocalReferences) {
        // A contained item that is no resource at all is reported as such, and judged no further.
        var index = -1
        for item in resource.children where item.name.hasSameBytes(as: "contained") {
            index += 1
            guard item.resourceType != nil else { continue }
            let suffix = ".contained[\(index)]"
            guard let id = item.valueInPlace(of: "id"), !id.isEmpty else {
                report(.error, .required, "a contained resource must have an id, by which its container refers to it", below: suffix)
                continue
            }
            if references.ids.contains(id) || references.refersToContainer[index] { continue }
            report(.error, .invariant, Self.dom3 + " (nothing refers to '#\(id)')", below: suffix)
        }
    }

    /// Marks the contained resource being entered as the one whose references to `#` are noted, when it
    /// is contained directly by the resource collecting (not by a resource it contains); true when it is.
    mutating func enterContained() -> Bool {
        guard let last = localReferences.indices.last, stepCount == localReferences[last].start + 1,
              let step = lastStep, step.index >= 0, step.index < localReferences[last].refersToContainer.count
        else { return false }
        localReferences[last].currentContained = step.index
        return true
    }

    /// Notes a local reference (`#id`, or `#` for the container) found in a Reference, a canonical, uri
    /// or url value, or a narrative link, for the innermost resource that contains resources.
    mutating func noteLocalReference(_ value: String) {
        guard let last = localReferences.indices.last, value.utf8.first == UInt8(ascii: "#") else { return }
        if value.utf8.count == 1 {
            if let index = localReferences[last].currentContained { localReferences[last].refersToContainer[index] = true }
        } else {
            localReferences[last].ids.insert(String(value.dropFirst()))
        }
    }
}

extension ValidationWalk {
    /// The narrative's internal references (`<a href="#id">`, `<img src="#id">`) point at something the
    /// resource holds: a contained resource, an element `id` of the resource, or an `id` inside the
    /// narrative itself (https://hl7.org/fhir/R4/narrative.html#id).
    mutating func checkNarrativeReferences(of resource: Element) {
        guard let div = resource.valueInPlace(of: "text", "div") else { return }
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

/// The local references (`#id`, and `#` for the container) found in a resource that contains others:
/// the `reference` of every Reference, and every canonical, uri and url value, and the narrative's links,
/// as dom-3 reads them; a contained resource's `#` counts for that contained resource.
struct LocalReferences {
    /// Where the resource's steps start in the walk: its directly contained resources are one step below.
    let start: Int
    var ids: Set<String> = []
    /// Per contained resource, by its position among them: it refers to its container (`#`).
    var refersToContainer: [Bool]
    /// The contained resource being walked, by position; nil in the container's own elements.
    var currentContained: Int?

    init(start: Int, containedCount: Int) {
        self.start = start
        refersToContainer = Array(repeating: false, count: containedCount)
    }
}
