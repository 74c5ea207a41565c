import FHIRCore

extension FHIRPathNavigator {
    /// ``forEachChild(of:named:step:_:)`` without element nodes: `body` is handed a pointer to each
    /// selected child where it sits in its parent's array, with its type name and metadata context (what
    /// the node ``typed(_:in:position:)`` makes would carry), and its place among its siblings. The
    /// pointer is valid during the call to `body` only.
    ///
    /// Why: making a ``FHIRPathElementNode`` copies the element (a retain of its name, value, resource
    /// type and children) and its type strings, then releases them all; a compiled plan passes most
    /// elements on to its next step only, and makes a node of what it yields. Selections are not
    /// observed here: plans run without selection observers.
    /// Always inlined: called with a closure that captures a plan's run, which is then copied into a
    /// closure context at every call if the call stays a call.
    @discardableResult @inline(__always)
    func forEachChildInPlace<Failure: Error>(
        of element: UnsafePointer<Element>, typeName: String?, context: String?, named name: String, step: StepResolutions?,
        _ body: (UnsafePointer<Element>, _ typeName: String?, _ context: String?, ChildPlace) throws(Failure) -> Bool
    ) throws(Failure) -> Bool {
        let nameLength = name.utf8.count
        // Every child of this name has the same definition: looked up once.
        let resolution: StepResolutions.Resolution?
        if let context {
            if let step {
                resolution = step.firstResolution(in: context) ?? step.resolution(in: context) { resolve(name, in: context) }
            } else {
                resolution = resolve(name, in: context)
            }
        } else {
            resolution = nil
        }
        let isDefined = resolution?.resolved != nil
        let parentIsResource = element.pointee.isResource
        // Read once per step: read from the resolution for each child, they were retained per child.
        let definedTypeName = resolution?.definedTypeName, definedContext = resolution?.definedContext

        /// `body` with the type of a child named `name`: a resource is typed by its `resourceType`, a
        /// child the metadata does not define by its name.
        func typedBody(_ child: UnsafePointer<Element>, _ place: ChildPlace) throws(Failure) -> Bool {
            if let resourceType = child.pointee.resourceType { return try body(child, resourceType, resourceType, place) }
            if isDefined { return try body(child, definedTypeName, definedContext, place) }
            return try body(child, fallbackType(named: child.pointee.name, parentIsResource: parentIsResource, parentTypeName: typeName), nil, place)
        }

        return try element.pointee.children.withUnsafeBufferPointer { (children) throws(Failure) -> Bool in
            guard let first = children.baseAddress else { return true }
            // As in forEachChild: with trusted cardinality, a max-1 element is taken at its first
            // occurrence.
            if stopsAtFirstSingle, let resolution, resolution.isSingle {
                for index in children.indices where children[index].name.hasSameBytes(as: name) {
                    return try typedBody(first + index, ChildPlace(position: 0, isArray: false))
                }
                return true
            }
            let mayBeChoice = resolution?.mayBeChoice ?? true
            // Where the metadata lists the choice's instance names, a longer name is looked up among them.
            let choices = resolution?.choices
            let isArray = resolution?.isArray ?? false
            var position = 0
            for index in children.indices {
                let childLength = children[index].name.utf8.count
                if childLength == nameLength && children[index].name == name {
                    let place = ChildPlace(position: position, isArray: isArray)
                    position += 1
                    guard try typedBody(first + index, place) else { return false }
                } else if let choices {
                    guard childLength > nameLength, let choice = choices.index(of: children[index].name, length: childLength) else { continue }
                    let type = choices.types[choice]
                    guard try body(first + index, type.typeName, type.context, ChildPlace(position: 0, isArray: false)) else { return false }
                } else if mayBeChoice, childLength > nameLength, children[index].name.hasBytePrefix(name),
                          let suffixStart = children[index].name.utf8.dropFirst(nameLength).first,
                          suffixStart >= UInt8(ascii: "A") && suffixStart <= UInt8(ascii: "Z"),
                          let type = choiceType(named: children[index].name, parentContext: context, choiceName: name) {
                    guard try body(first + index, type.typeName, type.context, ChildPlace(position: 0, isArray: false)) else { return false }
                }
            }
            return true
        }
    }
}
