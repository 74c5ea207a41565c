import FHIRCore

extension FHIRPathNavigator {
    /// ``forEachChild(of:named:step:_:)`` without element nodes, for a compiled plan's walk: `body` is
    /// handed a pointer to each selected child where it sits in its parent's array, a pointer to its
    /// type name and metadata context (what the node ``typed(_:in:position:)`` makes would carry), and
    /// its place among its siblings. Both pointers are valid during the call to `body` only.
    ///
    /// Why: making a ``FHIRPathElementNode`` copies the element (a retain of its name, value, resource
    /// type and children) and its type strings, then releases them all; a compiled plan passes most
    /// elements on to its next step only, and makes a node of what it yields. Nothing here is retained
    /// per step either: `step` is unretained (the plan holds it), the resolution it caches is read
    /// unretained (`step` holds it), the defined type is a pointer into the resolution, and the parent's
    /// children are read through a pointer taken once (the parent is borrowed for the whole walk, so its
    /// array stays alive and unchanged). Each retain and release is an atomic operation, and a step
    /// made about a dozen of them. Selections are not observed here: plans run without selection
    /// observers.
    /// Always inlined: called with a closure that captures a plan's run, which is then copied into a
    /// closure context at every call if the call stays a call.
    @discardableResult @inline(__always)
    func forEachChildInPlace<Failure: Error>(
        of element: UnsafePointer<Element>, type: UnsafePointer<FHIRPathPlanType>, named name: String,
        step: Unmanaged<StepResolutions>,
        _ body: (UnsafePointer<Element>, UnsafePointer<FHIRPathPlanType>, ChildPlace) throws(Failure) -> Bool
    ) throws(Failure) -> Bool {
        let nameLength = name.utf8.count
        // Every child of this name has the same definition: looked up once. A resolution this step's
        // cache does not keep (past its capacity) is held here until the walk of the children ends.
        var held: StepResolutions.Resolution?
        let facts: StepResolutions.WalkFacts
        if let first = step._withUnsafeGuaranteedRef({ $0.firstResolutionUnretained(inContextOf: type) }) {
            facts = first._withUnsafeGuaranteedRef { $0.walkFacts }
        } else if let context = type.pointee.context {
            let resolution = step._withUnsafeGuaranteedRef { $0.resolution(in: context) { resolve(name, in: context) } }
            held = resolution
            facts = resolution.walkFacts
        } else {
            facts = .unknown
        }
        let parentIsResource = element.pointee.isResource

        /// `body` with the type of a child named `name`: a resource is typed by its `resourceType`, a
        /// child the metadata does not define by its name.
        func typedBody(_ child: UnsafePointer<Element>, _ place: ChildPlace) throws(Failure) -> Bool {
            if let resourceType = child.pointee.resourceType {
                let childType = FHIRPathPlanType.allocate(FHIRPathPlanType(resourceType: resourceType))
                defer { FHIRPathPlanType.release(childType, count: 1) }
                return try body(child, childType, place)
            }
            if let definedType = facts.definedType { return try body(child, definedType, place) }
            let fallback = fallbackType(named: child.pointee.name, parentIsResource: parentIsResource, parentTypeName: type.pointee.typeName)
            let childType = FHIRPathPlanType.allocate(FHIRPathPlanType(typeName: fallback, context: nil))
            defer { FHIRPathPlanType.release(childType, count: 1) }
            return try body(child, childType, place)
        }

        // The loop in a closure: written straight in this function, its recursion through `body` kept
        // the optimizer from inlining the function into the walk, whose closure then copied the run.
        return try withExtendedLifetime(held) { () throws(Failure) -> Bool in
            // Taken once, without the retain and release `withUnsafeBufferPointer` makes around its
            // body when the body is the walk: the parent is borrowed for the whole walk (see above).
            let children = element.pointee.children.withUnsafeBufferPointer { $0 }
            guard let first = children.baseAddress else { return true }
            let count = children.count
            // As in forEachChild: with trusted cardinality, a max-1 element is taken at its first
            // occurrence.
            if stopsAtFirstSingle, facts.isSingle {
                for index in 0..<count where (first + index).pointee.name.hasSameBytes(as: name) {
                    return try typedBody(first + index, ChildPlace(position: 0, isArray: false))
                }
                return true
            }
            var position = 0
            for index in 0..<count {
                let child = first + index
                let childLength = child.pointee.name.utf8.count
                if childLength == nameLength && child.pointee.name == name {
                    let place = ChildPlace(position: position, isArray: facts.isArray)
                    position += 1
                    guard try typedBody(child, place) else { return false }
                } else if let choices = facts.choices {
                    // Where the metadata lists the choice's instance names, a longer name is looked up among them.
                    guard childLength > nameLength,
                          let choiceType = choices._withUnsafeGuaranteedRef({ $0.type(of: child.pointee.name, length: childLength) }) else { continue }
                    guard try body(child, choiceType, ChildPlace(position: 0, isArray: false)) else { return false }
                } else if facts.mayBeChoice, childLength > nameLength, child.pointee.name.hasBytePrefix(name),
                          let suffixStart = child.pointee.name.utf8.dropFirst(nameLength).first,
                          suffixStart >= UInt8(ascii: "A") && suffixStart <= UInt8(ascii: "Z"),
                          let choice = choiceType(named: child.pointee.name, parentContext: type.pointee.context, choiceName: name) {
                    let childType = FHIRPathPlanType.allocate(FHIRPathPlanType(typeName: choice.typeName, context: choice.context))
                    defer { FHIRPathPlanType.release(childType, count: 1) }
                    guard try body(child, childType, ChildPlace(position: 0, isArray: false)) else { return false }
                }
            }
            return true
        }
    }
}
