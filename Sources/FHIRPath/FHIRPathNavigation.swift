import FHIRCore
import Foundation
/// Steps from element nodes to their children by FHIRPath name, typing each child from the metadata.
///
/// FHIRPath names a choice element without its type suffix: `Observation.value` selects the instance
/// child `valueQuantity` (typed `Quantity`). Resources held in `contained` or `Bundle.entry.resource`
/// are typed by their own `resourceType`.
struct FHIRPathNavigator: Sendable {
    let metadata: FHIRMetadata
    /// See ``FHIRPathEnvironment/trustsSingleCardinality``.
    var stopsAtFirstSingle = false
    /// See ``FHIRPathEnvironment/tracksPaths``.
    var tracksPaths = false
    /// See ``FHIRPathEnvironment/observeSelection``.
    var observer: (@Sendable (FHIRPathElementNode) -> Void)?

    /// Appends the children of `node` that FHIRPath `name` selects; `step`, the expression's node that
    /// names them, remembers what the name resolves to.
    func children(of node: FHIRPathElementNode, named name: String, step: StepResolutions? = nil, into output: inout [FHIRPathValue]) {
        forEachChild(of: node, named: name, step: step) { child in
            output.append(.element(child))
            return true
        }
    }

    /// Calls `body` with each child of `node` that FHIRPath `name` selects, in order, until it returns
    /// false; returns false when it did.
    @discardableResult
    func forEachChild<Failure: Error>(of node: FHIRPathElementNode, named name: String, step: StepResolutions? = nil,
                                      _ body: (FHIRPathElementNode) throws(Failure) -> Bool) throws(Failure) -> Bool {
        let children = node.element.children
        let nameLength = name.utf8.count
        // Every child of this name has the same definition: looked up once.
        let resolution = node.context.map { context in
            step?.firstResolution(in: context) ?? step?.resolution(in: context) { resolve(name, in: context) } ?? resolve(name, in: context)
        }
        let resolved = resolution?.resolved
        // An element with max 1 has one child of that name in valid data: when the caller trusts that,
        // stop at it rather than scan the rest (`%resource.type` on a Bundle would otherwise pass every
        // entry, for every entry).
        if stopsAtFirstSingle, let single = resolved, !single.info.isArray, !single.info.isChoice {
            for index in children.indices where children[index].name.hasSameBytes(as: name) {
                let child = typed(children[index], in: node, position: 0, resolved: single)
                observer?(child)
                return try body(child)
            }
            return true
        }
        // Index the array and read only the name first: copying whole elements that do not match
        // costs a retain per field, and this loop runs for every child of every step. Children named
        // `name` plus a type are not looked for where the metadata knows `name` as no choice element.
        // Names are compared by length first: most differ in it, and the standard comparison of two
        // strings that differ is a call into the runtime.
        let mayBeChoice = resolution?.mayBeChoice ?? true
        var position = 0
        for index in children.indices {
            let childName = children[index].name
            let childLength = childName.utf8.count
            if childLength == nameLength && childName == name {
                let child = typed(children[index], in: node, position: position, resolved: resolved)
                observer?(child)
                position += 1
                guard try body(child) else { return false }
            } else if mayBeChoice, childLength > nameLength, childName.hasBytePrefix(name),
                      let suffixStart = childName.utf8.dropFirst(nameLength).first,
                      suffixStart >= UInt8(ascii: "A") && suffixStart <= UInt8(ascii: "Z"),
                      let typedChild = choiceChild(children[index], of: node, choiceName: name, position: 0) {
                observer?(typedChild)
                guard try body(typedChild) else { return false }
            }
        }
        return true
    }

    /// Where a selected child sits under its parent: the `position`-th child of its name, in an element
    /// that repeats (`isArray`) or not; what ``ElementLocation`` records of it (``typed(_:in:position:)``
    /// passes the same to ``ElementLocation``).
    struct ChildPlace {
        let position: Int
        let isArray: Bool
    }

    /// What `name` resolves to in `context`.
    func resolve(_ name: String, in context: String) -> StepResolutions.Resolution {
        let resolved = metadata.child(name, of: context)
        // `name` is an element's own name: no choice unless it is one.
        let mayBeChoice = resolved.map { $0.info.isChoice } ?? metadata.element(named: name, of: context)?.isChoice ?? true
        return StepResolutions.Resolution(resolved: resolved, mayBeChoice: mayBeChoice,
                                          choices: mayBeChoice ? choiceTable(of: name, in: context) : nil)
    }

    /// Every instance name of `context` that ``choiceType(named:parentContext:choiceName:)`` types as the
    /// choice `name`, with that type; nil when the metadata does not know `context` (choices are then
    /// told from the suffix or not at all, as that function does).
    private func choiceTable(of name: String, in context: String) -> StepResolutions.ChoiceTable? {
        guard !metadata.resourceTypes.isEmpty, let children = metadata.children(of: context) else { return nil }
        let nameLength = name.utf8.count
        var entries: [(name: String, type: ChildType)] = []
        for (childName, resolved) in children where childName.utf8.count > nameLength && childName.hasBytePrefix(name) {
            guard let suffixStart = childName.utf8.dropFirst(nameLength).first,
                  suffixStart >= UInt8(ascii: "A") && suffixStart <= UInt8(ascii: "Z"),
                  resolved.info.isChoice, resolved.info.name == name else { continue }
            entries.append((childName, Self.type(of: resolved)))
        }
        return StepResolutions.ChoiceTable(entries.sorted { $0.name < $1.name })
    }

