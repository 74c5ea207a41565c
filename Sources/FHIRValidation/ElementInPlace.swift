import FHIRCore

/// Reading a child of an element where it sits in its parent's children. ``Element/childValue(_:)`` and
/// ``Element/child(named:)`` copy the child out to read it (a retain and a release of each of its name,
/// value, resource type and children), and validation asks for a child's value on most References,
/// Quantities and Bundle entries it visits.
extension Element {
    /// The value of the first child named `name`, nil when there is none or it has no value.
    @inline(__always)
    func valueInPlace(of name: String) -> String? {
        // The buffer is the element's own, alive and unchanged for the whole call.
        children.withUnsafeBufferPointer { children in
            for index in children.indices where children[index].name.hasSameBytes(as: name) { return children[index].value }
            return nil
        }
    }

    /// The value of the first child named `inner` of the first child named `outer` (`text`, `div`).
    @inline(__always)
    func valueInPlace(of outer: String, _ inner: String) -> String? {
        withChild(named: outer) { $0.pointee.valueInPlace(of: inner) } ?? nil
    }

    /// `body` on the first child named `name`, read in place (the pointer is valid only during `body`);
    /// nil when there is no such child.
    @inline(__always)
    func withChild<Result>(named name: String, _ body: (UnsafePointer<Element>) -> Result) -> Result? {
        children.withUnsafeBufferPointer { children in
            guard let first = children.baseAddress else { return nil }
            for index in children.indices where children[index].name.hasSameBytes(as: name) { return body(first + index) }
            return nil
        }
    }
}

/// Reading an element of the tree being walked through its address. `pointer.pointee.valueInPlace(of:)`
/// copied the whole element out of the tree before reading it (Swift cannot tell that the call leaves
/// the memory alone): four retains and four releases, on every Reference, Quantity, Coding and Bundle
/// entry. These read only the element's children array where it sits (one retain and release of it).
/// The tree is the walk's caller's, alive and unchanged for the whole walk.
extension UnsafePointer where Pointee == Element {
    /// The value of the first child named `name`, nil when there is none or it has no value.
    @inline(__always)
    func childValue(_ name: String) -> String? {
        pointee.children.withUnsafeBufferPointer { children in
            for index in children.indices where children[index].name.hasSameBytes(as: name) { return children[index].value }
            return nil
        }
    }

    /// Whether the element has a child named `name`.
    @inline(__always)
    func hasChild(named name: String) -> Bool {
        pointee.children.withUnsafeBufferPointer { children in
            children.indices.contains { children[$0].name.hasSameBytes(as: name) }
        }
    }

    /// `body` on the first child named `name`, read in place (the pointer is valid only during `body`);
    /// nil when there is no such child.
    @inline(__always)
    func withChild<Result>(named name: String, _ body: (UnsafePointer<Element>) -> Result) -> Result? {
        pointee.children.withUnsafeBufferPointer { children in
            guard let first = children.baseAddress else { return nil }
            for index in children.indices where children[index].name.hasSameBytes(as: name) { return body(first + index) }
            return nil
        }
    }
}
