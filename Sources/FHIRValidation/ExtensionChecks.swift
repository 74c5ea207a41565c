import FHIRCore

/// Extensions checked against the R4 core extension definitions
/// (https://hl7.org/fhir/R4/extensibility.html): a core extension is used only where its context
/// allows, with a value of one of its types (or none, for a complex extension), and a complex
/// extension's sub-extensions are those it defines, as many as it allows. An extension whose URL is
/// not a core one cannot be checked: a warning says so, as the reference validator does by default.
///
/// A use outside the declared contexts and a sub-extension the definition does not name are warnings:
/// the official R4 examples themselves do both (Bundle-types.json puts structuredefinition-fhir-type on
/// ElementDefinition.type and structuredefinition-normative-version on ElementDefinition;
/// Bundle-hla-1.json names a sub-extension `uri` where the definition has `url`), and CareGate must not
/// call the official examples invalid. Docs/validator-disagreements.md says what this costs.
extension ValidationWalk {
    /// Checks `element` (a child `extension` or `modifierExtension` of the element being visited,
    /// whose context is `holder`), with its path already on the stack.
    mutating func checkExtension(_ element: Element, holder: String) {
        guard let url = element.valueInPlace(of: "url"), !url.isEmpty else { return }
        // A relative url names a sub-extension: its complex extension checks it.
        guard ReferenceFormat.hasScheme(url) else {
            if !holder.hasSameBytes(as: "Extension") {
                report(.error, .value, "the extension url '\(url)' must be an absolute URL", below: ".url")
            }
            return
        }
        guard let definition = CoreExtensions.r4.byURL[url] else {
            if url.hasPrefix(CoreExtensions.corePrefix) {
                report(.error, .structure, "the extension \(url) is not an R4 core extension, so it is not allowed here")
            } else {
                report(.warning, .informational, "the extension \(url) is not known here: its use and content are not checked")
            }
            return
        }
        let places = holderPlaces(holder)
        if !definition.contexts.contains(where: { places.contains($0) }) {
            report(.warning, .structure, "the extension \(url) is not allowed to be used here "
                + "(this element is \(places.sorted().joined(separator: ", ")); it is allowed on \(definition.contexts.joined(separator: ", ")))")
        }
        checkValue(of: element, url: url, value: definition.value, at: "")
        guard definition.isComplex else { return }
        var counts = [Int](repeating: 0, count: definition.subExtensions.count)
        for (position, child) in element.children(named: "extension").enumerated() {
            guard let childURL = child.valueInPlace(of: "url") else { continue }
            guard let index = definition.subExtensions.firstIndex(where: { $0.url == childURL }) else {
                if !ReferenceFormat.hasScheme(childURL) {
                    report(.warning, .structure, "the sub-extension url '\(childURL)' is not defined by the extension \(url)",
                           below: ".extension[\(position)]")
                }
                continue
            }
            counts[index] += 1
            let sub = definition.subExtensions[index]
            if !sub.isComplex { checkValue(of: child, url: childURL, value: sub.value, at: ".extension[\(position)]") }
        }
        for (index, sub) in definition.subExtensions.enumerated() {
            if counts[index] < sub.min {
                report(.error, .required, "the extension \(url) requires the sub-extension '\(sub.url)' (at least \(sub.min)), but it is missing")
            } else if let max = sub.max, counts[index] > max {
                report(.error, .structure, "the extension \(url) allows at most \(max) sub-extension(s) '\(sub.url)', but found \(counts[index])")
            }
        }
    }

    /// value[x] of an extension against its definition: present when required, absent from a complex
    /// extension, of an allowed type.
    private mutating func checkValue(of element: Element, url: String, value: CoreExtensions.Value, at suffix: String) {
        guard let found = element.children.first(where: { $0.name.hasPrefix("value") && $0.name.count > 5 }) else {
            if value.min > 0 { report(.error, .required, "the extension \(url) must have a value", below: suffix) }
            return
        }
        if value.max == 0 {
            report(.error, .structure, "the extension \(url) is complex: it has sub-extensions, not a value ('\(found.name)')",
                   below: suffix + "." + found.name)
            return
        }
        let typeSuffix = found.name.dropFirst(5)
        if !value.types.contains(where: { FHIRMetadata.choiceSuffix(of: $0) == typeSuffix }) {
            report(.error, .structure, "the extension \(url) takes a value of type \(value.types.joined(separator: ", ")), not \(typeSuffix)",
                   below: suffix + "." + found.name)
        }
    }

    /// The names the element being visited goes by in extension contexts: its context (type name or
    /// backbone path) and that type's bases, its definition path, its path from its resource, and
    /// `Element` (any element); `Resource` for a resource.
    private func holderPlaces(_ holder: String) -> Set<String> {
        var places: Set<String> = [holder, "Element"]
        var type: String? = holder
        while let name = type, let definition = metadata.type(named: name) {
            places.insert(name)
            type = definition.baseType
        }
        if let path = currentDefinitionPath { places.insert(path) }
        if let path = pathFromResource { places.insert(path) }
        return places
    }
}
