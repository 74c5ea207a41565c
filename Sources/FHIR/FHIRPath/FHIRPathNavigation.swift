/// Steps from element nodes to their children by FHIRPath name, typing each child from the metadata.
///
/// FHIRPath names a choice element without its type suffix: `Observation.value` selects the instance
/// child `valueQuantity` (typed `Quantity`). Resources held in `contained` or `Bundle.entry.resource`
/// are typed by their own `resourceType`.
struct FHIRPathNavigator: Sendable {
    let metadata: FHIRMetadata

    /// Appends the children of `node` that FHIRPath `name` selects.
    func children(of node: FHIRPathElementNode, named name: String, into output: inout [FHIRPathValue]) {
        let nameCount = name.utf8.count
        for child in node.element.children {
            let childName = child.name
            if childName == name {
                output.append(.element(typed(child, in: node)))
            } else if childName.utf8.count > nameCount, childName.hasPrefix(name),
                      let suffixStart = childName.unicodeScalars.dropFirst(nameCount).first,
                      suffixStart.properties.isUppercase,
                      let typedChild = choiceChild(child, of: node, choiceName: name) {
                output.append(.element(typedChild))
            }
        }
    }

    /// Every child of `node`, typed.
    func allChildren(of node: FHIRPathElementNode, into output: inout [FHIRPathValue]) {
        for child in node.element.children {
            output.append(.element(typed(child, in: node)))
        }
    }

    /// The child typed by the metadata, or by the shape of the data when the metadata does not know it.
    func typed(_ child: Element, in parent: FHIRPathElementNode) -> FHIRPathElementNode {
        if child.resourceType != nil { return FHIRPathElementNode(resource: child) }
        if let context = parent.context, let resolved = metadata.child(child.name, of: context) {
            return node(child, resolved: resolved)
        }
        return FHIRPathElementNode(element: child, typeName: fallbackType(of: child, parent: parent), context: nil)
    }

    private func node(_ child: Element, resolved: ResolvedChild) -> FHIRPathElementNode {
        let context = resolved.type
        if context.contains(".") {
            return FHIRPathElementNode(element: child, typeName: resolved.info.types.first ?? "BackboneElement", context: context)
        }
        return FHIRPathElementNode(element: child, typeName: context, context: context)
    }

    private func choiceChild(_ child: Element, of parent: FHIRPathElementNode, choiceName: String) -> FHIRPathElementNode? {
        if let context = parent.context, let resolved = metadata.child(child.name, of: context) {
            guard resolved.info.isChoice, resolved.info.name == choiceName else { return nil }
            return node(child, resolved: resolved)
        }
        // No metadata for this context: read the suffix as the type (`valueString` is a string).
        guard parent.context == nil || metadata.resourceTypes.isEmpty else { return nil }
        var suffix = String(child.name.dropFirst(choiceName.count))
        let lowered = suffix.prefix(1).lowercased() + suffix.dropFirst()
        if FHIRPathTypes.isPrimitive(lowered) { suffix = lowered }
        return FHIRPathElementNode(element: child, typeName: suffix, context: suffix)
    }

    private func fallbackType(of child: Element, parent: FHIRPathElementNode) -> String? {
        switch child.name {
        case "extension", "modifierExtension": return "Extension"
        case "id": return parent.element.isResource ? "id" : "string"
        case "url" where parent.typeName == "Extension": return "uri"
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
