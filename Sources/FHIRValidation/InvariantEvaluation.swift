import FHIRCore
import FHIRPath
/// Evaluates the R4 invariants of ``InvariantCatalog`` during the validation walk: on each resource (its
/// type's invariants and its base types') and on each element (its type's and those defined at its
/// definition path), with the element as `%context` and focus, the enclosing resource as `%resource`
/// and, for a contained resource, its container as `%rootResource`.
///
/// An invariant is met only when it evaluates to `true`, as FHIR and the reference validator have it: `false`
/// or an empty result (a comparison FHIRPath cannot decide, such as dates of different precision) is an
/// issue of its severity, code `invariant`, diagnostics `key: human`. The few R4 expressions that are empty
/// on valid data are evaluated corrected (``InvariantCatalog/corrections``). Invariants that read `%resource` or `%rootResource` (`ref-1`) are
/// left out when a datatype is validated on its own, outside any resource. An expression the engine fails to evaluate is reported as
/// information (never an error): a gap of the engine must not fail a resource.
extension ValidationWalk {
    mutating func checkResourceInvariants(_ resource: Element, type: String) {
        guard let invariants else { return }
        let list = invariants.invariants(forType: type)
        if list.isEmpty { return }
        evaluate(list, element: resource, context: type) { FHIRPathElementNode(resource: resource) }
    }

    /// Evaluates the invariants of `resolved` on the element at `pointer` (read in place in the tree being
    /// walked; copied out only when it has invariants to meet).
    mutating func checkElementInvariants(_ pointer: UnsafePointer<Element>, as resolved: ResolvedChild) {
        guard let invariants, invariants.mayHaveInvariants(for: resolved) else { return }
        let list = invariants.invariants(for: resolved)
        if list.isEmpty { return }
        let element = pointer.pointee
        evaluate(list, element: element, context: resolved.type) {
            FHIRPathElementNode(
                element: element, typeName: resolved.isBackbone ? (resolved.info.types.first ?? "BackboneElement") : resolved.type,
                context: resolved.type)
        }
    }

    /// Evaluates `list` on `element` (in the metadata context `context`): an invariant with a shortcut
    /// (``InvariantShortcut``) is told from the element's children where that is certain; one made of
    /// existence tests the data decides is told without the evaluator
    /// (``FHIRPathExpression/quickTruth(on:context:metadata:trustsSingleCardinality:)``); the others are
    /// evaluated on the FHIRPath view of the element, made once, when the first of them needs it.
    private mutating func evaluate(_ list: [InvariantCatalog.Compiled], element: Element, context: String,
                                   node makeNode: () -> FHIRPathElementNode) {
        var node: FHIRPathElementNode?
        // By position, read in the list: `for compiled in list` copied each invariant out (its
        // expression, shortcut and texts retained and released), most of them told by the shortcut.
        for index in list.indices where !list[index].needsResource || currentResource != nil {
            if let truth = list[index].shortcut?.truth(on: element) {
                if !truth { reportUnmet(list[index].invariant) }
                continue
            }
            let compiled = list[index]
            if let truth = compiled.expression.quickTruth(on: element, context: context, metadata: metadata,
                                                          trustsSingleCardinality: fhirPathEnvironment.trustsSingleCardinality) {
                if !truth { reportUnmet(compiled.invariant) }
                continue
            }
            let focus = node ?? makeNode()
            node = focus
            let result: [FHIRPathValue]
            do {
                result = try compiled.expression.evaluate(
                    context: [.element(focus)], resource: currentResource, rootResource: currentRootResource,
                    environment: fhirPathEnvironment)
            } catch {
                report(.information, .invariant,
                       "\(compiled.invariant.key) could not be evaluated: \(error.message)")
                continue
            }
            if result.count == 1, case .boolean(true) = result[0] { continue }
            reportUnmet(compiled.invariant)
        }
    }

    private mutating func reportUnmet(_ invariant: Invariant) {
        report(invariant.severity == .error ? .error : .warning, .invariant, "\(invariant.key): \(invariant.human)")
    }
}
