import Foundation

extension FHIRFormat {
    /// A narrative `div` read from JSON that is not one well-formed XHTML element (`&nbsp;`, unbalanced
    /// tags, an undeclared prefix...): the XML writer embeds the div as it is, so converting it would give
    /// XML that does not parse. ``convert(_:to:pretty:)`` throws this instead of writing anything.
    public struct NarrativeNotWellFormedError: Error, CustomStringConvertible, Sendable {
        /// The FHIRPath location of the div from its resource's root: `Patient.text.div`,
        /// `Bundle.entry[2].resource.text.div`.
        public let location: String
        /// The NDJSON line of the resource, for NDJSON input.
        public let line: Int?
        /// What is wrong with the XHTML.
        public let reason: String

        /// The message without the location.
        public var message: String {
            "the narrative is not well-formed XHTML, so it cannot be written as XML: \(reason)"
        }
    }
}

/// Finds the first narrative `div` of a tree that the XML writer could not embed, deciding what is a
/// narrative as the writer does (the metadata's xhtml elements; where the metadata does not know the
/// context, a childless `div` whose text starts with `<`). The location is built only on failure.
enum NarrativeXMLCheck {
    /// The first problem in `resource` as an error carrying its location, or `nil` when every narrative
    /// can be written as XML.
    static func firstProblem(in resource: Element, line: Int? = nil, metadata: FHIRMetadata = .r4) -> FHIRFormat.NarrativeNotWellFormedError? {
        let type = resource.resourceType ?? resource.name
        guard let found = search(resource, context: type, metadata: metadata) else { return nil }
        let location = ([type] + found.segments.reversed()).joined(separator: ".")
        return FHIRFormat.NarrativeNotWellFormedError(location: location, line: line, reason: found.reason)
    }

    /// Path segments from the problem up to `element` (innermost first), and the reason.
    private static func search(_ element: Element, context: String?, metadata: FHIRMetadata) -> (segments: [String], reason: String)? {
        for (index, child) in element.children.enumerated() {
            let resolved = context.flatMap { metadata.child(child.name, of: $0) }
            if child.resourceType == nil, isXHTML(child, resolved: resolved) {
                if let value = child.value, let reason = XHTMLChecker.xmlProblem(in: value) {
                    return ([segment(of: index, in: element, resolved: resolved)], reason)
                }
                continue
            }
            guard !child.children.isEmpty else { continue }
            if var found = search(child, context: child.resourceType ?? resolved?.type, metadata: metadata) {
                found.segments.append(segment(of: index, in: element, resolved: resolved))
                return found
            }
        }
        return nil
    }

    private static func isXHTML(_ element: Element, resolved: ResolvedChild?) -> Bool {
        if let resolved { return resolved.info.representation == .xhtml }
        return element.name == "div" && element.children.isEmpty && (element.value?.hasPrefix("<") ?? false)
    }

    /// `name`, or `name[k]` when the element repeats (k counting the siblings of the same name before it).
    private static func segment(of index: Int, in parent: Element, resolved: ResolvedChild?) -> String {
        let name = parent.children[index].name
        let sameName = parent.children.lazy.filter { $0.name == name }
        guard resolved?.info.isArray ?? (sameName.count > 1) else { return name }
        let position = parent.children[..<index].lazy.filter { $0.name == name }.count
        return "\(name)[\(position)]"
    }
}