    /// Every child of `node`, typed.
    func allChildren(of node: FHIRPathElementNode, into output: inout [FHIRPathValue]) {
        guard tracksPaths else {
            for child in node.element.children { output.append(.element(typed(child, in: node))) }
            return
        }
        var positions: [String: Int] = [:]
        for child in node.element.children {
            let position = positions[child.name, default: 0]
            positions[child.name] = position + 1
            output.append(.element(typed(child, in: node, position: position)))
        }
    }

    /// The location of `child`, the `position`-th child of its name under `parent`: `parent.name`, with
    /// `[position]` when the element repeats (its text made only when asked for).
    private func childPath(_ child: Element, in parent: FHIRPathElementNode, position: Int?, isArray: Bool) -> ElementLocation? {
        guard tracksPaths, let parentLocation = parent.location else { return nil }
        return ElementLocation(child: child.name, of: parentLocation, position: position ?? 0, isArray: isArray, siblings: parent.element.children)
    }

    /// The child typed by the metadata, or by the shape of the data when the metadata does not know it.
    func typed(_ child: Element, in parent: FHIRPathElementNode, position: Int? = nil) -> FHIRPathElementNode {
        typed(child, in: parent, position: position, resolved: parent.context.flatMap { metadata.child(child.name, of: $0) })
    }

    /// ``typed(_:in:position:)`` with the child's definition in its parent's context already looked up.
    private func typed(_ child: Element, in parent: FHIRPathElementNode, position: Int?, resolved: ResolvedChild?) -> FHIRPathElementNode {
        let path = childPath(child, in: parent, position: position, isArray: resolved?.info.isArray ?? false)
        if child.resourceType != nil { return FHIRPathElementNode(resource: child, location: path) }
        if let resolved {
            return node(child, resolved: resolved, path: path)
        }
        return FHIRPathElementNode(element: child, typeName: fallbackType(of: child, parent: parent), context: nil, location: path)
    }

    private func node(_ child: Element, resolved: ResolvedChild, path: ElementLocation?) -> FHIRPathElementNode {
        let type = Self.type(of: resolved)
        return FHIRPathElementNode(element: child, typeName: type.typeName, context: type.context, location: path)
    }

    /// A child's FHIR type name (nil when unknown) and the metadata context of its own children.
    typealias ChildType = (typeName: String?, context: String?)

    /// The type of a child the metadata defines: a backbone element is typed `BackboneElement` (or the
    /// type the definition names), its context being its own path.
    static func type(of resolved: ResolvedChild) -> ChildType {
        let context = resolved.type
        if resolved.isBackbone { return (resolved.info.types.first ?? "BackboneElement", context) }
        return (context, context)
    }

    private func choiceChild(_ child: Element, of parent: FHIRPathElementNode, choiceName: String, position: Int) -> FHIRPathElementNode? {
        guard let type = choiceType(named: child.name, parentContext: parent.context, choiceName: choiceName) else { return nil }
        return FHIRPathElementNode(element: child, typeName: type.typeName, context: type.context,
                                   location: childPath(child, in: parent, position: position, isArray: false))
    }

    /// The type of the child `childName`, `choiceName` plus a type suffix, when it is the choice element
    /// `choiceName` of its parent's context; nil when it is another element.
    func choiceType(named childName: String, parentContext: String?, choiceName: String) -> ChildType? {
        if let context = parentContext, let resolved = metadata.child(childName, of: context) {
            guard resolved.info.isChoice, resolved.info.name == choiceName else { return nil }
            return Self.type(of: resolved)
        }
        // No metadata for this context: read the suffix as the type (`valueString` is a string).
        guard parentContext == nil || metadata.resourceTypes.isEmpty else { return nil }
        var suffix = String(childName.dropFirst(choiceName.count))
        let lowered = suffix.prefix(1).lowercased() + suffix.dropFirst()
        if FHIRPathTypes.isPrimitive(lowered) { suffix = lowered }
        return (suffix, suffix)
    }

    private func fallbackType(of child: Element, parent: FHIRPathElementNode) -> String? {
        fallbackType(named: child.name, parentIsResource: parent.element.isResource, parentTypeName: parent.typeName)
    }

    /// The type of a child the metadata does not define, told by its name.
    func fallbackType(named childName: String, parentIsResource: Bool, parentTypeName: String?) -> String? {
        switch childName {
        case "extension", "modifierExtension": return "Extension"
        case "id": return parentIsResource ? "id" : "string"
        case "url" where parentTypeName == "Extension": return "uri"
        default: return nil
        }
    }

    /// All descendants of the nodes, depth first (children before grandchildren of the next child).
    func descendants(of items: [FHIRPathValue]) -> [FHIRPathValue] {
        var output: [FHIRPathValue] = []
        var stack: [FHIRPathElementNode] = []
        for item in items.reversed() {
            if case .element(let node) = item { stack.append(node) }
        }
        // Iterative walk: deep trees cannot exhaust the stack.
        var pending: [(FHIRPathElementNode)] = stack
        while let node = pending.popLast() {
            var children: [FHIRPathValue] = []
            allChildren(of: node, into: &children)
            for child in children { output.append(child) }
            for child in children.reversed() {
                if case .element(let childNode) = child { pending.append(childNode) }
            }
        }
        return output
    }
}
