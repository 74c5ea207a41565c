import FHIRCore

/// What a plan reads from the evaluation's inputs besides its focus (``FHIRPathPlan/needsInputs``):
/// paths that start at `%resource`, `%rootResource` or `%context`, the resources `resolve()` finds
/// through the environment's resolver, and the criteria `is` and `startsWith()`, which need a path's
/// single item. Whatever the tree walk would decide otherwise (a contained reference, a Bundle to
/// search, a variable the environment redefines, several items, an item of the wrong type) abandons
/// the plan.
extension FHIRPathPlanRun {
    /// ``collect(_:from:limit:mode:)`` of a path that starts at a variable: `%context` (the
    /// evaluation's context), `%resource` or `%rootResource` (the resource, unlocated, as the tree
    /// walk makes it; the context when there is none). A variable the environment defines is the
    /// tree walk's to read.
    func collectFromStart(_ path: FHIRPathPlan.Path, limit: Int, mode: FHIRPathPlanCollector.Mode)
        throws(FHIRPathPlanAbandoned) -> FHIRPathPlanCollector {
        guard let inputs = treeWalk else { throw FHIRPathPlanAbandoned() }
        let resource: Element?
        switch path.start {
        case .focus, .context:
            if variables?["context"] != nil { throw FHIRPathPlanAbandoned() }
            resource = nil
        case .resource:
            if variables?["resource"] != nil { throw FHIRPathPlanAbandoned() }
            resource = inputs.resource
        case .rootResource:
            if variables?["rootResource"] != nil { throw FHIRPathPlanAbandoned() }
            resource = inputs.rootResource
        }
        var fromFocus = path
        fromFocus.start = .focus
        guard let resource else { return try collect(fromFocus, from: inputs.context, limit: limit, mode: mode) }
        let type = FHIRPathPlanType(resourceType: resource.resourceType)
        return try withUnsafePointer(to: type) { (type) throws(FHIRPathPlanAbandoned) -> FHIRPathPlanCollector in
            try withUnsafePointer(to: resource) { (element) throws(FHIRPathPlanAbandoned) -> FHIRPathPlanCollector in
                try collect(fromFocus, element: element, type: type, origin: .unlocated, limit: limit, mode: mode)
            }
        }
    }

    /// `resolve()` of one element: the resource its reference (its value, else its `reference`)
    /// names, found by the environment's resolver as the tree walk finds it, walked on from there
    /// (located at its type when paths are tracked, as the tree walk locates it). A contained
    /// reference, or a Bundle to search, is the tree walk's.
    func resolve(_ element: UnsafePointer<Element>, then steps: [FHIRPathPlan.Step], from index: Int,
                         into collector: inout FHIRPathPlanCollector) throws(FHIRPathPlanAbandoned) -> Bool {
        guard let inputs = treeWalk else { throw FHIRPathPlanAbandoned() }
        guard let reference = element.pointee.value ?? element.pointee.childValue("reference") else { return true }
        if reference.hasPrefix("#") { throw FHIRPathPlanAbandoned() }
        if let root = inputs.rootResource, root.resourceType == "Bundle" { throw FHIRPathPlanAbandoned() }
        guard let resolver = inputs.environment.resolveReference, let found = resolver(reference, inputs.resource) else { return true }
        let location = tracksPaths ? found.resourceType.map(ElementLocation.init(root:)) : nil
        let origin = Origin(focusLocation: location.map(Unmanaged.passUnretained), atFocus: true, frame: nil)
        let type = FHIRPathPlanType(resourceType: found.resourceType)
        return try withExtendedLifetime(location) { () throws(FHIRPathPlanAbandoned) -> Bool in
            try withUnsafePointer(to: type) { (type) throws(FHIRPathPlanAbandoned) -> Bool in
                try withUnsafePointer(to: found) { (found) throws(FHIRPathPlanAbandoned) -> Bool in
                    try walk(steps, from: index, element: found, type: type, origin: origin, into: &collector)
                }
            }
        }
    }

    /// `is`: the single item's type is `specifier` or derives from it; nothing for no item. (The type
    /// is known: compiled only so.) Several items are the tree walk's error.
    func isType(_ items: FHIRPathPlanCollector, _ specifier: FHIRPathTypeSpecifier) throws(FHIRPathPlanAbandoned) -> Bool? {
        let values = items.values
        guard values.count <= 1 else { throw FHIRPathPlanAbandoned() }
        guard let item = values.first else { return nil }
        return FHIRPathTypes.matches(item, specifier, exact: false, metadata: metadata)
    }

    /// `startsWith(prefix)` of the single item, which must be a string; nothing for no item. Several
    /// items, or one of another type, are the tree walk's errors.
    func startsWith(_ items: FHIRPathPlanCollector, _ prefix: String) throws(FHIRPathPlanAbandoned) -> Bool? {
        let values = items.values
        guard values.count <= 1 else { throw FHIRPathPlanAbandoned() }
        guard let item = values.first else { return nil }
        guard case .string(let text)? = item.primitive else { throw FHIRPathPlanAbandoned() }
        return text.hasPrefix(prefix)
    }
}
